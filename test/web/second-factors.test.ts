/**
 * Second factors in the pages, in-process: an authenticator app set up from the Security page (QR code, secret shown
 * once, recovery codes), sign-in with a code, replays refused, wrong codes throttled and ending the pending sign-in,
 * recovery codes used once, the enrolment a site requirement leads to, how each session signed in, and the session
 * secret drawn only when a sign-in completes (no fixation). Passkeys are test/browser/passkeys.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { auditLog, pendingSignIns, recoveryCodes, sessions, totpAuthenticators } from "../../src/db/schema.ts";
import { codeAt } from "../../src/services/second-factors/totp.ts";
import { sha256Hex } from "../../src/services/secrets.ts";
import { ADMIN_TOKEN, BASE_URL, createTestContext, type TestContext } from "../support/harness.ts";
import { formTokenIn } from "../support/visitor.ts";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx?.close());

const PASSWORD = "correct horse battery";
let addressSeq = 0;

/** A browser in-process that keeps every cookie (the session's and the pending sign-in's). */
class Browser {
  jar = new Map<string, string>();
  formToken: string | undefined;
  constructor(
    readonly address = `198.51.100.${++addressSeq}`,
    readonly site: () => TestContext = () => ctx,
  ) {}
  private headers(extra: Record<string, string> = {}) {
    const cookie = [...this.jar].map(([k, v]) => `${k}=${v}`).join("; ");
    return { accept: "text/html", "x-forwarded-for": this.address, ...(cookie ? { cookie } : {}), ...extra };
  }
  private keep(res: Response) {
    for (const set of res.headers.getSetCookie()) {
      const [pair] = set.split(";");
      const name = pair!.slice(0, pair!.indexOf("="));
      const value = pair!.slice(pair!.indexOf("=") + 1);
      if (!value || /Max-Age=0/i.test(set)) this.jar.delete(name);
      else this.jar.set(name, value);
    }
  }
  async get(path: string) {
    const res = await this.site().request(path, { headers: this.headers(), redirect: "manual" });
    this.keep(res);
    if (res.headers.get("content-type")?.includes("text/html")) this.formToken = formTokenIn(await res.clone().text()) ?? this.formToken;
    return res;
  }
  async post(path: string, fields: Record<string, string> = {}, withToken = true) {
    const body = new URLSearchParams({ ...(withToken && this.formToken ? { _csrf: this.formToken } : {}), ...fields });
    const res = await this.site().request(path, {
      method: "POST",
      headers: this.headers({ "content-type": "application/x-www-form-urlencoded", origin: BASE_URL }),
      body: body.toString(),
      redirect: "manual",
    });
    this.keep(res);
    return res;
  }
  signIn(login: string, password = PASSWORD) {
    return this.post("/user/login", { login, password }, false);
  }
}

async function newUser(overrides: Record<string, unknown> = {}) {
  const u = await ctx.createUser({ password: PASSWORD, ...overrides });
  return u;
}

async function signedIn(username: string) {
  const browser = new Browser();
  const res = await browser.signIn(username);
  expect(res.status, await res.clone().text()).toBe(303);
  expect(res.headers.get("location")).toBe("/user/dashboard");
  expect((await browser.get("/user/security")).status).toBe(200);
  return browser;
}

/** Sets up an authenticator app from the Security page; returns its secret and recovery codes. */
async function enrolTotp(browser: Browser, userId: number) {
  const start = await browser.post("/user/security/totp/start");
  expect(start.status).toBe(200);
  const html = await start.text();
  expect(html).toContain("data:image/svg+xml;base64,");
  const secret = /id="totp-secret"[^>]*>([A-Z2-7]+)</.exec(html)?.[1] ?? /value="([A-Z2-7]{32})"/.exec(html)?.[1];
  expect(secret).toMatch(/^[A-Z2-7]{32}$/);
  // stored sealed, unconfirmed
  const [row] = await ctx.db.select().from(totpAuthenticators).where(eq(totpAuthenticators.userId, userId));
  expect(row!.confirmedAt).toBeNull();
  expect(row!.secret).not.toContain(secret!);
  const wrong = await browser.post("/user/security/totp/confirm", { code: codeAt(secret!, new Date(ctx.now().getTime() - 120_000)) });
  expect(wrong.status).toBe(401);
  const ok = await browser.post("/user/security/totp/confirm", { code: codeAt(secret!, ctx.now()) });
  expect(ok.status).toBe(200);
  const page = await ok.text();
  const codes = [...page.matchAll(/\b([a-hj-km-np-z2-9]{5}-[a-hj-km-np-z2-9]{5})\b/g)].map((m) => m[1]!);
  expect(new Set(codes).size).toBe(10);
  return { secret: secret!, recoveryCodes: [...new Set(codes)] };
}

const nextStep = () => ctx.advance(30_000);

describe("an authenticator app", () => {
  test("set up from the Security page: QR code, secret sealed, confirmed by a code, ten hashed recovery codes, audited", async () => {
    const user = await newUser();
    const browser = await signedIn(user.username);
    const { recoveryCodes: codes } = await enrolTotp(browser, user.id);
    const [row] = await ctx.db.select().from(totpAuthenticators).where(eq(totpAuthenticators.userId, user.id));
    expect(row!.confirmedAt).toBeInstanceOf(Date);
    expect(row!.lastStep).toBe(Math.floor(ctx.now().getTime() / 30_000));
    const stored = await ctx.db.select().from(recoveryCodes).where(eq(recoveryCodes.userId, user.id));
    expect(stored.length).toBe(10);
    for (const code of codes) expect(stored.map((r) => r.codeHash)).not.toContain(code);
    const audit = await ctx.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.targetId, String(user.id)), eq(auditLog.action, "account.totp.enable")));
    expect(audit.length).toBe(1);
    expect(audit[0]!.actorUserId).toBe(user.id);
    expect(audit[0]!.targetType).toBe("user");
    // the page says it is on, and shows no secret again
    const again = await (await browser.get("/user/security")).text();
    expect(again).not.toContain("totp-secret");
  });

  test("sign-in asks for a code: no session until it is right, then one that says so; the code is refused a second time", async () => {
    const user = await newUser();
    const { secret } = await enrolTotp(await signedIn(user.username), user.id);
    nextStep();

    const browser = new Browser();
    const first = await browser.signIn(user.username);
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe("/user/login/second-factor");
    expect(browser.jar.has("ih_session")).toBe(false);
    const pendingSecret = browser.jar.get("ih_signin")!;
    expect(pendingSecret).toMatch(/^[\w-]{40,}$/);
    // the pending sign-in opens no page
    const account = await browser.get("/user/account");
    expect(account.status).toBe(303);
    expect(account.headers.get("location")).toStartWith("/user/login");
    const step = await browser.get("/user/login/second-factor");
    expect(step.status).toBe(200);
    expect(await step.text()).toContain('name="code"');

    const code = codeAt(secret, ctx.now());
    const done = await browser.post("/user/login/second-factor/totp", { code });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe("/user/dashboard");
    const sessionSecret = browser.jar.get("ih_session")!;
    expect(sessionSecret).toMatch(/^[\w-]{40,}$/);
    expect(sessionSecret).not.toBe(pendingSecret);
    expect(browser.jar.has("ih_signin")).toBe(false);
    const [session] = await ctx.db
      .select()
      .from(sessions)
      .where(eq(sessions.secretHash, sha256Hex(sessionSecret)));
    expect(session!.method).toBe("password+totp");
    expect(
      await ctx.db
        .select()
        .from(pendingSignIns)
        .where(eq(pendingSignIns.secretHash, sha256Hex(pendingSecret))),
    ).toEqual([]);
    // the Account page says how each session signed in
    await browser.get("/user/dashboard");
    const accountPage = await (await browser.get("/user/account")).text();
    expect(accountPage).toContain("password and authenticator code");

    // the same code again, in another sign-in within its window: refused
    const replay = new Browser();
    expect((await replay.signIn(user.username)).headers.get("location")).toBe("/user/login/second-factor");
    const refused = await replay.post("/user/login/second-factor/totp", { code });
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain("used already");
    expect(replay.jar.has("ih_session")).toBe(false);
    // the next step's code works
    nextStep();
    const next = await replay.post("/user/login/second-factor/totp", { code: codeAt(secret, ctx.now()) });
    expect(next.status).toBe(303);
    expect(replay.jar.has("ih_session")).toBe(true);
  });

  test("five wrong codes end the pending sign-in; the account's throttle answers 429 after ten", async () => {
    const user = await newUser();
    const { secret } = await enrolTotp(await signedIn(user.username), user.id);
    const wrong = codeAt(secret, new Date(ctx.now().getTime() + 3_600_000));
    const browser = new Browser();
    await browser.signIn(user.username);
    for (let i = 1; i <= 4; i++) expect((await browser.post("/user/login/second-factor/totp", { code: wrong })).status).toBe(401);
    const fifth = await browser.post("/user/login/second-factor/totp", { code: wrong });
    expect(fifth.status).toBe(401);
    expect(await fifth.text()).toContain("sign in again");
    expect(browser.jar.has("ih_signin")).toBe(false);
    // even the right code no longer completes it
    expect((await browser.post("/user/login/second-factor/totp", { code: codeAt(secret, ctx.now()) })).status).toBe(401);
    expect(browser.jar.has("ih_session")).toBe(false);

    // the set-up's wrong code and these five count against the account; four more in a new sign-in (from another
    // address) spend its ten, and the next try, even with the right code, is 429 before the code is looked at
    const other = new Browser();
    await other.signIn(user.username);
    for (let i = 1; i <= 4; i++) expect((await other.post("/user/login/second-factor/totp", { code: wrong })).status).toBe(401);
    const third = new Browser();
    await third.signIn(user.username);
    const throttled = await third.post("/user/login/second-factor/totp", { code: codeAt(secret, ctx.now()) });
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await throttled.text()).toContain("Too many wrong codes");
    expect(third.jar.has("ih_session")).toBe(false);
    // time refills the account's bucket: the right code then works
    ctx.advance(60_000);
    const later = await third.post("/user/login/second-factor/totp", { code: codeAt(secret, ctx.now()) });
    expect(later.status).toBe(303);
  });

  test("a recovery code signs in once", async () => {
    const user = await newUser();
    const { recoveryCodes: codes } = await enrolTotp(await signedIn(user.username), user.id);
    const browser = new Browser();
    await browser.signIn(user.username);
    const used = await browser.post("/user/login/second-factor/recovery", { recovery_code: codes[3]!.toUpperCase() });
    expect(used.status).toBe(303);
    const [session] = await ctx.db
      .select()
      .from(sessions)
      .where(eq(sessions.secretHash, sha256Hex(browser.jar.get("ih_session")!)));
    expect(session!.method).toBe("password+recovery");
    const again = new Browser();
    await again.signIn(user.username);
    const refused = await again.post("/user/login/second-factor/recovery", { recovery_code: codes[3]! });
    expect(refused.status).toBe(401);
    expect(again.jar.has("ih_session")).toBe(false);
    const left = await ctx.db.select().from(recoveryCodes).where(eq(recoveryCodes.userId, user.id));
    expect(left.filter((r) => r.usedAt !== null).length).toBe(1);
  });

  test("turning it off needs a current code, removes the recovery codes, and is audited", async () => {
    const user = await newUser();
    const browser = await signedIn(user.username);
    const { secret } = await enrolTotp(browser, user.id);
    nextStep();
    await browser.get("/user/security");
    expect((await browser.post("/user/security/totp/remove", { code: "000000" })).status).toBe(401);
    const off = await browser.post("/user/security/totp/remove", { code: codeAt(secret, ctx.now()) });
    expect(off.status).toBe(303);
    expect(await ctx.db.select().from(totpAuthenticators).where(eq(totpAuthenticators.userId, user.id))).toEqual([]);
    expect(await ctx.db.select().from(recoveryCodes).where(eq(recoveryCodes.userId, user.id))).toEqual([]);
    const audit = await ctx.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.targetId, String(user.id)), eq(auditLog.action, "account.totp.disable")));
    expect(audit.length).toBe(1);
    // and sign-in asks for nothing more
    const again = new Browser();
    expect((await again.signIn(user.username)).headers.get("location")).toBe("/user/dashboard");
  });
});

describe("how a session signed in, on the Account page", () => {
  test("an identity provider and its second factor read as one", async () => {
    const user = await newUser();
    const browser = await signedIn(user.username);
    await ctx.db
      .update(sessions)
      .set({ method: "oidc:corp+totp" })
      .where(eq(sessions.secretHash, sha256Hex(browser.jar.get("ih_session")!)));
    const page = await (await browser.get("/user/account")).text();
    expect(page).toContain("single sign-on (corp) and authenticator code");
  });
});

describe("session fixation", () => {
  test("a session secret the browser carried before sign-in is never the one after, and a live one ends", async () => {
    const user = await newUser();
    const planted = new Browser();
    planted.jar.set("ih_session", "planted-secret-of-an-attacker-000000000000");
    await planted.signIn(user.username);
    expect(planted.jar.get("ih_session")).not.toBe("planted-secret-of-an-attacker-000000000000");

    // a browser signed in as someone signs in again: its old session ends, the new secret differs
    const browser = await signedIn(user.username);
    const before = browser.jar.get("ih_session")!;
    await browser.signIn(user.username);
    const after = browser.jar.get("ih_session")!;
    expect(after).not.toBe(before);
    expect(
      await ctx.db
        .select()
        .from(sessions)
        .where(eq(sessions.secretHash, sha256Hex(before))),
    ).toEqual([]);
  });
});

describe("a second factor required by the site", () => {
  test("an account without one is led to set one up at sign-in, and cannot skip it", async () => {
    expect((await ctx.admin("PATCH", "/api/admin/settings", { require_second_factor: "everyone" })).require_second_factor).toBe("everyone");
    ctx.advance(2_000);
    try {
      const user = await newUser();
      const browser = new Browser();
      const first = await browser.signIn(user.username);
      expect(first.headers.get("location")).toBe("/user/login/enrol");
      expect(browser.jar.has("ih_session")).toBe(false);
      expect((await browser.get("/user/dashboard")).status).toBe(303);
      const page = await browser.get("/user/login/enrol");
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain("data:image/svg+xml;base64,");
      const secret = /value="([A-Z2-7]{32})"/.exec(html)?.[1] ?? /id="totp-secret"[^>]*>([A-Z2-7]+)</.exec(html)?.[1];
      expect(secret).toBeDefined();
      const done = await browser.post("/user/login/enrol/totp", { code: codeAt(secret!, ctx.now()) });
      expect(done.status).toBe(200);
      expect((await done.text()).match(/\b[a-hj-km-np-z2-9]{5}-[a-hj-km-np-z2-9]{5}\b/g)?.length).toBeGreaterThanOrEqual(10);
      const [session] = await ctx.db
        .select()
        .from(sessions)
        .where(eq(sessions.secretHash, sha256Hex(browser.jar.get("ih_session")!)));
      expect(session!.method).toBe("password+totp");
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { require_second_factor: "off" });
      ctx.advance(2_000);
    }
  });

  test("for administrators only: a user signs in with a password alone, an administrator is led to enrol", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { require_second_factor: "admins" });
    ctx.advance(2_000);
    try {
      const user = await newUser();
      const admin = await newUser({ role: "admin" });
      expect((await new Browser().signIn(user.username)).headers.get("location")).toBe("/user/dashboard");
      expect((await new Browser().signIn(admin.username)).headers.get("location")).toBe("/user/login/enrol");
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { require_second_factor: "off" });
      ctx.advance(2_000);
    }
  });

  test("a sign-up is led to enrol too", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { require_second_factor: "everyone", registration_enabled: true });
    ctx.advance(2_000);
    try {
      const browser = new Browser();
      const res = await browser.post(
        "/user/register",
        { username: `new${Date.now() % 100000}`, email: `new${Date.now() % 100000}@example.com`, password: PASSWORD, password_again: PASSWORD },
        false,
      );
      expect(res.status, await res.clone().text()).toBe(303);
      expect(res.headers.get("location")).toBe("/user/login/enrol");
      expect(browser.jar.has("ih_session")).toBe(false);
      expect(browser.jar.has("ih_signin")).toBe(true);
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { require_second_factor: "off", registration_enabled: false });
      ctx.advance(2_000);
    }
  });

  test("the setting refuses anything but off, admins and everyone", async () => {
    const res = await ctx.json("/api/admin/settings", {
      method: "PATCH",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ require_second_factor: "sometimes" }),
    });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.errors)).toEqual(["require_second_factor"]);
  });
});

describe("the admin Settings page", () => {
  test("sets who must sign in with a second factor, and shows a refusal on the field", async () => {
    const admin = await newUser({ role: "admin" });
    const browser = await signedIn(admin.username);
    const page = await (await browser.get("/user/admin/settings")).text();
    expect(page).toContain('name="require_second_factor"');
    expect(page).toContain('<option value="off" selected="">');
    const saved = await browser.post("/user/admin/settings", { api_enabled: "1", password_sign_in: "1", require_second_factor: "admins" });
    expect(saved.status).toBe(303);
    expect((await ctx.admin("GET", "/api/admin/settings")).require_second_factor).toBe("admins");
    const refused = await browser.post("/user/admin/settings", { api_enabled: "1", password_sign_in: "1", require_second_factor: "sometimes" });
    expect(refused.status).toBe(422);
    expect(await refused.text()).toContain('id="settings-require_second_factor-error"');
    expect((await ctx.admin("PATCH", "/api/admin/settings", { require_second_factor: "off" })).require_second_factor).toBe("off");
    ctx.advance(2_000);
  });
});

describe("the emergency path", () => {
  test("DELETE /api/admin/users/{id}/second-factors removes them all; the password alone signs in again; audited", async () => {
    const user = await newUser();
    const browser = await signedIn(user.username);
    await enrolTotp(browser, user.id);
    const pending = new Browser();
    expect((await pending.signIn(user.username)).headers.get("location")).toBe("/user/login/second-factor");
    const reset = await ctx.admin("DELETE", `/api/admin/users/${user.id}/second-factors`);
    expect(reset).toEqual({ totp_removed: true, recovery_codes_removed: 10, passkeys_removed: 0 });
    expect(await ctx.db.select().from(totpAuthenticators).where(eq(totpAuthenticators.userId, user.id))).toEqual([]);
    expect(await ctx.db.select().from(recoveryCodes).where(eq(recoveryCodes.userId, user.id))).toEqual([]);
    // the sign-in under way ended with them; the session stays
    expect(await ctx.db.select().from(pendingSignIns).where(eq(pendingSignIns.userId, user.id))).toEqual([]);
    expect((await browser.get("/user/security")).status).toBe(200);
    expect((await new Browser().signIn(user.username)).headers.get("location")).toBe("/user/dashboard");
    const [audit] = await ctx.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.action, "DELETE /api/admin/users/{id}/second-factors"), eq(auditLog.targetId, String(user.id))));
    expect(audit!.actor).toBe("ADMIN_TOKEN");
    // a second reset finds nothing; an unknown account is 404
    expect(await ctx.admin("DELETE", `/api/admin/users/${user.id}/second-factors`)).toEqual({
      totp_removed: false,
      recovery_codes_removed: 0,
      passkeys_removed: 0,
    });
    const missing = await ctx.json("/api/admin/users/999999/second-factors", { method: "DELETE", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(missing.status).toBe(404);
  });
});

describe("the per-address throttle", () => {
  test("wrong codes spend the address's failed-authentication bucket: 429 there, another address goes on", async () => {
    // a site whose address bucket holds 3 failures (the other tests lift it)
    const small = await createTestContext({ authFailures: { burst: 3, perMinute: 1 } });
    try {
      const users = [await small.createUser({ password: PASSWORD }), await small.createUser({ password: PASSWORD })];
      const secrets: string[] = [];
      for (const user of users) {
        const setup = new Browser("192.0.2.10", () => small);
        expect((await setup.signIn(user.username)).status).toBe(303);
        await setup.get("/user/security");
        const html = await (await setup.post("/user/security/totp/start")).text();
        const secret = /value="([A-Z2-7]{32})"/.exec(html)?.[1] ?? /id="totp-secret"[^>]*>([A-Z2-7]+)</.exec(html)![1]!;
        expect((await setup.post("/user/security/totp/confirm", { code: codeAt(secret, small.now()) })).status).toBe(200);
        secrets.push(secret);
      }
      small.advance(30_000);
      const wrong = (secret: string) => codeAt(secret, new Date(small.now().getTime() + 3_600_000));
      // one address, two accounts: three wrong codes spend it
      const [a, b] = [new Browser("203.0.113.77", () => small), new Browser("203.0.113.77", () => small)];
      await a.signIn(users[0]!.username);
      await b.signIn(users[1]!.username);
      expect((await a.post("/user/login/second-factor/totp", { code: wrong(secrets[0]!) })).status).toBe(401);
      expect((await b.post("/user/login/second-factor/totp", { code: wrong(secrets[1]!) })).status).toBe(401);
      expect((await a.post("/user/login/second-factor/totp", { code: wrong(secrets[0]!) })).status).toBe(401);
      const refused = await b.post("/user/login/second-factor/totp", { code: codeAt(secrets[1]!, small.now()) });
      expect(refused.status).toBe(429);
      expect(b.jar.has("ih_session")).toBe(false);
      // another address signs the second account in with its code
      const elsewhere = new Browser("203.0.113.78", () => small);
      await elsewhere.signIn(users[1]!.username);
      expect((await elsewhere.post("/user/login/second-factor/totp", { code: codeAt(secrets[1]!, small.now()) })).status).toBe(303);
    } finally {
      await small.close();
    }
  });
});
