/**
 * Accessibility and "every page in Chromium". A new user and a new administrator (made
 * through the admin API, as the README tells an administrator) each with a little content (three images, an album,
 * an API token); the browser signs in as each and crawls every page reachable by links from /user/dashboard within
 * /user/ (same origin, GET only, no sign-out, no downloads or assets, one page per route shape so that a detail page
 * such as /user/images/<key> is seen once; at most MAX_PAGES), at desktop (1280×860) and phone (390×844) widths. On
 * each page: axe-core (@axe-core/playwright, bundled, no network) with the WCAG 2.0/2.1 A and AA and best-practice
 * rules — a "serious" or "critical" violation fails, with every violation's rule, impact, targets and help in the
 * message; moderate and minor ones, and a page wider than the window (reflow), are printed only — the answer is a
 * 200, no request left loopback, no script error, the first element Tab reaches shows a focus indicator, and a
 * full-page screenshot goes to test/browser/artifacts/a11y/ (git-ignored). The administrator's crawl opens the pages
 * the user's crawl checked (same route shape, same width) for their status and links only, and checks the rest.
 * Also axe on the sign-in page, the sign-up page and 404 pages; and forms filled and sent with the keyboard only (no
 * clicks): an album, the account's email, the admin settings and the admin users search. A11Y_TIMING=1 prints each
 * page's load, axe and screenshot times.
 * Skipped, with the reason printed, where /usr/bin/chromium is missing (`apt-get install chromium`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { AxeBuilder } from "@axe-core/playwright";
import type { BrowserContext, Page } from "playwright-core";
import { type BrowserSite, CHROMIUM, hasChromium, PASSWORD, startBrowserSite } from "../support/browser-site.ts";
import { makeImage, makeNoisyJpeg } from "../support/images.ts";

if (!hasChromium) console.warn(`test/browser/accessibility.test.ts skipped: ${CHROMIUM} not found (apt-get install chromium)`);

const ARTIFACTS = join(import.meta.dir, "artifacts", "a11y");
const MAX_PAGES = 80;
const TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"];
const FAILING = new Set(["serious", "critical"]);
const WIDTHS = { desktop: { width: 1280, height: 860 }, phone: { width: 390, height: 844 } } as const;
type Width = keyof typeof WIDTHS;
type Role = "user" | "admin";

/**
 * Known serious/critical violations of pages other engineers are still writing, reported to them: `page` (a path
 * shape, ":id" for an id segment), `rule` and `target` (every failing element's selector must match), with a
 * one-line reason. Keep it empty when possible.
 */
const ALLOWED: { page: RegExp; rule: string; target: RegExp; reason: string }[] = [];

const USER = { username: "ally", email: "ally@example.com", name: "Ally Access" };
const ADMIN = { username: "root", email: "root@example.com", name: "Root Admin" };

let site: BrowserSite;
let origin: string;
const ids: Record<Role, number> = { user: 0, admin: 0 };
const contexts = new Map<string, BrowserContext>();
/** Route shapes the user's crawl checked, by width: the admin's crawl follows their links but does not check them again. */
const checkedAsUser: Record<Width, Set<string>> = { desktop: new Set(), phone: new Set() };

interface Violation {
  id: string;
  impact: string;
  help: string;
  helpUrl: string;
  targets: string[];
}

const api = async (path: string, init: RequestInit & { bearer?: string } = {}) => {
  const res = await fetch(`${origin}${path}`, {
    ...init,
    headers: { ...(init.bearer ? { authorization: `Bearer ${init.bearer}` } : {}), ...(init.headers ?? {}) },
  });
  return { status: res.status, body: (await res.json()) as any };
};

/** A user with a password, an API token, an album and three images (one of them in the album). */
async function seed(role: Role, who: typeof USER) {
  let id: number;
  if (role === "user") {
    [{ id }] = (await site.admin("GET", `/api/admin/users?username=${who.username}`)).users;
  } else {
    ({ id } = await site.admin("POST", "/api/admin/users", { ...who, role: "admin" }));
    await site.admin("PATCH", `/api/admin/users/${id}`, { password: PASSWORD });
  }
  ids[role] = id;
  const { token } = await site.admin("POST", `/api/admin/users/${id}/tokens`, { label: `${role} laptop` });
  const album = await site.admin("POST", `/api/admin/users/${id}/albums`, { name: `${who.name}'s holiday` });
  const files: [string, Uint8Array, string][] = [
    ["beach.jpg", await makeNoisyJpeg(640, 420), "image/jpeg"],
    ["diagram.png", await makeImage("png", 320, 200, "#cc6633"), "image/png"],
    ["icon.webp", await makeImage("webp", 96, 96, "#3a7"), "image/webp"],
  ];
  for (const [i, [name, bytes, type]] of files.entries()) {
    const form = new FormData();
    form.append("file", new File([Buffer.from(bytes)], name, { type }));
    if (i === 0) form.append("album_id", String(album.id));
    const res = await api("/api/v1/upload", { method: "POST", body: form, bearer: token, headers: { accept: "application/json" } });
    if (res.status !== 200) throw new Error(`upload ${name} → ${res.status} ${JSON.stringify(res.body)}`);
  }
}

/** A context at this width, signed in as this role, its script errors recorded in site.pageErrors. */
async function signedIn(role: Role, width: Width): Promise<BrowserContext> {
  const key = `${role}-${width}`;
  const existing = contexts.get(key);
  if (existing) return existing;
  const context = await site.newContext({ viewport: WIDTHS[width] });
  context.on("page", (p) => {
    p.on("pageerror", (e) => site.pageErrors.push(`${p.url()}: ${e.message}`));
    p.on("console", (m) => {
      // a page that is not a 200 is reported by its status; Chromium also logs it
      const documentItself = m.location().url === p.url() && /^Failed to load resource: the server responded with a status of/.test(m.text());
      if (m.type() === "error" && !documentItself) site.pageErrors.push(`${p.url()}: console: ${m.text()}`);
    });
  });
  const page = await context.newPage();
  await page.goto(`${origin}/user/login`);
  await page.getByLabel("Username or email").fill(role === "user" ? USER.username : ADMIN.username);
  await page.getByLabel("Password").fill(PASSWORD);
  await Promise.all([page.waitForURL(`${origin}/user/dashboard`), page.getByRole("button", { name: "Sign in" }).click()]);
  await page.close();
  contexts.set(key, context);
  return context;
}

/** A path's shape: id-like segments (digits, image keys) become ":id"; a query becomes "?". */
function shapeOf(url: URL): string {
  // an id: digits, or a generated key (12+ characters with a capital or a digit; route words are lower case)
  const segments = url.pathname.split("/").map((s) => (/^\d+$/.test(s) || (/^[\w.-]{12,}$/.test(s) && /[A-Z0-9]/.test(s)) ? ":id" : s));
  // one variant with a query (a filter, a page) per path: the same page's markup with other rows
  return segments.join("/") + (url.search ? "?" : "");
}

/** The screenshot's name: the path and query, made safe for a file name. */
const fileOf = (prefix: string, url: URL) => `${prefix}${(url.pathname + url.search).replace(/^\/user\/?/, "").replace(/[^\w.-]+/g, "_") || "root"}.png`;

const ASSET = /\.(png|jpe?g|gif|webp|avif|svg|ico|tiff?|bmp|css|js|json|sxcu|sh|txt|zip|tar|gz|xml)$/i;

/** Links of the page worth crawling: same origin, under /user/, not sign-out, not an asset or a download. */
async function linksOf(page: Page): Promise<URL[]> {
  const found = await page.locator("a[href]").evaluateAll((as) => as.filter((a) => !a.hasAttribute("download")).map((a) => (a as HTMLAnchorElement).href));
  const out: URL[] = [];
  for (const href of found) {
    const url = new URL(href);
    url.hash = "";
    if (url.origin !== origin || !url.pathname.startsWith("/user/")) continue;
    // sign-in and sign-up are checked signed out (a signed-in browser is sent on to the dashboard)
    if (/^\/user\/(logout|login|register|assets)(\/|$)/.test(url.pathname) || ASSET.test(url.pathname)) continue;
    out.push(url);
  }
  return out;
}

async function axe(page: Page): Promise<Violation[]> {
  // legacy mode: axe.run in the page itself (the pages have no frames), not runPartial then finishRun in a new page;
  // only the violations' nodes are collected. Both make a run several times faster on this 2-core machine.
  const results = await new AxeBuilder({ page })
    .withTags(TAGS)
    .options({ resultTypes: ["violations"] })
    .setLegacyMode(true)
    .analyze();
  return results.violations.map((v) => ({
    id: v.id,
    impact: v.impact ?? "unknown",
    help: v.help,
    helpUrl: v.helpUrl,
    targets: v.nodes.map((n) => n.target.map(String).join(" ")),
  }));
}

const describeViolation = (where: string, v: Violation) => `${where}: [${v.impact}] ${v.id} — ${v.help} (${v.helpUrl})\n    targets: ${v.targets.join(" | ")}`;

/** After one Tab from the top of the page: the focused element, and whether it shows a focus indicator. */
async function focusAfterTab(page: Page) {
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  await page.keyboard.press("Tab");
  return page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null;
    if (!el || el === document.body) return { element: "body", indicator: false, style: "" };
    const s = getComputedStyle(el);
    const outline = s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0;
    const shadow = s.boxShadow !== "none" && s.boxShadow !== "";
    const r = el.getBoundingClientRect();
    return {
      element: el.outerHTML.slice(0, 120),
      indicator: (outline || shadow) && r.width > 0 && r.height > 0,
      style: `outline: ${s.outlineStyle} ${s.outlineWidth} ${s.outlineColor}; box-shadow: ${s.boxShadow}; box ${Math.round(r.width)}×${Math.round(r.height)}`,
    };
  });
}

/** Where the records of requests and script errors stand before a navigation. */
const mark = () => ({ foreignBefore: site.foreign.length, errorsBefore: site.pageErrors.length });

interface PageCheck {
  problems: string[];
  notes: string[];
}

/** axe, status, loopback, script errors, focus indicator, screenshot: what is wrong goes to `problems`. */
async function checkPage(
  page: Page,
  url: URL,
  status: number | undefined,
  label: string,
  out: PageCheck,
  expectedStatus: number,
  before: ReturnType<typeof mark>,
) {
  const where = `${label} ${url.pathname}${url.search}`;
  const { foreignBefore, errorsBefore } = before;
  if (status !== expectedStatus) out.problems.push(`${where}: HTTP ${status}, expected ${expectedStatus}`);
  const t0 = performance.now();
  const violations = await axe(page);
  const t1 = performance.now();
  for (const v of violations) {
    const allowed = ALLOWED.find((a) => a.rule === v.id && a.page.test(shapeOf(url)) && v.targets.every((t) => a.target.test(t)));
    if (FAILING.has(v.impact) && !allowed) out.problems.push(describeViolation(where, v));
    else out.notes.push(describeViolation(where, v) + (allowed ? `\n    allowed: ${allowed.reason}` : ""));
  }
  // reflow (WCAG 1.4.10, which axe does not test): a page wider than the window is listed, not failed
  const wider = await page.evaluate(() => {
    const over = document.documentElement.scrollWidth - window.innerWidth;
    if (over <= 0) return null;
    const sticking = Array.from(document.querySelectorAll("main *, header *")).filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5);
    const outermost = sticking.filter((e) => !sticking.includes(e.parentElement as Element));
    return { over, elements: outermost.slice(0, 3).map((e) => `<${e.tagName.toLowerCase()}${e.className ? ` class="${e.className}"` : ""}>`) };
  });
  if (wider) out.notes.push(`${where}: [reflow] the page is ${wider.over} px wider than the window: ${wider.elements.join(", ")}`);
  await page.screenshot({ path: join(ARTIFACTS, fileOf(`${label}-`, url)), fullPage: true });
  const t2 = performance.now();
  const focus = await focusAfterTab(page);
  if (process.env.A11Y_TIMING)
    console.log(`${where}: axe ${Math.round(t1 - t0)} ms, screenshot ${Math.round(t2 - t1)} ms, focus ${Math.round(performance.now() - t2)} ms`);
  if (!focus.indicator) out.problems.push(`${where}: no visible focus indicator after Tab on ${focus.element} (${focus.style})`);
  // anything asynchronous the page started (thumbnails, scripts) has had axe's run to finish
  if (site.foreign.length > foreignBefore) out.problems.push(`${where}: requests left loopback: ${site.foreign.slice(foreignBefore).join(", ")}`);
  if (site.pageErrors.length > errorsBefore) out.problems.push(`${where}: script errors: ${site.pageErrors.slice(errorsBefore).join(" / ")}`);
}

/** Crawls from /user/dashboard; returns the pages seen and what is wrong with them. */
async function crawl(role: Role, width: Width) {
  const context = await signedIn(role, width);
  const page = await context.newPage();
  const label = `${role}-${width}`;
  const queue: URL[] = [new URL(`${origin}/user/dashboard`)];
  const shapes = new Set<string>([shapeOf(queue[0]!)]);
  const visited: string[] = [];
  const skipped: string[] = [];
  const out: PageCheck = { problems: [], notes: [] };
  while (queue.length > 0 && visited.length + skipped.length < MAX_PAGES) {
    const url = queue.shift()!;
    const again = role === "admin" && checkedAsUser[width].has(shapeOf(url));
    const before = mark();
    const t = performance.now();
    let res;
    try {
      res = await page.goto(url.href, { waitUntil: "load" });
    } catch (e) {
      // a link that downloads a file is not a page
      if (/Download is starting/.test(String(e))) continue;
      throw e;
    }
    if (process.env.A11Y_TIMING) console.log(`${url.pathname}: load ${Math.round(performance.now() - t)} ms`);
    // nor one that shows a file (an image, a configuration) in the browser
    if (res?.status() === 200 && !(res.headers()["content-type"] ?? "").startsWith("text/html")) continue;
    visited.push(url.pathname + url.search);
    const landed = new URL(page.url());
    if (landed.pathname !== url.pathname) out.problems.push(`${label} ${url.pathname}${url.search}: landed on ${landed.pathname}${landed.search}`);
    if (again) {
      // the same page as the user's but for the menu's Admin link (checked on the admin pages): status and links only
      visited.pop();
      skipped.push(url.pathname + url.search);
      if (res?.status() !== 200) out.problems.push(`${label} ${url.pathname}${url.search}: HTTP ${res?.status()}, expected 200`);
    } else {
      await checkPage(page, url, res?.status(), label, out, 200, before);
      if (role === "user") checkedAsUser[width].add(shapeOf(url));
    }
    for (const link of await linksOf(page)) {
      const shape = shapeOf(link);
      if (shapes.has(shape)) continue;
      shapes.add(shape);
      queue.push(link);
    }
  }
  await page.close();
  if (out.notes.length) console.log(`${label}: not failing (moderate/minor, allowed, reflow):\n  ${out.notes.join("\n  ")}`);
  console.log(`${label}: ${visited.length} pages checked: ${visited.join(" ")}`);
  if (skipped.length) console.log(`${label}: ${skipped.length} pages opened, checked in the user's crawl: ${skipped.join(" ")}`);
  return { visited: [...visited, ...skipped], checked: visited, ...out, leftInQueue: queue.length };
}

/** Presses Tab (or Shift+Tab) until the focused element matches `selector`; fails after `max` presses. */
async function tabTo(page: Page, selector: string, { back = false, max = 80 } = {}) {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((sel) => !!document.activeElement?.matches(sel), selector)) return;
    await page.keyboard.press(back ? "Shift+Tab" : "Tab");
  }
  throw new Error(`${selector} not reached with ${back ? "Shift+Tab" : "Tab"} in ${max} presses`);
}

describe.skipIf(!hasChromium)("accessibility: every page in Chromium, axe, the keyboard", () => {
  beforeAll(async () => {
    site = await startBrowserSite({ artifacts: ARTIFACTS, user: USER });
    origin = site.origin;
    await seed("user", USER);
    await seed("admin", ADMIN);
  }, 120_000);

  afterAll(async () => {
    for (const c of contexts.values()) await c.close().catch(() => {});
    await site?.close();
  }, 60_000);

  for (const role of ["user", "admin"] as const) {
    for (const width of ["desktop", "phone"] as const) {
      test(`as the ${role}, at ${width} width: every page reachable from the dashboard passes axe (no serious or critical), is a 200, stays on loopback, has no script error and a visible focus`, async () => {
        const { visited, checked, problems, leftInQueue } = await crawl(role, width);
        expect(leftInQueue).toBe(0); // the crawl's bound was not reached
        expect(visited).toContain("/user/dashboard");
        expect(visited).toContain("/user/albums");
        expect(visited.some((p) => /^\/user\/images\/[^/]+$/.test(p))).toBe(true); // an image's own page
        if (role === "admin") expect(checked.filter((p) => p.startsWith("/user/admin")).length).toBeGreaterThanOrEqual(8); // the admin menu's pages
        expect(problems.join("\n")).toBe("");
      }, 240_000);
    }
  }

  test("the sign-in page, the sign-up page (registration enabled) and a 404 page pass axe, at both widths", async () => {
    const out: PageCheck = { problems: [], notes: [] };
    await site.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
    try {
      for (const width of ["desktop", "phone"] as const) {
        const context = await site.newContext({ viewport: WIDTHS[width] });
        const page = await context.newPage();
        page.on("pageerror", (e) => site.pageErrors.push(`${page.url()}: ${e.message}`));
        page.on("console", (m) => {
          // the 404 page's own status is logged by Chromium as a failed resource
          if (m.type() === "error" && !/status of 404/.test(m.text())) site.pageErrors.push(`${page.url()}: console: ${m.text()}`);
        });
        for (const [path, status] of [
          ["/user/login", 200],
          ["/user/register", 200],
        ] as const) {
          const before = mark();
          const res = await page.goto(`${origin}${path}`);
          await checkPage(page, new URL(page.url()), res?.status(), `anonymous-${width}`, out, status, before);
        }
        // a 404, signed in (the layout with its menu) and not
        let before = mark();
        let res = await page.goto(`${origin}/user/no-such-page`);
        await checkPage(page, new URL(page.url()), res?.status(), `anonymous-${width}`, out, 404, before);
        // and signed in: the layout with its menu (the signed-in user's cookies in this context)
        await context.addCookies(await (await signedIn("user", width)).cookies());
        before = mark();
        res = await page.goto(`${origin}/user/images/no-such-image`);
        await checkPage(page, new URL(page.url()), res?.status(), `user-${width}`, out, 404, before);
        // in the page (on a phone it is inside the closed menu, which getByRole counts as hidden)
        expect(await page.locator('header nav[aria-label="User center"]').count()).toBe(1);
        await context.close();
      }
    } finally {
      await site.admin("PATCH", "/api/admin/settings", { registration_enabled: false });
    }
    if (out.notes.length) console.log(`public pages: not failing (moderate/minor, reflow):\n  ${out.notes.join("\n  ")}`);
    expect(out.problems.join("\n")).toBe("");
  }, 120_000);

  test("keyboard only: an album is created on /user/albums with Tab, typing and Enter", async () => {
    const page = await (await signedIn("user", "desktop")).newPage();
    await page.goto(`${origin}/user/albums`);
    await tabTo(page, "input#name");
    await page.keyboard.type("Made with the keyboard");
    await Promise.all([page.waitForLoadState("load"), page.waitForURL(/\/user\/albums/), page.keyboard.press("Enter")]);
    await page.getByText("Made with the keyboard", { exact: false }).first().waitFor();
    // the album is on the page, as a rename field's value or text
    const names = await page.locator("input[name=name]").evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value));
    const text = await page.locator("main").textContent();
    expect(names.includes("Made with the keyboard") || !!text?.includes("Made with the keyboard")).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, "keyboard-album-created.png"), fullPage: true });
    await page.close();
  }, 60_000);

  test("keyboard only: the account's email is changed with Tab, Shift+Tab, typing and Space on the button", async () => {
    const page = await (await signedIn("user", "desktop")).newPage();
    await page.goto(`${origin}/user/account`);
    // past the email field to its password, then back with Shift+Tab
    await tabTo(page, "input#email_password");
    await page.keyboard.type(PASSWORD);
    await tabTo(page, "input#email", { back: true, max: 5 });
    await page.keyboard.type("ally.keyboard@example.com");
    await tabTo(page, 'form[action$="/account/email"] button[type=submit]', { max: 5 });
    await Promise.all([page.waitForEvent("load"), page.keyboard.press("Space")]);
    const user = await site.admin("GET", `/api/admin/users/${ids.user}`);
    expect(user.email).toBe("ally.keyboard@example.com");
    await page.screenshot({ path: join(ARTIFACTS, "keyboard-email-changed.png"), fullPage: true });
    await page.close();
  }, 60_000);

  test("keyboard only: the admin settings form turns registration on (Tab, Space on the checkbox, Enter on the button)", async () => {
    const page = await (await signedIn("admin", "desktop")).newPage();
    expect((await site.admin("GET", "/api/admin/settings")).registration_enabled).toBe(false);
    expect((await page.goto(`${origin}/user/admin/settings`))?.status()).toBe(200);
    await tabTo(page, "input#settings-registration-enabled");
    await page.keyboard.press("Space");
    expect(await page.locator("input#settings-registration-enabled").isChecked()).toBe(true);
    // past the settings that follow the switch (the site's identity, limits) to the form's button
    await tabTo(page, "main form button[type=submit]", { max: 60 });
    await Promise.all([page.waitForURL(/\/user\/admin\/settings\?done=saved/), page.keyboard.press("Enter")]);
    await page.getByRole("status").filter({ hasText: "Settings saved." }).waitFor();
    try {
      expect((await site.admin("GET", "/api/admin/settings")).registration_enabled).toBe(true);
      await page.screenshot({ path: join(ARTIFACTS, "keyboard-admin-settings.png"), fullPage: true });
    } finally {
      await site.admin("PATCH", "/api/admin/settings", { registration_enabled: false });
    }
    await page.close();
  }, 60_000);

  test("keyboard only: the admin users page's search finds the user (Tab, typing, Enter)", async () => {
    const page = await (await signedIn("admin", "desktop")).newPage();
    expect((await page.goto(`${origin}/user/admin/users`))?.status()).toBe(200);
    await tabTo(page, "input#q");
    await page.keyboard.type("ally");
    await Promise.all([page.waitForURL(/[?&]q=ally/), page.keyboard.press("Enter")]);
    const text = (await page.locator("main").textContent()) ?? "";
    expect(text).toContain("ally.keyboard@example.com"); // the email the keyboard test above set
    expect(text).not.toContain("root@example.com");
    await page.screenshot({ path: join(ARTIFACTS, "keyboard-admin-users-search.png"), fullPage: true });
    await page.close();
  }, 60_000);

  test("no page asked for anything beyond loopback; no page script failed", () => {
    expect(site.foreign).toEqual([]);
    expect(site.pageErrors).toEqual([]);
  });
});
