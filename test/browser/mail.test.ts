/**
 * Mail in a real browser (Debian's Chromium through playwright-core) against a local SMTP server started here: the
 * "Forgot your password?" path from the sign-in page for a known and an unknown address (the same page, the same
 * status, no mail for the unknown one), the mailed link followed to set a new password and sign in with it, the link
 * dead after its use; and a sign-up by invitation while registration is closed with email verification on, the
 * mailed link confirmed in the browser. Every request that leaves loopback is blocked and fails the test.
 * Screenshots go to test/browser/artifacts/mail/ (git-ignored). Skipped where /usr/bin/chromium is missing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import type { Page } from "playwright-core";
import { users } from "../../src/db/schema.ts";
import { servicesOf } from "../../src/services/index.ts";
import { type BrowserSite, CHROMIUM, hasChromium, PASSWORD, startBrowserSite } from "../support/browser-site.ts";
import { type LocalSmtp, startLocalSmtp } from "../support/smtp.ts";

if (!hasChromium) console.warn(`test/browser/mail.test.ts skipped: ${CHROMIUM} not found (apt-get install chromium)`);

const ARTIFACTS = join(import.meta.dir, "artifacts", "mail");
let site: BrowserSite;
let smtp: LocalSmtp;

const shot = (p: Page, name: string) => p.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
const settle = () => servicesOf(site.ctx.deps).mail.settle();
const mainText = (p: Page) => p.locator("main").innerText();
const siteLink = (links: string[]) => links.find((l) => l.startsWith(`${site.origin}/user/`))!;

/** From the sign-in page to the reset request for `email`: the answer's status and the page's text. */
async function askReset(p: Page, email: string) {
  await p.goto(`${site.origin}/user/login`);
  await Promise.all([p.waitForURL(`${site.origin}/user/forgot`), p.getByRole("link", { name: "Forgot your password?" }).click()]);
  await p.getByLabel("Email").fill(email);
  const [answer] = await Promise.all([
    p.waitForResponse((r) => r.url() === `${site.origin}/user/forgot` && r.request().method() === "POST"),
    p.getByRole("button", { name: "Send the link" }).click(),
  ]);
  await p.waitForLoadState();
  return { status: answer.status(), text: await mainText(p) };
}

describe.skipIf(!hasChromium)("mail in Chromium", () => {
  beforeAll(async () => {
    smtp = await startLocalSmtp({ username: "relay", password: "relay-secret" });
    site = await startBrowserSite({ artifacts: ARTIFACTS, user: { username: "dora", email: "dora@example.com", name: "Dora" } });
    await site.admin("PATCH", "/api/admin/mail", {
      smtp_host: "127.0.0.1",
      smtp_port: smtp.port,
      smtp_security: "none",
      smtp_username: "relay",
      smtp_password: "relay-secret",
      mail_from: "images@example.test",
    });
    await site.admin("PATCH", "/api/admin/settings", { site_name: "Dora's Pictures" });
  }, 120_000);

  afterAll(async () => {
    await site?.close();
    await smtp?.stop();
  }, 60_000);

  test("a reset from the sign-in page: the same answer for a known and an unknown address, a link only to the account", async () => {
    const page = await site.context.newPage();
    const known = await askReset(page, "dora@example.com");
    await shot(page, "reset-requested");
    const unknown = await askReset(page, "nobody-here@example.com");
    expect(unknown).toEqual(known);
    expect(known.status).toBe(200);
    expect(known.text).toContain("If an account has this address, a link to reset its password is on its way.");
    await settle();
    expect(smtp.mails.map((m) => m.to)).toEqual(["dora@example.com"]);
    const [mail] = smtp.mails;
    expect(mail!.fromName).toBe("Dora's Pictures");
    expect(mail!.subject).toBe("Reset your password on Dora's Pictures");
    // the mail speaks of the account it was sent to, nothing else
    expect(mail!.text).not.toContain("nobody-here");

    const link = siteLink(mail!.links);
    await page.goto(link);
    await page.getByLabel("New password", { exact: true }).fill("a fresh long password");
    await page.getByLabel("New password, again").fill("a fresh long password");
    await page.getByRole("button", { name: "Set password" }).click();
    await page.getByText("Your password is set.").waitFor();
    await page.goto(`${site.origin}/user/login`);
    await page.getByLabel("Username or email").fill("dora");
    await page.getByLabel("Password").fill("a fresh long password");
    await Promise.all([page.waitForURL(`${site.origin}/user/dashboard`), page.getByRole("button", { name: "Sign in" }).click()]);
    await shot(page, "signed-in-after-reset");
    const again = await page.goto(link);
    expect(again!.status()).toBe(404);
    expect(await mainText(page)).toContain("This link is not valid");
    await page.close();
    expect(site.foreign).toEqual([]);
    expect(site.pageErrors.filter((e) => !/status of (404|429)/.test(e))).toEqual([]);
  }, 120_000);

  test("an invitation while registration is closed, then the address confirmed from the mailed link", async () => {
    await site.admin("PATCH", "/api/admin/mail", { email_verification: true });
    const made = await site.admin("POST", "/api/admin/invitations", { max_uses: 1, expires_in: 3600, note: "Erin" });
    const context = await site.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    expect((await page.goto(`${site.origin}/user/register`))!.status()).toBe(404);
    await page.goto(made.url);
    expect(await page.getByLabel("Invitation code").inputValue()).toBe(new URL(made.url).searchParams.get("invite")!);
    await page.getByLabel("Username").fill("erin");
    await page.getByLabel("Email").fill("erin@example.com");
    await page.getByLabel("Password").fill(PASSWORD);
    await Promise.all([page.waitForURL(`${site.origin}/user/verify`), page.getByRole("button", { name: "Create account" }).click()]);
    expect(await mainText(page)).toContain("Confirm your email address erin@example.com before your first upload");
    await shot(page, "verify-needed");
    await settle();
    const mail = smtp.to("erin@example.com")[0]!;
    expect(mail.subject).toBe("Confirm your email address on Dora's Pictures");
    await page.goto(siteLink(mail.links));
    await page.getByRole("button", { name: "Confirm my address" }).click();
    await page.getByText("Your email address is confirmed: you can upload.").waitFor();
    const [erin] = await site.ctx.db.select().from(users).where(eq(users.username, "erin"));
    expect(erin!.emailVerified).toBe(true);
    // the invitation had one use
    const other = await context.newPage();
    expect((await other.goto(made.url))!.status()).toBe(404);
    await context.close();
    expect(site.foreign).toEqual([]);
  }, 120_000);
});
