/**
 * Every page in every mode, in headless Chromium: each page of the user center and of the admin area (the list below,
 * checked against the GET routes the app registers) at desktop (1280×800) and phone (390×844) widths, in light and
 * dark, in English and Chinese (zh-CN): 8 modes. Both ways of choosing are exercised: at desktop width the theme and
 * the language are the account menu's remembered choice (the `ih_theme` cookie and the account's saved language),
 * made against an emulated prefers-color-scheme and an Accept-Language of the other kind, which they must beat; at
 * phone width no choice is saved and the page follows prefers-color-scheme and Accept-Language. Each page must then
 * be in the mode's language (`<html lang>`) and theme (the body's background), and:
 *   - layout: the document is no wider than the window; no element passes the right edge of the window, of the box
 *     that clips it, or of the bordered or filled box it sits in (a horizontally scrolling box, such as a table's
 *     wrapper, is a design and lets its content pass); no select, input, textarea or button clips its text (a select's
 *     shown option measured beside the room Chromium leaves for its arrow; a text field's placeholder, a date's or a
 *     number's format, a button's label: scrollWidth > clientWidth; a longer value a user typed or saved, such as a
 *     URL, scrolls in its field and is only noted); no text smaller than 12 px;
 *   - axe-core (WCAG 2.0/2.1 A and AA, best practice): no serious or critical violation;
 *   - a full-page screenshot in test/browser/artifacts/pages/<page>-<width>-<theme>-<lang>.png (git-ignored).
 * A failure names the page, the mode, the element (a selector and its text) and the value measured.
 * The data: an administrator with images (one with a long name), albums, API tokens, a webhook endpoint of their own
 * and one of the site, and the audit entries all that made; another user for the admin's user page; the images
 * page with a search that finds nothing for an empty state.
 *
 * One browser; per mode a context signed in and one signed out, two tabs each checking pages side by side
 * (PAGES_MATRIX_TABS). Heavy (~350 page checks, about 4 minutes on a busy 2-core machine): it runs where
 * TEST_DATABASE_URL is unset, so CI's second `bun test` (on PostgreSQL) skips it; PAGES_MATRIX=1 runs it anyway,
 * PAGES_MATRIX=0 never. The account menu and the phone's navigation menu are checked open, on the dashboard.
 * PAGES_MATRIX_ONLY=desktop-dark-zh-CN (a comma list of mode names) narrows the run; PAGES_MATRIX_PAGES=images,albums
 * narrows the pages. Skipped, saying so, where /usr/bin/chromium is missing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { AxeBuilder } from "@axe-core/playwright";
import type { BrowserContext, Page } from "playwright-core";
import { parseAllowList } from "../../src/webhooks/address-guard.ts";
import { type BrowserSite, CHROMIUM, hasChromium, PASSWORD, startBrowserSite } from "../support/browser-site.ts";
import { makeImage, makeNoisyJpeg } from "../support/images.ts";

const heavy = process.env.PAGES_MATRIX === "1" || (process.env.PAGES_MATRIX !== "0" && !process.env.TEST_DATABASE_URL);
if (!hasChromium) console.warn(`test/browser/pages-matrix.test.ts skipped: ${CHROMIUM} not found (apt-get install chromium)`);
else if (!heavy) console.warn("test/browser/pages-matrix.test.ts skipped: it runs once per CI run, on the embedded database (PAGES_MATRIX=1 forces it)");

const ARTIFACTS = join(import.meta.dir, "artifacts", "pages");
const TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"];
const FAILING = new Set(["serious", "critical"]);
/** Chromium draws a select's arrow in room of its own beside the author's padding (measured: 20 px). */
const SELECT_ARROW_PX = 20;
const MIN_TEXT_PX = 12;
/** Pages checked at once in each mode (PAGES_MATRIX_TABS). */
const TABS = Math.max(1, Number(process.env.PAGES_MATRIX_TABS ?? 2));

const ADMIN = { username: "mei", email: "mei.lin@example.com", name: "Mei Lin" };
const OTHER = { username: "carol", email: "carol@example.com", name: "Carol Ortega" };
const NEWCOMER = { username: "newcomer", email: "newcomer@example.com", name: "New Comer" };

type Lang = "en" | "zh-CN";
type Theme = "light" | "dark";
interface Mode {
  name: string;
  width: "desktop" | "phone";
  viewport: { width: number; height: number };
  theme: Theme;
  lang: Lang;
  /** The account menu's remembered choice (desktop), or the browser's own (phone). */
  saved: boolean;
}
const MODES: Mode[] = [];
for (const [width, viewport] of [
  ["desktop", { width: 1280, height: 800 }],
  ["phone", { width: 390, height: 844 }],
] as const) {
  for (const theme of ["light", "dark"] as const) {
    for (const lang of ["en", "zh-CN"] as const) {
      MODES.push({ name: `${width}-${theme}-${lang}`, width, viewport, theme, lang, saved: width === "desktop" });
    }
  }
}
const other = <T extends string>(x: T, pair: [T, T]) => (x === pair[0] ? pair[1] : pair[0]);

interface PageDef {
  /** The screenshot's and the report's name. */
  name: string;
  /** The route it renders (as the app registers it): the coverage test matches the routes against these. */
  route: string;
  path: () => string;
  signedIn: boolean;
  status?: number;
  /** A menu (a <details>) opened before the checks: its panel is checked and photographed open. */
  open?: string;
  /** Only at this width (the phone's navigation menu exists only there). */
  width?: Mode["width"];
}

/** Filled in by the seed. */
const seeded = {
  imageKey: "",
  adminWebhook: 0,
  userWebhook: 0,
  otherUserId: 0,
  passwordLink: "",
  provider: 0,
};

const PAGES: PageDef[] = [
  // signed in: the user center (as an administrator: the menu has one item more)
  { name: "dashboard", route: "/user/dashboard", path: () => "/user/dashboard", signedIn: true },
  { name: "menu-account", route: "/user/dashboard", path: () => "/user/dashboard", signedIn: true, open: "details.menu" },
  { name: "menu-nav", route: "/user/dashboard", path: () => "/user/dashboard", signedIn: true, open: "details.nav", width: "phone" },
  { name: "upload", route: "/user/upload", path: () => "/user/upload", signedIn: true },
  { name: "images", route: "/user/images", path: () => "/user/images", signedIn: true },
  { name: "images-empty", route: "/user/images", path: () => "/user/images?q=nothing-is-called-this", signedIn: true },
  { name: "image", route: "/user/images/:key", path: () => `/user/images/${seeded.imageKey}`, signedIn: true },
  { name: "albums", route: "/user/albums", path: () => "/user/albums", signedIn: true },
  { name: "tokens", route: "/user/tokens", path: () => "/user/tokens", signedIn: true },
  { name: "integrations", route: "/user/integrations", path: () => "/user/integrations", signedIn: true },
  { name: "webhooks", route: "/user/webhooks", path: () => "/user/webhooks", signedIn: true },
  { name: "webhook", route: "/user/webhooks/:id", path: () => `/user/webhooks/${seeded.userWebhook}`, signedIn: true },
  { name: "account", route: "/user/account", path: () => "/user/account", signedIn: true },
  { name: "security", route: "/user/security", path: () => "/user/security", signedIn: true },
  { name: "verify", route: "/user/verify", path: () => "/user/verify", signedIn: true },
  { name: "error-signed-in", route: "/user/images/:key", path: () => "/user/images/no-such-image", signedIn: true, status: 404 },
  // the admin pages
  { name: "admin", route: "/user/admin", path: () => "/user/admin", signedIn: true },
  { name: "admin-users", route: "/user/admin/users", path: () => "/user/admin/users", signedIn: true },
  { name: "admin-user", route: "/user/admin/users/:id", path: () => `/user/admin/users/${seeded.otherUserId}`, signedIn: true },
  { name: "admin-groups", route: "/user/admin/groups", path: () => "/user/admin/groups", signedIn: true },
  { name: "admin-group-new", route: "/user/admin/groups/new", path: () => "/user/admin/groups/new", signedIn: true },
  { name: "admin-group", route: "/user/admin/groups/:id", path: () => "/user/admin/groups/1", signedIn: true },
  { name: "admin-strategies", route: "/user/admin/strategies", path: () => "/user/admin/strategies", signedIn: true },
  { name: "admin-strategy-new", route: "/user/admin/strategies/new", path: () => "/user/admin/strategies/new", signedIn: true },
  { name: "admin-strategy", route: "/user/admin/strategies/:id", path: () => "/user/admin/strategies/1", signedIn: true },
  { name: "admin-settings", route: "/user/admin/settings", path: () => "/user/admin/settings", signedIn: true },
  { name: "admin-mail", route: "/user/admin/settings/mail", path: () => "/user/admin/settings/mail", signedIn: true },
  { name: "admin-invitations", route: "/user/admin/invitations", path: () => "/user/admin/invitations", signedIn: true },
  { name: "admin-images", route: "/user/admin/images", path: () => "/user/admin/images", signedIn: true },
  { name: "admin-maintenance", route: "/user/admin/maintenance", path: () => "/user/admin/maintenance", signedIn: true },
  { name: "admin-webhooks", route: "/user/admin/webhooks", path: () => "/user/admin/webhooks", signedIn: true },
  { name: "admin-webhook", route: "/user/admin/webhooks/:id", path: () => `/user/admin/webhooks/${seeded.adminWebhook}`, signedIn: true },
  { name: "admin-sign-in", route: "/user/admin/sign-in", path: () => "/user/admin/sign-in", signedIn: true },
  { name: "admin-sign-in-provider", route: "/user/admin/sign-in/:id", path: () => `/user/admin/sign-in/${seeded.provider}`, signedIn: true },
  { name: "admin-audit", route: "/user/admin/audit", path: () => "/user/admin/audit", signedIn: true },
  // signed out (after the account menu's sign-out: the theme cookie stays)
  { name: "sign-in", route: "/user/login", path: () => "/user/login", signedIn: false },
  { name: "register", route: "/user/register", path: () => "/user/register", signedIn: false },
  { name: "passkey", route: "/user/login/passkey", path: () => "/user/login/passkey", signedIn: false },
  { name: "forgot", route: "/user/forgot", path: () => "/user/forgot", signedIn: false },
  { name: "password-link", route: "/user/password/:token", path: () => seeded.passwordLink, signedIn: false },
  { name: "verify-link", route: "/user/verify/:token", path: () => "/user/verify/aaaaaaaaaaaaaaaaaaaaaaaa", signedIn: false },
  // the sign-in's second steps, reached without a pending sign-in: the page that says it has expired
  { name: "second-factor-expired", route: "/user/login/second-factor", path: () => "/user/login/second-factor", signedIn: false, status: 401 },
  { name: "enrol-expired", route: "/user/login/enrol", path: () => "/user/login/enrol", signedIn: false, status: 401 },
  { name: "oidc-link-refused", route: "/user/oidc/link", path: () => "/user/oidc/link", signedIn: false, status: 400 },
  { name: "error", route: "*", path: () => "/user/no-such-page", signedIn: false, status: 404 },
];

/** GET routes under /user that are not pages of their own, and why. */
const NOT_PAGES: Record<string, string> = {
  "/user": "redirects to the dashboard",
  "/user/": "redirects to the dashboard",
  "/user/assets/:file": "the stylesheet and scripts",
  "/user/site/logo": "the site's logo image",
  "/user/site/favicon": "the site's favicon",
  "/user/site/accent.css": "the accent colour's stylesheet",
  "/user/upload/snippets/:key": "a fragment the upload page's script asks for",
  "/user/integrations/download/:file": "a configuration file to download",
  "/user/oidc/:slug/start": "a redirect to the identity provider",
  "/user/oidc/:slug/callback": "the identity provider's redirect back (a sign-in, then a redirect)",
};

const onlyModes = process.env.PAGES_MATRIX_ONLY?.split(",").filter(Boolean);
const onlyPages = process.env.PAGES_MATRIX_PAGES?.split(",").filter(Boolean);
const modesToRun = MODES.filter((m) => !onlyModes || onlyModes.includes(m.name));
const pagesToRun = PAGES.filter((p) => !onlyPages || onlyPages.includes(p.name));

let site: BrowserSite;
let origin: string;
/** Per mode: the pages checked and passed, and the problems found. */
const results = new Map<string, { checked: string[]; failed: Set<string>; problems: string[]; notes: string[]; ms: number }>();

interface Measured {
  problems: string[];
  notes: string[];
  lang: string;
  background: string;
  luminance: number;
}

/**
 * The layout check, run in the page. Returns problems as text naming the element (selector and text) and the value.
 * Elements that are not rendered (display:none, closed <details>) have no boxes and are not checked.
 */
function measure({ arrow, minText }: { arrow: number; minText: number }): Measured {
  const problems: string[] = [];
  const notes: string[] = [];
  const vw = document.documentElement.clientWidth;
  const selectorOf = (el: Element): string => {
    const parts: string[] = [];
    for (let e: Element | null = el; e && e !== document.body && parts.length < 4; e = e.parentElement) {
      let s = e.tagName.toLowerCase();
      if (e.id) {
        parts.unshift(`${s}#${e.id}`);
        break;
      }
      const cls = Array.from(e.classList).slice(0, 2).join(".");
      if (cls) s += `.${cls}`;
      const parent = e.parentElement;
      if (parent) {
        const same = Array.from(parent.children).filter((c) => c.tagName === e!.tagName);
        if (same.length > 1) s += `:nth-of-type(${same.indexOf(e) + 1})`;
      }
      parts.unshift(s);
    }
    return parts.join(" > ");
  };
  const textOf = (el: Element) => {
    const raw =
      el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement
        ? el.value || el.placeholder
        : el instanceof HTMLSelectElement
          ? (el.selectedOptions[0]?.text ?? "")
          : ((el as HTMLElement).innerText ?? el.textContent ?? "");
    const t = raw.replace(/\s+/g, " ").trim();
    return t.length > 60 ? `${t.slice(0, 57)}…` : t;
  };
  const name = (el: Element) => `${selectorOf(el)} "${textOf(el)}"`;
  const px = (n: number) => `${Math.round(n * 10) / 10} px`;

  const over = document.documentElement.scrollWidth - window.innerWidth;
  if (over > 0) problems.push(`the document is ${px(over)} wider than the window (scrollWidth ${document.documentElement.scrollWidth} > ${window.innerWidth})`);

  const all = Array.from(document.body.querySelectorAll("*"));
  const offenders = new Set<Element>();
  const scrollers = new Set<Element>();
  const hasOffendingAncestor = (el: Element) => {
    for (let e = el.parentElement; e; e = e.parentElement) if (offenders.has(e)) return true;
    return false;
  };
  const styles = new Map<Element, CSSStyleDeclaration>();
  const style = (el: Element) => {
    let s = styles.get(el);
    if (!s) styles.set(el, (s = getComputedStyle(el)));
    return s;
  };
  const isBoxed = (el: Element) => {
    const s = style(el);
    const bg = s.backgroundColor;
    const filled = bg !== "rgba(0, 0, 0, 0)" && bg !== "transparent";
    const bordered = parseFloat(s.borderRightWidth) > 0 && s.borderRightStyle !== "none";
    return (filled || bordered) && s.display !== "inline" && s.display !== "contents";
  };
  // the content of a closed <details> keeps boxes in Chromium (content-visibility: hidden) but shows nothing, unless
  // the stylesheet shows it (the navigation's row on a wide screen)
  const shown = (el: Element) => el.checkVisibility();
  for (const el of all) {
    if (el.getClientRects().length === 0 || !shown(el)) continue;
    const s = style(el);
    if (s.visibility === "hidden") continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    // the element's right edge, or its own text's where the text runs out of it (a long word in a heading)
    let right = box.right;
    if (s.overflowX === "visible") {
      for (const n of Array.from(el.childNodes)) {
        if (n.nodeType !== Node.TEXT_NODE || !(n.textContent ?? "").trim()) continue;
        const range = document.createRange();
        range.selectNodeContents(n);
        right = Math.max(right, range.getBoundingClientRect().right);
      }
    }
    const r = { right };
    const positioned = s.position === "absolute" || s.position === "fixed";
    // the nearest ancestor that clips or scrolls, and the nearest bordered or filled box in the flow
    let clipper: Element | null = null;
    let boxed: Element | null = null;
    for (let e = el.parentElement; e && e !== document.documentElement; e = e.parentElement) {
      const es = style(e);
      if (!clipper && es.overflowX !== "visible") clipper = e;
      if (!boxed && !positioned && e !== document.body && isBoxed(e)) boxed = e;
      if (clipper) break;
    }
    if (clipper) {
      const cs = style(clipper);
      const cr = clipper.getBoundingClientRect();
      if (cr.width <= 2) continue; // visually hidden text
      if (cs.overflowX === "auto" || cs.overflowX === "scroll") {
        if (clipper.scrollWidth > clipper.clientWidth + 1 && !scrollers.has(clipper)) {
          scrollers.add(clipper);
          notes.push(`${selectorOf(clipper)} scrolls horizontally by design: content ${clipper.scrollWidth} px in ${clipper.clientWidth} px`);
        }
        continue;
      }
      const edge = cr.right - parseFloat(cs.borderRightWidth);
      if (r.right > edge + 1 && !hasOffendingAncestor(el)) {
        offenders.add(el);
        if (cs.textOverflow === "ellipsis" || s.textOverflow === "ellipsis") notes.push(`${name(el)} is cut with an ellipsis by ${selectorOf(clipper)}`);
        else
          problems.push(`${name(el)} passes the right edge of ${selectorOf(clipper)}, which clips it (overflow-x: ${cs.overflowX}), by ${px(r.right - edge)}`);
        continue;
      }
    }
    if (r.right > vw + 1 && !hasOffendingAncestor(el)) {
      offenders.add(el);
      problems.push(`${name(el)} passes the window's right edge by ${px(r.right - vw)} (right ${px(r.right)}, window ${vw} px)`);
      continue;
    }
    if (boxed && (!clipper || boxed.contains(clipper) === false || clipper.contains(boxed))) {
      const br = boxed.getBoundingClientRect();
      const edge = br.right - parseFloat(style(boxed).borderRightWidth);
      if (r.right > edge + 1 && !hasOffendingAncestor(el) && !offenders.has(boxed)) {
        offenders.add(el);
        problems.push(`${name(el)} overflows its box ${selectorOf(boxed)} by ${px(r.right - edge)}`);
      }
    }
  }

  // controls that clip their text
  const canvas = document.createElement("canvas").getContext("2d")!;
  for (const el of Array.from(document.querySelectorAll("input, select, textarea, button"))) {
    if (el.getClientRects().length === 0 || !shown(el)) continue;
    const s = style(el);
    if (s.visibility === "hidden") continue;
    const fs = parseFloat(s.fontSize);
    if (fs < minText) problems.push(`${name(el)}: font-size ${px(fs)} < ${minText} px`);
    if (el instanceof HTMLSelectElement) {
      canvas.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
      const room = el.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight) - (s.appearance === "none" ? 0 : arrow);
      // what it shows (its chosen option) must fit; a longer option that would be cut once chosen is noted
      const shownText = el.selectedOptions[0]?.text.trim() ?? "";
      const shownPx = canvas.measureText(shownText).width;
      if (shownPx > room + 1) problems.push(`${selectorOf(el)} clips its text "${shownText}": ${px(shownPx)} of text in ${px(room)} of room`);
      else {
        const widest = Array.from(el.options)
          .map((o) => ({ text: o.text.trim(), w: canvas.measureText(o.text.trim()).width }))
          .sort((a, b) => b.w - a.w)[0];
        if (widest && widest.w > room + 1) notes.push(`${selectorOf(el)} would clip its option "${widest.text}" once chosen: ${px(widest.w)} in ${px(room)}`);
      }
      continue;
    }
    if (el instanceof HTMLInputElement && ["checkbox", "radio", "hidden", "range", "color", "image"].includes(el.type)) continue;
    // a field to type in must have room for a few characters
    if (el instanceof HTMLTextAreaElement || (el instanceof HTMLInputElement && !["button", "submit", "reset", "file"].includes(el.type))) {
      const room = el.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
      if (room < 2.5 * fs) problems.push(`${name(el)} is too narrow to type in: ${px(room)} of room for ${px(fs)} text (under 2.5 em)`);
    }
    if (el.scrollWidth > el.clientWidth + 1) {
      const what = `${name(el)} clips its text: scrollWidth ${el.scrollWidth} > clientWidth ${el.clientWidth}`;
      // a text field whose value (the user's data: a URL, a name) is longer than the field scrolls, as text fields do;
      // its label text (a button's, a placeholder) or its format (a date, a number, a file's name) must fit
      const free =
        el instanceof HTMLTextAreaElement || (el instanceof HTMLInputElement && ["text", "url", "email", "search", "password", "tel"].includes(el.type));
      if (free && (el as HTMLInputElement).value !== "") notes.push(`${what} (its value scrolls)`);
      else problems.push(what);
    }
  }

  // text under 12 px
  for (const el of all) {
    const own = Array.from(el.childNodes).some((n) => n.nodeType === Node.TEXT_NODE && (n.textContent ?? "").trim() !== "");
    if (!own || el.getClientRects().length === 0 || !shown(el)) continue;
    const fs = parseFloat(style(el).fontSize);
    if (fs < minText) problems.push(`${name(el)}: font-size ${px(fs)} < ${minText} px`);
  }

  const bg = getComputedStyle(document.body).backgroundColor;
  const [rr = 0, gg = 0, bb = 0] = (bg.match(/[\d.]+/g) ?? []).map(Number);
  const lin = (c: number) => {
    const v = c / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  };
  return {
    problems,
    notes,
    lang: document.documentElement.lang,
    background: bg,
    luminance: 0.2126 * lin(rr) + 0.7152 * lin(gg) + 0.0722 * lin(bb),
  };
}

async function axe(page: Page) {
  // legacy mode: axe.run in the page itself (the pages have no frames); only the violations' nodes are collected
  const results = await new AxeBuilder({ page })
    .withTags(TAGS)
    .options({ resultTypes: ["violations"] })
    .setLegacyMode(true)
    .analyze();
  return results.violations;
}

/** Signs in through the form (by name, so that it works in either language). */
async function signIn(page: Page) {
  await page.goto(`${origin}/user/login`);
  await page.locator('input[name="login"]').fill(ADMIN.username);
  await page.locator('input[name="password"]').fill(PASSWORD);
  await Promise.all([page.waitForURL(`${origin}/user/dashboard`), page.locator('form[action$="/login"] button[type="submit"]').click()]);
}

async function openMenu(page: Page) {
  const menu = page.locator("details.menu");
  if (!(await menu.evaluate((d) => (d as HTMLDetailsElement).open))) await menu.locator("summary").click();
  return menu;
}

/** The account menu's remembered choices, made as a person would: the dark-mode switch until the theme is `theme`, then the language's button. */
async function chooseInMenu(page: Page, theme: Theme, locale: Lang) {
  for (let presses = 0; presses < 2; presses++) {
    const switchOn = (await page.locator('details.menu button[name="theme"]').getAttribute("aria-pressed")) === "true";
    if ((await page.evaluate(() => document.documentElement.dataset.theme)) === theme && switchOn === (theme === "dark")) break;
    const menu = await openMenu(page);
    await Promise.all([page.waitForEvent("load"), menu.locator('button[name="theme"]').click()]);
  }
  if ((await page.evaluate(() => document.documentElement.lang)) !== locale) {
    const menu = await openMenu(page);
    await Promise.all([page.waitForEvent("load"), menu.locator(`button[name="locale"][value="${locale}"]`).click()]);
  }
}

/** The account page's full choice: the theme ("system": as the device) and the language ("": as the browser says). */
async function chooseOnAccountPage(page: Page, theme: Theme | "system", locale: Lang | "") {
  await page.goto(`${origin}/user/account`);
  await page.locator("#account-theme").selectOption(theme);
  await page.locator("#account-locale").selectOption(locale);
  await Promise.all([page.waitForEvent("load"), page.locator('form:has(#account-theme) button[type="submit"]').click()]);
}

async function signOut(page: Page) {
  const menu = await openMenu(page);
  await Promise.all([page.waitForURL(/\/user\/login/), menu.locator('button[formaction$="/logout"]').click()]);
}

const ms = (n: number) => `${Math.round(n)} ms`;

async function checkPage(page: Page, mode: Mode, def: PageDef, out: { problems: string[]; notes: string[]; failed: Set<string> }) {
  const where = `${def.name} [${mode.name}]`;
  // this page's findings, added to the mode's at the end (another tab checks another page meanwhile)
  const mine = { problems: [] as string[], notes: [] as string[] };
  const url = `${origin}${def.path()}`;
  const t0 = performance.now();
  const res = await page.goto(url, { waitUntil: "load" });
  if (def.open) {
    await page.locator(`${def.open} > summary`).click();
    if (!(await page.locator(def.open).evaluate((d) => (d as HTMLDetailsElement).open))) mine.problems.push(`${where}: ${def.open} did not open`);
  }
  const t1 = performance.now();
  const expected = def.status ?? 200;
  if (res?.status() !== expected) mine.problems.push(`${where} ${def.path()}: HTTP ${res?.status()}, expected ${expected}`);
  const landed = new URL(page.url());
  if (landed.pathname !== new URL(url).pathname) mine.problems.push(`${where} ${def.path()}: landed on ${landed.pathname}`);
  const m = await page.evaluate(measure, { arrow: SELECT_ARROW_PX, minText: MIN_TEXT_PX });
  if (m.lang !== mode.lang) mine.problems.push(`${where}: <html lang="${m.lang}">, expected ${mode.lang}`);
  const dark = m.luminance < 0.2;
  if (dark !== (mode.theme === "dark"))
    mine.problems.push(`${where}: the body's background is ${m.background} (luminance ${m.luminance.toFixed(2)}), expected ${mode.theme}`);
  for (const p of m.problems) mine.problems.push(`${where}: ${p}`);
  for (const n of m.notes) mine.notes.push(`${where}: ${n}`);
  const t2 = performance.now();
  for (const v of await axe(page)) {
    const line = `${where}: axe [${v.impact}] ${v.id} — ${v.help}\n      ${v.nodes
      .slice(0, 6)
      .map((n) => `${n.target.map(String).join(" ")}${n.failureSummary ? ` (${n.failureSummary.replace(/\s+/g, " ").slice(0, 160)})` : ""}`)
      .join("\n      ")}${v.nodes.length > 6 ? `\n      … ${v.nodes.length - 6} more` : ""}`;
    if (FAILING.has(v.impact ?? "")) mine.problems.push(line);
    else mine.notes.push(line);
  }
  const t3 = performance.now();
  await page.screenshot({
    path: join(ARTIFACTS, `${def.name}-${mode.viewport.width}-${mode.theme}-${mode.lang}.png`),
    fullPage: true,
    animations: "disabled",
    caret: "hide",
  });
  if (process.env.PAGES_MATRIX_TIMING)
    console.log(`${where}: load ${ms(t1 - t0)}, layout ${ms(t2 - t1)}, axe ${ms(t3 - t2)}, screenshot ${ms(performance.now() - t3)}`);
  out.problems.push(...mine.problems);
  out.notes.push(...mine.notes);
  if (mine.problems.length > 0) out.failed.add(def.name);
}

/** A page of a new context of this mode, its script errors recorded. */
async function pageIn(mode: Mode, options: { colorScheme: Theme; locale: Lang }) {
  const context: BrowserContext = await site.newContext({ viewport: mode.viewport, ...options });
  const page = await context.newPage();
  page.on("pageerror", (e) => site.pageErrors.push(`${mode.name} ${page.url()}: ${e.message}`));
  page.on("console", (msg) => {
    // a page that is not a 200 is reported by its status; Chromium also logs it
    if (msg.type() === "error" && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(msg.text()))
      site.pageErrors.push(`${mode.name} ${page.url()}: console: ${msg.text()}`);
  });
  return { context, page };
}

/**
 * The pages checked in TABS tabs of the same context at once (the first is `page`), in the list's order; the report
 * keeps the list's order. Two tabs keep both cores busy while one page waits for the server or the screenshot.
 */
async function inTabs(page: Page, defs: PageDef[], check: (tab: Page, def: PageDef) => Promise<void>, out: { checked: string[] }) {
  const queue = [...defs];
  const tabs = [page];
  for (let i = 1; i < Math.min(TABS, defs.length); i++) {
    const tab = await page.context().newPage();
    tab.on("pageerror", (e) => site.pageErrors.push(`${tab.url()}: ${e.message}`));
    tabs.push(tab);
  }
  const done = new Set<string>();
  await Promise.all(
    tabs.map(async (tab) => {
      for (let def = queue.shift(); def; def = queue.shift()) {
        await check(tab, def);
        done.add(def.name);
      }
    }),
  );
  for (const tab of tabs.slice(1)) await tab.close();
  out.checked.push(...defs.filter((d) => done.has(d.name)).map((d) => d.name));
}

async function runMode(mode: Mode) {
  const t0 = performance.now();
  const out = { checked: [] as string[], failed: new Set<string>(), problems: [] as string[], notes: [] as string[], ms: 0 };
  results.set(mode.name, out);
  const pages = pagesToRun.filter((p) => !p.width || p.width === mode.width);
  // the browser's own settings: at desktop width the other kind, which the saved choice must beat
  const browserTheme: Theme = mode.saved ? other(mode.theme, ["light", "dark"]) : mode.theme;
  const browserLang: Lang = mode.saved ? other(mode.lang, ["en", "zh-CN"]) : mode.lang;
  const errorsBefore = site.pageErrors.length;
  const signed = await pageIn(mode, { colorScheme: browserTheme, locale: browserLang });
  let themeCookies: Awaited<ReturnType<BrowserContext["cookies"]>> = [];
  try {
    const { page } = signed;
    await signIn(page);
    // the remembered switch (desktop), or nothing remembered (phone: back to following the device and the browser)
    if (mode.saved) await chooseInMenu(page, mode.theme, mode.lang);
    else await chooseOnAccountPage(page, "system", "");
    await inTabs(
      page,
      pages.filter((p) => p.signedIn),
      (tab, def) => checkPage(tab, mode, def, out),
      out,
    );
    // nothing saved stays on the account for the next mode; the theme cookie stays in this browser
    if (mode.saved) await chooseOnAccountPage(page, mode.theme, "");
    await signOut(page);
    themeCookies = (await signed.context.cookies()).filter((c) => c.name === "ih_theme");
    if (mode.saved && themeCookies.length !== 1) out.problems.push(`${mode.name}: no ih_theme cookie after the account menu's choice`);
  } finally {
    await signed.context.close();
  }
  // signed out, the language is the browser's (the mode's) and the theme this browser's remembered one: the same
  // cookie in a context whose Accept-Language is the mode's
  const anonymous = await pageIn(mode, { colorScheme: browserTheme, locale: mode.lang });
  try {
    await anonymous.context.addCookies(themeCookies);
    await inTabs(
      anonymous.page,
      pages.filter((p) => !p.signedIn),
      (tab, def) => checkPage(tab, mode, def, out),
      out,
    );
  } finally {
    await anonymous.context.close();
    out.ms = performance.now() - t0;
  }
  if (site.pageErrors.length > errorsBefore) out.problems.push(`${mode.name}: script errors: ${site.pageErrors.slice(errorsBefore).join(" / ")}`);
  const passed = out.checked.filter((n) => !out.failed.has(n));
  console.log(
    `${mode.name}: ${passed.length}/${out.checked.length} pages pass (${(out.ms / 1000).toFixed(1)} s)` +
      (out.failed.size ? `; failing: ${[...out.failed].join(", ")}` : ""),
  );
  if (process.env.PAGES_MATRIX_NOTES && out.notes.length) console.log(`${mode.name}: not failing:\n  ${out.notes.join("\n  ")}`);
  return { ...out, expected: pages.length };
}

async function seed() {
  // the webhooks may point at loopback (a port nothing listens on: every delivery fails, and the log shows it)
  site.ctx.deps.config.webhooks!.allow = parseAllowList("127.0.0.1");
  await site.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
  const [me] = (await site.admin("GET", `/api/admin/users?username=${ADMIN.username}`)).users;
  await site.admin("PATCH", `/api/admin/users/${me.id}`, { role: "admin" });
  await site.admin("PATCH", `/api/admin/groups/1`, { webhook_allow_internal: true });
  const { token } = await site.admin("POST", `/api/admin/users/${me.id}/tokens`, { label: "PicGo on the laptop" });
  await site.admin("POST", `/api/admin/users/${me.id}/tokens`, { label: "ShareX" });
  const trip = await site.admin("POST", `/api/admin/users/${me.id}/albums`, { name: "Kyoto, autumn 2026" });
  await site.admin("POST", `/api/admin/users/${me.id}/albums`, { name: "Screenshots" });
  const files: [string, Uint8Array, string][] = [
    ["IMG_20261128_143015_HDR_portrait_mode_from_the_phone_camera.jpg", await makeNoisyJpeg(640, 420), "image/jpeg"],
    ["diagram.png", await makeImage("png", 320, 200, "#cc6633"), "image/png"],
    ["icon.webp", await makeImage("webp", 96, 96, "#3a7"), "image/webp"],
    ["banner.png", await makeImage("png", 1200, 300, "#335588"), "image/png"],
  ];
  for (const [i, [name, bytes, type]] of files.entries()) {
    const form = new FormData();
    form.append("file", new File([Buffer.from(bytes)], name, { type }));
    if (i === 0) form.append("album_id", String(trip.id));
    if (i === 1) form.append("permission", "0");
    const res = await fetch(`${origin}/api/v1/upload`, {
      method: "POST",
      body: form,
      headers: { authorization: `Bearer ${token}`, accept: "application/json" },
    });
    const body = (await res.json()) as { data: { key: string } };
    if (res.status !== 200) throw new Error(`upload ${name} → ${res.status} ${JSON.stringify(body)}`);
    if (i === 0) seeded.imageKey = body.data.key;
  }
  // another user, with a password link waiting, and the audit entries all of this writes
  const carol = await site.admin("POST", "/api/admin/users", OTHER);
  seeded.otherUserId = carol.id;
  await site.admin("PATCH", `/api/admin/users/${carol.id}`, { capacity_kb: 512_000, name: "Carol O." });
  const newcomer = await site.admin("POST", "/api/admin/users", NEWCOMER);
  const link = await site.admin("POST", `/api/admin/users/${newcomer.id}/password-link`);
  seeded.passwordLink = new URL(link.url).pathname;
  const hook = await site.admin("POST", "/api/admin/webhooks", {
    url: "http://127.0.0.1:9/site-events",
    description: "Moderation queue",
    events: ["image.uploaded", "user.disabled"],
  });
  seeded.adminWebhook = hook.endpoint?.id ?? hook.id;
  // an OpenID Connect provider (its issuer on loopback, never asked here): its button on the sign-in page, its admin page
  const provider = await site.admin("POST", "/api/admin/oidc-providers", {
    slug: "authentik",
    label: "Sign in with Authentik",
    issuer: "http://127.0.0.1:9/application/o/images/",
    client_id: "image-host",
    client_secret: "a client secret of the provider",
    enabled: true,
  });
  seeded.provider = provider.id;
  // the user's own endpoint, through its page's form
  const page = await site.context.newPage();
  await signIn(page);
  await page.goto(`${origin}/user/webhooks`);
  const csrf = await page.locator('details.menu input[name="_csrf"]').inputValue();
  const made = await page.request.post(`${origin}/user/webhooks`, {
    form: { _csrf: csrf!, url: "http://127.0.0.1:9/my-hook", description: "Sync to my notes", "event_image.uploaded": "1", "event_image.deleted": "1" },
    headers: { origin },
    maxRedirects: 0,
  });
  if (made.status() >= 400) throw new Error(`webhook form → ${made.status()}: ${(await made.text()).slice(0, 300)}`);
  await page.goto(`${origin}/user/webhooks`);
  const hrefs = await page.locator('main a[href*="/user/webhooks/"]').evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).pathname));
  const id = hrefs.map((h) => /\/user\/webhooks\/(\d+)$/.exec(h)?.[1]).find(Boolean);
  if (!id) throw new Error(`no endpoint listed on /user/webhooks: ${hrefs.join(", ")}`);
  seeded.userWebhook = Number(id);
  await signOut(page);
  await page.close();
}

describe.skipIf(!hasChromium || !heavy)("every page × desktop and phone × light and dark × English and Chinese", () => {
  beforeAll(async () => {
    site = await startBrowserSite({ artifacts: ARTIFACTS, user: ADMIN });
    origin = site.origin;
    await seed();
  }, 120_000);

  afterAll(async () => {
    await site?.close();
  }, 60_000);

  test("the list covers every page the app registers under /user", () => {
    const routes = new Set(
      (site.ctx.app.routes as { method: string; path: string }[])
        .filter((r) => (r.method === "GET" || r.method === "ALL") && r.path.startsWith("/user"))
        // a parameter's pattern ("/:token{[\\w-]{20,100}}") is not part of its name; each asset is one route
        .map((r) => r.path.replace(/(:\w+)\{.*$/, "$1").replace(/^\/user\/assets\/.+/, "/user/assets/:file")),
    );
    const covered = new Set(PAGES.map((p) => p.route));
    const missing = [...routes].filter((r) => !covered.has(r) && !(r in NOT_PAGES) && r !== "/user/*" && !r.endsWith("*"));
    expect(missing).toEqual([]);
    expect(routes.size).toBeGreaterThan(30);
  });

  for (const mode of modesToRun) {
    test(`${mode.name}: every page's layout, text size and axe; its screenshot`, async () => {
      const out = await runMode(mode);
      expect(out.checked.length).toBe(out.expected);
      expect(out.problems.join("\n")).toBe("");
    }, 240_000);
  }

  test("no page asked for anything beyond loopback", () => {
    expect(site.foreign).toEqual([]);
  });

  afterAll(() => {
    const lines = [...results.entries()].map(
      ([name, r]) => `  ${name.padEnd(22)} ${String(r.checked.length - r.failed.size).padStart(3)}/${r.checked.length} pass  ${(r.ms / 1000).toFixed(0)} s`,
    );
    if (lines.length) console.log(`pages × modes:\n${lines.join("\n")}`);
  });
});
