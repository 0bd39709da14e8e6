/**
 * Every form works by keyboard: in headless Chromium, driven with Tab, Shift+Tab, typing, arrows, Enter and Space
 * only (no clicks), and the outcome checked where it is stored: signing in; the upload page's file picker reached and
 * opened, a file chosen and sent; an API token made; an album made; images selected in the list and made private (the
 * bulk buttons wait for a selection); the admin settings' site name saved; the account menu's theme and language;
 * the phone navigation menu. Skipped, saying so, where /usr/bin/chromium is missing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { BrowserContext, FileChooser, Page } from "playwright-core";
import { type BrowserSite, CHROMIUM, hasChromium, PASSWORD, startBrowserSite } from "../support/browser-site.ts";
import { makeImage } from "../support/images.ts";

if (!hasChromium) console.warn(`test/browser/keyboard.test.ts skipped: ${CHROMIUM} not found (apt-get install chromium)`);

const ARTIFACTS = join(import.meta.dir, "artifacts", "keyboard");
const USER = { username: "kim", email: "kim@example.com", name: "Kim Keys" };

let site: BrowserSite;
let origin: string;
let userId = 0;
let token = "";
const contexts: BrowserContext[] = [];

/** Presses Tab (or Shift+Tab) until the focused element matches `selector`; fails naming what was reached. */
async function tabTo(page: Page, selector: string, { back = false, max = 80 } = {}) {
  const seen: string[] = [];
  for (let i = 0; i < max; i++) {
    const at = await page.evaluate((sel) => {
      const el = document.activeElement;
      return {
        match: !!el?.matches(sel),
        what: el ? `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}${el.getAttribute("name") ? `[name=${el.getAttribute("name")}]` : ""}` : "none",
      };
    }, selector);
    if (at.match) return;
    seen.push(at.what);
    await page.keyboard.press(back ? "Shift+Tab" : "Tab");
  }
  throw new Error(`${selector} not reached with ${back ? "Shift+Tab" : "Tab"} in ${max} presses; focus went through ${seen.slice(-20).join(" → ")}`);
}

/**
 * Presses `key` on the focused file input until the chooser opens: under a loaded CI machine a headless Chromium
 * now and then drops the keystroke, so a lost one is pressed again (three times, 5 s each). A picker that
 * Space does not open fails all three.
 */
async function openByKey(page: Page, key: string, choosers: FileChooser[]): Promise<FileChooser> {
  for (let attempt = 0; attempt < 3; attempt++) {
    await page.keyboard.press(key);
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline) {
      const chooser = choosers.shift();
      if (chooser) return chooser;
      await page.waitForTimeout(50);
    }
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.type)).toBe("file");
  }
  throw new Error(`${key} on the focused file input opened no chooser in three presses`);
}

/** A fresh page (a context of this width) signed in by keyboard. */
async function signedInPage(viewport = { width: 1280, height: 800 }): Promise<Page> {
  const context = await site.newContext({ viewport });
  contexts.push(context);
  const page = await context.newPage();
  page.on("pageerror", (e) => site.pageErrors.push(`${page.url()}: ${e.message}`));
  await page.goto(`${origin}/user/login`);
  await tabTo(page, 'input[name="login"]');
  await page.keyboard.type(USER.username);
  await tabTo(page, 'input[name="password"]', { max: 3 });
  await page.keyboard.type(PASSWORD);
  await Promise.all([page.waitForURL(`${origin}/user/dashboard`), page.keyboard.press("Enter")]);
  return page;
}

const images = async () => (await site.admin("GET", `/api/admin/images?user_id=${userId}`)).images as { key: string; is_public: boolean }[];

describe.skipIf(!hasChromium)("every form works by keyboard", () => {
  beforeAll(async () => {
    site = await startBrowserSite({ artifacts: ARTIFACTS, user: USER });
    origin = site.origin;
    const [u] = (await site.admin("GET", `/api/admin/users?username=${USER.username}`)).users;
    userId = u.id;
    await site.admin("PATCH", `/api/admin/users/${userId}`, { role: "admin" });
    ({ token } = await site.admin("POST", `/api/admin/users/${userId}/tokens`, { label: "seed" }));
    for (const name of ["one.png", "two.png"]) {
      const form = new FormData();
      form.append("file", new File([Buffer.from(await makeImage("png", 40, 30, "#4477aa"))], name, { type: "image/png" }));
      const res = await fetch(`${origin}/api/v1/upload`, {
        method: "POST",
        body: form,
        headers: { authorization: `Bearer ${token}`, accept: "application/json" },
      });
      if (res.status !== 200) throw new Error(`upload ${name} → ${res.status} ${await res.text()}`);
    }
  }, 120_000);

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await site?.close();
  }, 60_000);

  test("sign in: Tab to the fields, type, Enter", async () => {
    const page = await signedInPage();
    expect(new URL(page.url()).pathname).toBe("/user/dashboard");
    expect(await page.locator("details.menu summary").textContent()).toContain(USER.username);
  }, 60_000);

  test("upload: the file picker is reached by Tab and opened by Space; the chosen file is sent, its address reached by Tab", async () => {
    const page = await signedInPage();
    // the page's scripts loaded and run first: the picker is asked of a settled page
    await page.goto(`${origin}/user/upload`, { waitUntil: "networkidle" });
    const before = (await images()).length;
    // the chooser is intercepted before the key is pressed, not in a race with it
    const choosers: FileChooser[] = [];
    page.on("filechooser", (c) => choosers.push(c));
    await tabTo(page, 'input[type="file"]');
    const chooser = await openByKey(page, "Space", choosers);
    await chooser.setFiles({ name: "by-keyboard.png", mimeType: "image/png", buffer: Buffer.from(await makeImage("png", 50, 40, "#aa4477")) });
    // choosing starts the upload; the result: the image's address in a field, its copy button next by Tab
    await page.waitForFunction(() => Array.from(document.querySelectorAll("input")).some((i) => /\/i\/.+\.png$/.test((i as HTMLInputElement).value)), null, {
      timeout: 20_000,
    });
    expect((await images()).length).toBe(before + 1);
    await tabTo(page, ".url-row input", { max: 10 });
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement).value)).toMatch(/\/i\/.+\.png$/);
    await page.screenshot({ path: join(ARTIFACTS, "upload.png"), fullPage: true });
  }, 60_000);

  test("tokens: a token is made with Tab, typing and Enter, and shown once", async () => {
    const page = await signedInPage();
    await page.goto(`${origin}/user/tokens`);
    const before = (await site.admin("GET", `/api/admin/users/${userId}/tokens`)).tokens.length;
    await tabTo(page, 'form[action$="/user/tokens"] input[name="label"]');
    await page.keyboard.type("Made by keyboard");
    await tabTo(page, 'form[action$="/user/tokens"] button[type="submit"]', { max: 20 });
    await Promise.all([page.waitForEvent("load"), page.keyboard.press("Enter")]);
    const tokens = (await site.admin("GET", `/api/admin/users/${userId}/tokens`)).tokens as { label: string }[];
    expect(tokens.length).toBe(before + 1);
    expect(tokens.map((t) => t.label)).toContain("Made by keyboard");
    // the new token is on the page once, to copy
    const shown = await page.locator("input[readonly], code").evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value ?? e.textContent));
    expect(shown.some((v) => typeof v === "string" && v.length >= 32)).toBe(true);
  }, 60_000);

  test("albums: an album is made with Tab, typing and Enter", async () => {
    const page = await signedInPage();
    await page.goto(`${origin}/user/albums`);
    await tabTo(page, 'form[action$="/user/albums"] input[name="name"]');
    await page.keyboard.type("Typed album");
    await Promise.all([page.waitForEvent("load"), page.keyboard.press("Enter")]);
    const names = await page.locator('input[name="name"]').evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value));
    expect(names.includes("Typed album") || ((await page.locator("main").textContent()) ?? "").includes("Typed album")).toBe(true);
  }, 60_000);

  test("images: the bulk buttons wait for a selection; Space ticks an image, Tab and Enter make it private", async () => {
    const page = await signedInPage();
    await page.goto(`${origin}/user/images`);
    const privateButton = 'form[data-bulk] button[formaction$="/images/visibility"][value="private"]';
    expect(await page.locator(privateButton).isDisabled()).toBe(true);
    const box = 'input[type="checkbox"][name^="image_"]';
    await tabTo(page, box);
    const key = (await page.evaluate(() => document.activeElement?.getAttribute("name")))!.slice("image_".length);
    await page.keyboard.press("Space");
    expect(await page.locator(`${box}[name="image_${key}"]`).isChecked()).toBe(true);
    expect(await page.locator(privateButton).isDisabled()).toBe(false);
    await tabTo(page, privateButton, { max: 60 });
    await Promise.all([page.waitForEvent("load"), page.keyboard.press("Enter")]);
    expect((await images()).find((i) => i.key === key)?.is_public).toBe(false);
  }, 60_000);

  test("admin settings: the site name is typed and saved with Enter", async () => {
    const page = await signedInPage();
    await page.goto(`${origin}/user/admin/settings`);
    await tabTo(page, 'input[name="site_name"]');
    await page.keyboard.press("ControlOrMeta+a");
    await page.keyboard.type("Kim's pictures");
    await tabTo(page, 'main form button[type="submit"]', { max: 60 });
    await Promise.all([page.waitForEvent("load"), page.keyboard.press("Enter")]);
    expect((await site.admin("GET", "/api/admin/settings")).site_name).toBe("Kim's pictures");
    expect(await page.title()).toContain("Kim's pictures");
  }, 60_000);

  test("the account menu: Enter opens it; Tab to the dark-mode switch and 简体中文; Enter on each; the pages follow", async () => {
    const page = await signedInPage();
    await page.goto(`${origin}/user/albums`);
    const pressIn = async (target: string) => {
      await tabTo(page, "details.menu > summary");
      await page.keyboard.press("Enter");
      expect(await page.locator("details.menu").evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true);
      await tabTo(page, target, { max: 5 });
      await Promise.all([page.waitForEvent("load"), page.keyboard.press("Enter")]);
      expect(new URL(page.url()).pathname).toBe("/user/albums");
    };
    // the switch is off on a light device, and turns dark mode on
    expect(await page.locator('details.menu button[name="theme"]').getAttribute("aria-pressed")).toBe("false");
    await pressIn('details.menu button[name="theme"]');
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe("dark");
    expect(await page.locator('details.menu button[name="theme"]').getAttribute("aria-pressed")).toBe("true");
    expect((await page.context().cookies()).find((c) => c.name === "ih_theme")?.value).toBe("dark");
    await pressIn('details.menu button[lang="zh-CN"]');
    expect(await page.evaluate(() => [document.documentElement.lang, document.documentElement.dataset.theme])).toEqual(["zh-CN", "dark"]);
    expect(await page.locator("details.menu summary").textContent()).toBe(USER.username);
    // and back: the switch off (a remembered light theme), English
    await pressIn('details.menu button[name="theme"]');
    await pressIn('details.menu button[lang="en"]');
    expect(await page.evaluate(() => [document.documentElement.lang, document.documentElement.dataset.theme])).toEqual(["en", "light"]);
    expect((await page.context().cookies()).find((c) => c.name === "ih_theme")?.value).toBe("light");
  }, 60_000);

  test("the phone navigation menu: Tab to it, Enter opens it, Tab to Albums, Enter follows", async () => {
    const page = await signedInPage({ width: 390, height: 844 });
    // a menu: its links hidden until it opens
    expect(await page.locator('details.nav a[href$="/user/albums"]').isVisible()).toBe(false);
    await tabTo(page, "details.nav > summary");
    await page.keyboard.press("Enter");
    expect(await page.locator("details.nav").evaluate((d) => (d as HTMLDetailsElement).open)).toBe(true);
    await tabTo(page, 'details.nav a[href$="/user/albums"]', { max: 12 });
    await Promise.all([page.waitForURL(`${origin}/user/albums`), page.keyboard.press("Enter")]);
    expect(await page.locator('details.nav a[aria-current="page"]').getAttribute("href")).toBe("/user/albums");
    await page.screenshot({ path: join(ARTIFACTS, "phone-menu.png") });
  }, 60_000);

  test("no page asked for anything beyond loopback; no page script failed", () => {
    expect(site.foreign).toEqual([]);
    expect(site.pageErrors).toEqual([]);
  });
});
