/**
 * Passkeys in a real browser: Debian's Chromium through playwright-core, with a virtual authenticator added through
 * the DevTools protocol's WebAuthn domain (a platform authenticator that keeps discoverable credentials and verifies
 * its user). Registered from the Security page, then: passwordless sign-in, the second factor after a password, a
 * removed passkey refused, and a signature counter that goes backwards refused. The site is served on `localhost`
 * (WebAuthn refuses an IP address as relying party id); every request that leaves loopback is blocked and fails the
 * test. Skipped where /usr/bin/chromium is missing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { and, eq } from "drizzle-orm";
import type { BrowserContext, CDPSession, Page } from "playwright-core";
import { auditLog, passkeys, sessions, users } from "../../src/db/schema.ts";
import { type BrowserSite, CHROMIUM, hasChromium, PASSWORD, startBrowserSite } from "../support/browser-site.ts";

if (!hasChromium) console.warn(`test/browser/passkeys.test.ts skipped: ${CHROMIUM} not found (apt-get install chromium)`);

const ARTIFACTS = join(import.meta.dir, "artifacts", "passkeys");
let site: BrowserSite;
let origin: string;
let context: BrowserContext;
let page: Page;
let cdp: CDPSession;
let authenticatorId: string;
let userId: number;

beforeAll(async () => {
  if (!hasChromium) return;
  site = await startBrowserSite({
    artifacts: ARTIFACTS,
    user: { username: "pat", email: "pat@example.com", name: "Pat" },
    ignoreConsole: /status of (401|429)/,
  });
  origin = site.origin.replace("127.0.0.1", "localhost");
  site.ctx.deps.config.baseUrl = origin;
  const [row] = await site.ctx.db.select().from(users).where(eq(users.username, "pat"));
  userId = row!.id;
  context = site.context;
  page = await context.newPage();
  cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  ({ authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  }));
}, 120_000);

afterAll(async () => {
  await site?.close();
});

const sessionsOfPat = () => site.ctx.db.select().from(sessions).where(eq(sessions.userId, userId));

async function signOut() {
  await context.clearCookies();
}

async function passwordSignIn() {
  await page.goto(`${origin}/user/login`);
  await page.getByLabel("Username or email").fill("pat");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
}

describe.skipIf(!hasChromium)("passkeys in Chromium with a virtual authenticator", () => {
  test("a passkey is added from the Security page, named, and audited", async () => {
    await passwordSignIn();
    await page.waitForURL(`${origin}/user/dashboard`);
    await page.goto(`${origin}/user/security`);
    await page.getByLabel("Name", { exact: true }).fill("Laptop");
    await Promise.all([page.waitForURL(/\/user\/security\?added=Laptop$/), page.getByRole("button", { name: "Add a passkey" }).click()]);
    await expect(page.getByText("The passkey “Laptop” is added.")).toBeTruthy();
    expect(await page.locator("table.passkeys tbody tr").count()).toBe(1);
    const [stored] = await site.ctx.db.select().from(passkeys).where(eq(passkeys.userId, userId));
    expect(stored).toMatchObject({ name: "Laptop", lastUsedAt: null });
    expect(stored!.credentialId).toMatch(/^[\w-]+$/);
    const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
    expect(credentials.length).toBe(1);
    expect(credentials[0]!.credentialId.replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")).toBe(stored!.credentialId);
    const audit = await site.ctx.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.action, "account.passkey.add"), eq(auditLog.targetId, String(userId))));
    expect(audit.length).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, "security.png"), fullPage: true });
  }, 60_000);

  test("passwordless sign-in with the passkey: a session that says so, with a new secret", async () => {
    await signOut();
    await page.goto(`${origin}/user/login/passkey`);
    await Promise.all([page.waitForURL(`${origin}/user/dashboard`), page.getByRole("button", { name: "Sign in with a passkey" }).click()]);
    const newest = (await sessionsOfPat()).sort((a, b) => b.id - a.id)[0]!;
    expect(newest.method).toBe("passkey");
    const [stored] = await site.ctx.db.select().from(passkeys).where(eq(passkeys.userId, userId));
    expect(stored!.lastUsedAt).toBeInstanceOf(Date);
    expect(stored!.counter).toBeGreaterThan(0);
  }, 60_000);

  test("after a password, the passkey is the second factor; the pending cookie is not the session's", async () => {
    await signOut();
    await passwordSignIn();
    await page.waitForURL(`${origin}/user/login/second-factor`);
    const pending = (await context.cookies()).find((c) => c.name === "ih_signin")!.value;
    expect((await context.cookies()).find((c) => c.name === "ih_session")).toBeUndefined();
    await Promise.all([page.waitForURL(`${origin}/user/dashboard`), page.getByRole("button", { name: "Use a passkey" }).click()]);
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === "ih_session")!.value;
    expect(session).not.toBe(pending);
    expect(cookies.find((c) => c.name === "ih_signin")).toBeUndefined();
    const newest = (await sessionsOfPat()).sort((a, b) => b.id - a.id)[0]!;
    expect(newest.method).toBe("password+passkey");
  }, 60_000);

  test("a counter that goes backwards is refused", async () => {
    const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
    const credential = credentials[0]!;
    expect(credential.signCount).toBeGreaterThan(1);
    // the same key, as a clone that has signed less than the original would
    await cdp.send("WebAuthn.removeCredential", { authenticatorId, credentialId: credential.credentialId });
    await cdp.send("WebAuthn.addCredential", { authenticatorId, credential: { ...credential, signCount: 0 } });
    await signOut();
    const before = (await sessionsOfPat()).length;
    await page.goto(`${origin}/user/login/passkey`);
    await page.getByRole("button", { name: "Sign in with a passkey" }).click();
    const error = page.locator("[data-passkey-error]");
    await error.waitFor({ state: "visible" });
    expect(await error.textContent()).toContain("counter went backwards");
    expect(page.url()).toBe(`${origin}/user/login/passkey`);
    expect((await sessionsOfPat()).length).toBe(before);
    expect((await context.cookies()).find((c) => c.name === "ih_session")).toBeUndefined();
    // the authenticator back in step with the site
    await cdp.send("WebAuthn.removeCredential", { authenticatorId, credentialId: credential.credentialId });
    await cdp.send("WebAuthn.addCredential", { authenticatorId, credential: { ...credential, signCount: credential.signCount + 10 } });
  }, 60_000);

  test("a removed passkey signs nobody in", async () => {
    await signOut();
    await page.goto(`${origin}/user/login/passkey`);
    await page.getByRole("button", { name: "Sign in with a passkey" }).click();
    await page.waitForURL(`${origin}/user/dashboard`, { timeout: 5000 }).catch(async () => {
      throw new Error(`no sign-in: ${await page.locator("[data-passkey-error]").textContent()}`);
    });
    await page.goto(`${origin}/user/security`);
    await Promise.all([page.waitForURL(/\/user\/security\?removed=Laptop$/), page.getByRole("button", { name: "Remove the passkey Laptop" }).click()]);
    expect(await site.ctx.db.select().from(passkeys).where(eq(passkeys.userId, userId))).toEqual([]);
    const audit = await site.ctx.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.action, "account.passkey.remove"), eq(auditLog.targetId, String(userId))));
    expect(audit.length).toBe(1);
    await signOut();
    const before = (await sessionsOfPat()).length;
    await page.goto(`${origin}/user/login/passkey`);
    await page.getByRole("button", { name: "Sign in with a passkey" }).click();
    const error = page.locator("[data-passkey-error]");
    await error.waitFor({ state: "visible" });
    expect(await error.textContent()).toContain("not registered here");
    expect((await sessionsOfPat()).length).toBe(before);
    // and a password alone signs in again: no second factor is left
    await passwordSignIn();
    await page.waitForURL(`${origin}/user/dashboard`);
  }, 60_000);

  test("no request left loopback, and no page script failed", () => {
    expect(site.foreign).toEqual([]);
    expect(site.pageErrors).toEqual([]);
  });
});
