/**
 * The account page and small things in a real browser (Debian's Chromium through playwright-core): dates
 * rewritten to the viewer's time zone (a browser in Asia/Tokyo) and left in UTC without JavaScript; the sessions list
 * and ending another session; the upload page refusing a file over the group's limit, or of another type, before
 * sending it and without a broken preview; the copy buttons on a phone-sized window without the Clipboard API (a
 * selected read-only field, announced) with 44×44 px touch targets. Every request that leaves loopback is blocked
 * and fails the test. Screenshots go to test/browser/artifacts/account/ (git-ignored). Skipped where
 * /usr/bin/chromium is missing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { type BrowserSite, CHROMIUM, hasChromium, PASSWORD, startBrowserSite } from "../support/browser-site.ts";
import { makeImage } from "../support/images.ts";

if (!hasChromium) console.warn(`test/browser/account.test.ts skipped: ${CHROMIUM} not found (apt-get install chromium)`);

const ARTIFACTS = join(import.meta.dir, "artifacts", "account");

let site: BrowserSite;
let origin: string;
const contexts: BrowserContext[] = [];
const pageErrors: string[] = [];

const shot = (p: Page, name: string) => p.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

/** A browser context of the site (blocking as the site's), its script errors recorded. */
async function newContext(options: Parameters<BrowserSite["newContext"]>[0]) {
  const context = await site.newContext(options);
  context.on("page", (p) => {
    p.on("pageerror", (e) => pageErrors.push(`${p.url()}: ${e.message}`));
    p.on("console", (m) => {
      if (m.type() === "error" && !/status of (400|401|403|404|422|429)/.test(m.text())) pageErrors.push(`${p.url()}: console: ${m.text()}`);
    });
  });
  contexts.push(context);
  return context;
}

async function signIn(p: Page) {
  await p.goto(`${origin}/user/login`);
  await p.getByLabel("Username or email").fill("carol");
  await p.getByLabel("Password").fill(PASSWORD);
  await Promise.all([p.waitForURL(`${origin}/user/dashboard`), p.getByRole("button", { name: "Sign in" }).click()]);
}

/** Every visible form field has a label a screen reader reads (the fallback fields too). */
async function expectLabelled(p: Page) {
  const unlabelled = await p
    .locator("input:not([type=hidden]), select, textarea")
    .evaluateAll((els) =>
      els.filter((e) => !((e as HTMLInputElement).labels?.length || e.getAttribute("aria-label") || e.getAttribute("aria-labelledby"))).map((e) => e.outerHTML),
    );
  expect(unlabelled).toEqual([]);
}

/** What a UTC instant reads as in Tokyo (UTC+9, no daylight saving time). */
const inTokyo = (iso: string) => `${new Date(new Date(iso).getTime() + 9 * 3_600_000).toISOString().replace("T", " ").slice(0, 16)} GMT+9`;

describe.skipIf(!hasChromium)("the account page and small things in Chromium", () => {
  beforeAll(async () => {
    site = await startBrowserSite({ artifacts: ARTIFACTS, user: { username: "carol", email: "carol@example.com", name: "Carol" } });
    origin = site.origin;
  }, 120_000);

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await site?.close();
  }, 60_000);

  test("dates are in the viewer's time zone (Asia/Tokyo), named; without JavaScript they stay in UTC and say so", async () => {
    const tokyo = await newContext({ viewport: { width: 1280, height: 860 }, timezoneId: "Asia/Tokyo", locale: "en-US" });
    const page = await tokyo.newPage();
    await signIn(page);
    // an unlabelled token, for the tokens page's dates
    await page.goto(`${origin}/user/tokens`);
    await page.getByRole("button", { name: "Create token" }).click();
    await page.getByTestId("new-token").waitFor();
    for (const path of ["/user/account", "/user/tokens"]) {
      await page.goto(`${origin}${path}`);
      const times = await page
        .locator("main time[datetime]")
        .evaluateAll((els) => els.map((e) => ({ iso: e.getAttribute("datetime")!, text: e.textContent!, title: e.getAttribute("title")! })));
      expect(times.length, path).toBeGreaterThan(0);
      for (const t of times) {
        expect(t.text).toBe(inTokyo(t.iso));
        expect(t.title).toBe(`${t.iso.slice(0, 10)} ${t.iso.slice(11, 16)} UTC`);
      }
    }
    // the unlabelled token is named by its id and date, in the list and in the confirmation
    const row = page.locator("tbody tr").first();
    await expect(row.locator("td").first().textContent()).resolves.toMatch(/^Token #\d+, created \d{4}-\d\d-\d\d \d\d:\d\d GMT\+9$/);
    let question = "";
    page.once("dialog", (d) => {
      question = d.message();
      return d.dismiss();
    });
    await row.getByRole("button", { name: /^Revoke Token #\d+, created / }).click();
    await page.waitForTimeout(200);
    expect(question).toMatch(/^Revoke Token #\d+, created \d{4}-\d\d-\d\d \d\d:\d\d UTC\? Uploaders using it will get 401\.$/);
    await shot(page, "01-tokens-tokyo");
    await page.goto(`${origin}/user/account`);
    await shot(page, "02-account-tokyo");

    // the same pages without JavaScript: the server's UTC text, and the no-script revoke confirmation
    const state = await tokyo.storageState();
    const noScript = await newContext({ viewport: { width: 1280, height: 860 }, timezoneId: "Asia/Tokyo", javaScriptEnabled: false, storageState: state });
    const plain = await noScript.newPage();
    await plain.goto(`${origin}/user/account`);
    const texts = await plain.locator("main time[datetime]").allTextContents();
    expect(texts.length).toBeGreaterThan(0);
    for (const text of texts) expect(text).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    await plain.goto(`${origin}/user/tokens`);
    await plain
      .locator("tbody tr")
      .first()
      .getByRole("button", { name: /^Revoke Token #/ })
      .click();
    await plain.getByTestId("token-name").waitFor();
    await expect(plain.getByTestId("token-name").textContent()).resolves.toMatch(/^Token #\d+, created \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    await shot(plain, "03-revoke-without-script");
    await plain.getByRole("link", { name: "Cancel" }).click();
    await plain.waitForURL(`${origin}/user/tokens`);
  }, 90_000);

  test("the account page lists the sessions, marks this one, and ends another", async () => {
    const desk = await newContext({ viewport: { width: 1280, height: 860 } });
    const other = await newContext({
      viewport: { width: 1280, height: 860 },
      userAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    });
    const page = await desk.newPage();
    const phone = await other.newPage();
    await signIn(page);
    await signIn(phone);
    await page.goto(`${origin}/user/account`);
    const current = page.locator("tr.current");
    await expect(current.locator("strong").textContent()).resolves.toBe("Chrome on Linux");
    await expect(current.getByText("this session").count()).resolves.toBe(1);
    const iphone = page.locator("tbody tr", { hasText: "Safari on iPhone" });
    await expect(iphone.locator('td[data-label="Address"]').textContent()).resolves.toBe("127.0.0.1");
    await shot(page, "04-sessions");
    await Promise.all([page.waitForURL(`${origin}/user/account?ended`), iphone.getByRole("button", { name: /^End session of Safari on iPhone/ }).click()]);
    await page.getByText("That session has ended").waitFor();
    await expect(page.locator("tbody tr", { hasText: "Safari on iPhone" }).count()).resolves.toBe(0);
    await phone.reload();
    expect(new URL(phone.url()).pathname).toBe("/user/login");
    await shot(page, "05-session-ended");
  }, 90_000);

  test("the upload page refuses a file over the limit or of another type before sending it, with no broken preview", async () => {
    await site.admin("PATCH", "/api/admin/groups/1", { max_file_size_kb: 1024 });
    const context = await newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    await signIn(page);
    const sent: string[] = [];
    page.on("request", (r) => {
      if (r.method() === "POST") sent.push(new URL(r.url()).pathname);
    });
    await page.goto(`${origin}/user/upload`);
    await expect(page.getByTestId("max-size").textContent()).resolves.toBe("1.0 MB");
    const big = Buffer.alloc(1536 * 1024 + 100, 7); // 1.5 MB
    await page.getByLabel("Choose images, or drop them here").setInputFiles([
      { name: "huge.png", mimeType: "image/png", buffer: big },
      { name: "drawing.svg", mimeType: "image/svg+xml", buffer: Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'/>") },
    ]);
    const huge = page.locator('.upload.failed[data-name="huge.png"]');
    await huge.waitFor();
    await expect(huge.locator(".state").textContent()).resolves.toBe("Refused: the file is 1.5 MB; the limit is 1.0 MB. It was not sent.");
    await expect(huge.locator(".name").textContent()).resolves.toBe("huge.png (1.5 MB)");
    await expect(huge.locator("img").count()).resolves.toBe(0);
    const svg = page.locator('.upload.failed[data-name="drawing.svg"]');
    await expect(svg.locator(".state").textContent()).resolves.toMatch(/^Refused: \.svg files are not accepted; allowed are \.jpg, .*It was not sent\.$/);
    await expect(svg.locator("img").count()).resolves.toBe(0);
    await page.waitForTimeout(300);
    expect(sent).toEqual([]); // neither the file nor a request for an upload token

    // a file within the limits still goes, and one the browser cannot show loses its broken preview
    const png = Buffer.from(await makeImage("png", 64, 48, "#3366cc"));
    await page.getByLabel("Choose images, or drop them here").setInputFiles([
      { name: "fine.png", mimeType: "image/png", buffer: png },
      { name: "fake.png", mimeType: "image/png", buffer: Buffer.from("not an image at all") },
    ]);
    await page.locator('.upload.done[data-name="fine.png"]').waitFor();
    await page.locator('.upload.failed[data-name="fake.png"]').waitFor();
    await expect(page.locator('.upload[data-name="fake.png"] img').count()).resolves.toBe(0);
    const sizes = await page.locator(".upload .name").allTextContents();
    for (const s of sizes) expect(s).toMatch(/\((<0\.1|\d+\.\d) MB\)$/); // one unit on the whole page
    expect(sent).toContain("/api/v1/upload");
    await shot(page, "06-upload-refused");
    await site.admin("PATCH", "/api/admin/groups/1", { max_file_size_kb: 10240 });
  }, 90_000);

  test("on a phone without the Clipboard API, Copy selects the text in a read-only field and says so; touch targets are 44 px", async () => {
    const context = await newContext({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, deviceScaleFactor: 2 });
    // as on plain http or an older browser: no Clipboard API, and the old copy command refused
    await context.addInitScript(() => {
      Object.defineProperty(Navigator.prototype, "clipboard", { get: () => undefined, configurable: true });
      document.execCommand = () => false;
    });
    const page = await context.newPage();
    await signIn(page);
    await page.goto(`${origin}/user/tokens`);
    await page.getByLabel("Label (optional)").fill("phone uploader");
    await page.getByRole("button", { name: "Create token" }).click();
    const token = await page.getByTestId("new-token").inputValue();
    expect(token).toMatch(/^\d+\|/);
    const copy = page.locator(".secret").getByRole("button", { name: "Copy" });
    const box = (await copy.boundingBox())!;
    expect(box.width).toBeGreaterThanOrEqual(44);
    expect(box.height).toBeGreaterThanOrEqual(44);
    const selected = () =>
      page.evaluate(() => {
        const active = document.activeElement as HTMLInputElement;
        return { id: active.id, cls: active.className, readOnly: active.readOnly, value: active.value, start: active.selectionStart, end: active.selectionEnd };
      });
    // the token is already in a read-only field beside the button: that field is selected, no second one is added
    await copy.tap();
    await page.locator("#announcer").filter({ hasText: "token is selected in the field next to the button" }).waitFor();
    expect(await selected()).toEqual({ id: "new-token", cls: "", readOnly: true, value: token, start: 0, end: token.length });
    expect(await page.locator(".copy-fallback").count()).toBe(0);

    // an upload token is shown as text only: Copy puts it in a read-only field of its own, labelled, selected
    await page.getByLabel("How many").fill("1");
    await page.getByRole("button", { name: "Issue tokens" }).click();
    const item = page.getByTestId("temporary-tokens").locator("li").first();
    const uploadToken = (await item.locator("code").textContent())!;
    await item.getByRole("button", { name: "Copy" }).tap();
    await page.locator("#announcer").filter({ hasText: "upload token is selected in the field next to the button" }).waitFor();
    const field = page.getByRole("textbox", { name: "upload token to copy" });
    await expect(field.isVisible()).resolves.toBe(true);
    expect(await selected()).toEqual({ id: "", cls: "copy-fallback", readOnly: true, value: uploadToken, start: 0, end: uploadToken.length });
    await expectLabelled(page);
    // every revoke button and copy button is a touch target of 44×44 px at least
    for (const button of await page.locator("button.copy, button.small").all()) {
      const b = (await button.boundingBox())!;
      expect(Math.min(b.width, b.height)).toBeGreaterThanOrEqual(44);
    }
    // the page still fits the screen
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await shot(page, "07-phone-copy-fallback");

    // the account page on the phone: fits, its buttons are touch targets too
    await page.goto(`${origin}/user/account`);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0);
    for (const button of await page.locator("main button.small").all()) {
      const b = (await button.boundingBox())!;
      expect(Math.min(b.width, b.height)).toBeGreaterThanOrEqual(44);
    }
    await shot(page, "08-phone-account");
  }, 90_000);

  test("no request left loopback and no page script failed", () => {
    expect(site.foreign).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});

if (!hasChromium) {
  test.skip(`account page in Chromium (skipped: ${CHROMIUM} not found)`, () => {});
}
