/**
 * Mail, in-process, against a local SMTP server started here (test/support/smtp.ts): the mail settings of the admin
 * API (environment over stored settings, the password never returned, the test mail), the self-service password
 * reset (the same answer for known and unknown addresses, throttling per client address and per address typed, the
 * per-account bound, a link used once and dead after an hour), email verification before the first upload, and
 * invitations (uses, expiry, withdrawal, group, and uses under concurrency). The browser's side is
 * test/browser/mail.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { invitations, passwordLinks, settings, users } from "../../src/db/schema.ts";
import { servicesOf } from "../../src/services/index.ts";
import { requestPasswordReset } from "../../src/services/mail/password-reset.ts";
import { ADMIN_TOKEN, createTestContext, type TestContext } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { type LocalSmtp, startLocalSmtp } from "../support/smtp.ts";
import { visitorClass } from "../support/visitor.ts";

const PASSWORD = "correct horse battery";
let ctx: TestContext;
let smtp: LocalSmtp;
let addressSeq = 0;
const nextAddress = () => `198.51.100.${++addressSeq % 250}`;
const Visitor = visitorClass(() => ctx, nextAddress, PASSWORD);
let seq = 0;
const unique = (prefix: string) => `${prefix}${++seq}_${Math.random().toString(36).slice(2, 6)}`;

beforeAll(async () => {
  smtp = await startLocalSmtp();
  ctx = await createTestContext();
  await ctx.admin("PATCH", "/api/admin/mail", { smtp_host: "127.0.0.1", smtp_port: smtp.port, smtp_security: "none", mail_from: "images@example.test" });
  await ctx.admin("PATCH", "/api/admin/settings", { site_name: "Photo Shelf" });
});
afterAll(async () => {
  await ctx?.close();
  await smtp?.stop();
});

const settle = () => servicesOf(ctx.deps).mail.settle();
const text = (res: Response) => res.text();

async function account(overrides: Record<string, unknown> = {}) {
  const username = unique("mail");
  const email = `${username}@example.com`;
  const user = await ctx.createUser({ username, email, password: PASSWORD, ...overrides });
  return { ...user, username, email };
}

describe("the mail settings of the admin API", () => {
  test("the stored password is sealed and never returned; the environment wins over the stored settings", async () => {
    const set = await ctx.admin("PATCH", "/api/admin/mail", { smtp_username: "relay", smtp_password: "s3cret-pass" });
    expect(set).toEqual({
      source: "settings",
      smtp_host: "127.0.0.1",
      smtp_port: smtp.port,
      smtp_security: "none",
      smtp_username: "relay",
      smtp_password_set: true,
      mail_from: "images@example.test",
      email_verification: false,
    });
    const raw = await ctx.request("/api/admin/mail", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(await raw.text()).not.toContain("s3cret-pass");
    const [row] = await ctx.db.select({ sealed: settings.smtpPasswordSealed }).from(settings);
    expect(row!.sealed!).toStartWith("v1:");
    expect(row!.sealed!).not.toContain("s3cret");
    const cleared = await ctx.admin("PATCH", "/api/admin/mail", { smtp_username: "", smtp_password: null });
    expect(cleared.smtp_password_set).toBe(false);

    const envCtx = await createTestContext({ mail: { ...smtp.config, username: "env-user", password: "env-pass" } });
    try {
      await envCtx.admin("PATCH", "/api/admin/mail", { smtp_host: "stored.example", mail_from: "stored@example.com" });
      expect(await envCtx.admin("GET", "/api/admin/mail")).toEqual({
        source: "environment",
        smtp_host: "127.0.0.1",
        smtp_port: smtp.port,
        smtp_security: "none",
        smtp_username: "env-user",
        smtp_password_set: true,
        mail_from: "images@example.test",
        email_verification: false,
      });
    } finally {
      await envCtx.close();
    }
  });

  test("bad fields are 422 in the envelope; verification cannot be turned on without mail", async () => {
    for (const body of [{ smtp_port: 0 }, { smtp_security: "ssl" }, { mail_from: "not an address" }, { smtp_host: "a b" }, { smtp_password_plain: "x" }]) {
      const res = await ctx.json("/api/admin/mail", {
        method: "PATCH",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.status).toBe(false);
    }
    const bare = await createTestContext();
    try {
      const res = await bare.json("/api/admin/mail", {
        method: "PATCH",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ email_verification: true }),
      });
      expect(res.status).toBe(422);
      expect(res.body.errors.email_verification[0]).toContain("Set up mail first");
      expect((await bare.admin("GET", "/api/admin/mail")).email_verification).toBe(false);
      const test = await bare.json("/api/admin/mail/test", {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ to: "admin@example.com" }),
      });
      expect(test.status).toBe(400);
      expect(test.body.message).toContain("Mail is not set up");
    } finally {
      await bare.close();
    }
  });

  test("the test mail goes out under the site's name; a refusing server is a 503 with its reason", async () => {
    const before = smtp.mails.length;
    expect(await ctx.admin("POST", "/api/admin/mail/test", { to: "admin@example.com" })).toEqual({ sent_to: "admin@example.com" });
    const mail = smtp.mails[before]!;
    expect(mail).toMatchObject({ to: "admin@example.com", from: "images@example.test", fromName: "Photo Shelf", subject: "Test mail from Photo Shelf" });
    expect(mail.text).toContain("This is a test mail from Photo Shelf.");
    smtp.refuse(true);
    try {
      const res = await ctx.json("/api/admin/mail/test", {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ to: "admin@example.com" }),
      });
      expect(res.status).toBe(503);
      expect(res.body.message).toContain("Mailbox unavailable");
    } finally {
      smtp.refuse(false);
    }
  });
});

describe("password reset by mail", () => {
  test("a known and an unknown address get the same page; only the account's mailbox gets a link, in its language", async () => {
    const known = await account();
    const zh = await account();
    await ctx.db.update(users).set({ locale: "zh-CN" }).where(eq(users.id, zh.id));
    const unknown = `${unique("nobody")}@example.com`;
    const before = smtp.mails.length;
    const pages: string[] = [];
    for (const email of [known.email, unknown, zh.email.toUpperCase()]) {
      const res = await new Visitor().post("/user/forgot", { email }, { formToken: null });
      expect(res.status).toBe(200);
      pages.push((await text(res)).replace(/value="[^"]*"/g, ""));
    }
    expect(pages[1]).toBe(pages[0]!);
    expect(pages[0]).toContain("If an account has this address, a link to reset its password is on its way.");
    await settle();
    expect(smtp.mails.length - before).toBe(2);
    expect(smtp.to(unknown)).toEqual([]);
    const [mail] = smtp.to(known.email);
    expect(mail!.subject).toBe("Reset your password on Photo Shelf");
    expect(mail!.fromName).toBe("Photo Shelf");
    expect(mail!.text).toContain(known.username);
    const resets = mail!.links.filter((l) => l.includes("/user/"));
    expect(resets).toHaveLength(1);
    expect(resets[0]).toMatch(/^http:\/\/img\.test\/user\/password\/[\w-]{40,}$/);
    expect(mail!.html).toContain(`href="${resets[0]}"`);
    const [zhMail] = smtp.to(zh.email);
    expect(zhMail!.subject).toBe("重置你在 Photo Shelf 的密码");
  });

  test("the link sets the password once; a second use and an hour-old link are refused", async () => {
    const user = await account();
    await new Visitor().post("/user/forgot", { email: user.email }, { formToken: null });
    await settle();
    const link = new URL(
      smtp
        .to(user.email)
        .at(-1)!
        .links.find((l) => l.includes("/user/"))!,
    ).pathname;
    const visitor = new Visitor();
    expect((await visitor.get(link)).status).toBe(200);
    const set = await visitor.post(link, { password: "a brand new password", again: "a brand new password" }, { formToken: null });
    expect(set.status).toBe(200);
    expect((await new Visitor().signIn(user.username, "a brand new password")).status).toBe(303);
    expect((await new Visitor().get(link)).status).toBe(404);
    expect((await new Visitor().post(link, { password: "another password 1", again: "another password 1" }, { formToken: null })).status).toBe(404);

    const later = await account();
    await new Visitor().post("/user/forgot", { email: later.email }, { formToken: null });
    await settle();
    const stale = new URL(
      smtp
        .to(later.email)
        .at(-1)!
        .links.find((l) => l.includes("/user/"))!,
    ).pathname;
    ctx.advance(3_600_000 + 1000);
    expect((await new Visitor().get(stale)).status).toBe(404);
    expect((await new Visitor().post(stale, { password: "too late password", again: "too late password" }, { formToken: null })).status).toBe(404);
  });

  test("throttled per address typed, known or not alike, and per client address", async () => {
    const known = await account();
    const unknown = `${unique("ghost")}@example.com`;
    for (const email of [known.email, unknown]) {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await new Visitor().post("/user/forgot", { email }, { formToken: null })).status);
      expect(statuses, email).toEqual([200, 200, 200, 429]);
    }
    await settle();
    expect(smtp.to(known.email)).toHaveLength(3);
    const from = "192.0.2.77";
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      statuses.push((await new Visitor(from).post("/user/forgot", { email: `${unique("spray")}@example.com` }, { formToken: null })).status);
    }
    expect(statuses.slice(0, 10).every((s) => s === 200)).toBe(true);
    expect(statuses[10]).toBe(429);
    // a malformed address is a 422 and costs nothing
    expect((await new Visitor().post("/user/forgot", { email: "not-an-address" }, { formToken: null })).status).toBe(422);
  });

  test("with password sign-in switched off (provider-only) there is no reset page", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { password_sign_in: false });
    try {
      expect((await new Visitor().get("/user/forgot")).status).toBe(404);
      const res = await new Visitor().post("/user/forgot", { email: "someone@example.com" }, { formToken: null });
      expect(res.status).toBe(404);
      expect(await text(res)).toContain("there is no password to reset here");
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { password_sign_in: true });
    }
  });

  test("an account is sent at most three links an hour, whatever the instance (bounded in the database)", async () => {
    const user = await account();
    const got = [];
    for (let i = 0; i < 4; i++) got.push(await requestPasswordReset(ctx.deps, user.email));
    expect(got.map((g) => g !== null)).toEqual([true, true, true, false]);
    const links = await ctx.db.select().from(passwordLinks).where(eq(passwordLinks.userId, user.id));
    expect(links).toHaveLength(3);
    expect(await requestPasswordReset(ctx.deps, "nobody-at-all@example.com")).toBeNull();
  });

  test("a known and an unknown address take the same time to answer (no lookup before the answer)", async () => {
    const time = async (email: string) => {
      const started = performance.now();
      await new Visitor().post("/user/forgot", { email }, { formToken: null });
      return performance.now() - started;
    };
    const k: number[] = [];
    const u: number[] = [];
    for (let i = 0; i < 5; i++) {
      // a fresh known account each round: the per-address throttle allows three requests for one address
      k.push(await time((await account()).email));
      u.push(await time(`${unique("timing")}@example.com`));
    }
    await settle();
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[2]!;
    // the same work before the answer: the same timing class (the lookup and the SMTP exchange come after it)
    expect(Math.abs(median(k) - median(u))).toBeLessThan(40);
  });
});

describe("email verification before the first upload", () => {
  test("a sign-up while it is on uploads nothing until it follows the mailed link; off again, nothing is asked", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
    await ctx.admin("PATCH", "/api/admin/mail", { email_verification: true });
    try {
      const username = unique("verify");
      const email = `${username}@example.com`;
      const visitor = new Visitor();
      await visitor.get("/user/register");
      const res = await visitor.post("/user/register", { username, email, password: PASSWORD }, { formToken: null });
      expect(res.status).toBe(303);
      expect(res.headers.get("location")).toBe("/user/verify");
      const page = await text(await visitor.get("/user/verify"));
      expect(page).toContain(email);
      await settle();
      const [mail] = smtp.to(email);
      expect(mail!.subject).toBe("Confirm your email address on Photo Shelf");
      const [row] = await ctx.db.select().from(users).where(eq(users.email, email));
      expect(row!.emailVerified).toBe(false);

      const { token } = await ctx.admin("POST", `/api/admin/users/${row!.id}/tokens`);
      const png = await makeImage("png");
      const refused = await ctx.upload(token, { bytes: png, filename: "a.png" });
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({
        status: false,
        data: null,
        message: "Verify your email address before uploading: follow the link mailed to you, or ask for a new one on the user center's page /user/verify.",
      });

      // an account made by an administrator is not asked
      const admins = await account();
      expect((await ctx.upload(admins.token, { bytes: png, filename: "b.png" })).status).toBe(200);

      const link = new URL(mail!.links.find((l) => l.includes("/user/"))!).pathname;
      expect((await new Visitor().get(link)).status).toBe(200); // the page asks; a link scanner confirms nothing
      expect((await ctx.upload(token, { bytes: png, filename: "a.png" })).status).toBe(403);
      expect((await new Visitor().post(link, {}, { formToken: null })).status).toBe(200);
      expect((await new Visitor().post(link, {}, { formToken: null })).status).toBe(404);
      expect((await ctx.upload(token, { bytes: png, filename: "a.png" })).status).toBe(200);

      // another sign-up, then the switch goes off: it uploads without confirming
      const other = unique("later");
      await new Visitor().post("/user/register", { username: other, email: `${other}@example.com`, password: PASSWORD }, { formToken: null });
      const [otherRow] = await ctx.db.select().from(users).where(eq(users.username, other));
      expect(otherRow!.emailVerified).toBe(false);
      await ctx.admin("PATCH", "/api/admin/mail", { email_verification: false });
      const { token: otherToken } = await ctx.admin("POST", `/api/admin/users/${otherRow!.id}/tokens`);
      expect((await ctx.upload(otherToken, { bytes: png, filename: "c.png" })).status).toBe(200);
    } finally {
      await ctx.admin("PATCH", "/api/admin/mail", { email_verification: false });
      await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: false });
      await settle();
    }
  });

  test("a link sent before an email change verifies nothing; a day-old link is dead", async () => {
    await ctx.admin("PATCH", "/api/admin/mail", { email_verification: true });
    await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
    try {
      const sign = async () => {
        const username = unique("change");
        const email = `${username}@example.com`;
        const visitor = new Visitor();
        await visitor.post("/user/register", { username, email, password: PASSWORD }, { formToken: null });
        await settle();
        const [row] = await ctx.db.select().from(users).where(eq(users.email, email));
        return { id: row!.id, link: new URL(smtp.to(email)[0]!.links.find((l) => l.includes("/user/"))!).pathname };
      };
      const changed = await sign();
      await ctx.db
        .update(users)
        .set({ email: `moved-${changed.id}@example.com` })
        .where(eq(users.id, changed.id));
      expect((await new Visitor().post(changed.link, {}, { formToken: null })).status).toBe(404);
      const old = await sign();
      ctx.advance(86_400_000 + 1000);
      expect((await new Visitor().post(old.link, {}, { formToken: null })).status).toBe(404);
      const rows = await ctx.db.select().from(users).where(eq(users.id, old.id));
      expect(rows[0]!.emailVerified).toBe(false);
    } finally {
      await ctx.admin("PATCH", "/api/admin/mail", { email_verification: false });
      await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: false });
    }
  });
});

describe("invitations", () => {
  const register = (code: string, username = unique("inv")) =>
    new Visitor().post("/user/register", { username, email: `${username}@example.com`, password: PASSWORD, invite: code }, { formToken: null });

  test("made, listed and withdrawn through the admin API; the code is shown once and only its hash kept", async () => {
    const group = await ctx.admin("POST", "/api/admin/groups", { name: unique("club") });
    const made = await ctx.admin("POST", "/api/admin/invitations", { group_id: group.id, max_uses: 2, expires_in: 3600, note: "photo club" });
    expect(made).toMatchObject({ group_id: group.id, max_uses: 2, uses: 0, note: "photo club", status: "active", revoked_at: null });
    expect(made.url).toBe(`http://img.test/user/register?invite=${made.code}`);
    const [row] = await ctx.db.select().from(invitations).where(eq(invitations.id, made.id));
    expect(row!.codeHash).not.toContain(made.code);
    const list = await ctx.admin("GET", "/api/admin/invitations");
    const listed = list.invitations.find((i: { id: number }) => i.id === made.id);
    expect(listed).toEqual({
      id: made.id,
      group_id: group.id,
      max_uses: 2,
      uses: 0,
      note: "photo club",
      status: "active",
      expired_at: made.expired_at,
      revoked_at: null,
      created_at: made.created_at,
    });
    expect(JSON.stringify(list)).not.toContain(made.code);
    // registration is closed: the page exists only with a live code
    expect((await new Visitor().get("/user/register")).status).toBe(404);
    const page = await new Visitor().get(`/user/register?invite=${made.code}`);
    expect(page.status).toBe(200);
    expect(await text(page)).toContain(group.name);
    const res = await register(made.code, "invited_one");
    expect(res.status).toBe(303);
    const [user] = await ctx.db.select().from(users).where(eq(users.username, "invited_one"));
    expect(user!.groupId).toBe(group.id);
    const { invitation } = await ctx.admin("DELETE", `/api/admin/invitations/${made.id}`);
    expect(invitation).toMatchObject({ id: made.id, status: "revoked", uses: 1 });
    expect((await new Visitor().get(`/user/register?invite=${made.code}`)).status).toBe(404);
    expect((await register(made.code)).status).toBe(404);
    const again = await ctx.json(`/api/admin/invitations/999999`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(again.status).toBe(404);
  });

  test("bad input is refused: the guest group, an unknown group, zero uses, too long", async () => {
    for (const [body, field] of [
      [{ group_id: ctx.guestGroupId }, "group_id"],
      [{ group_id: 99999 }, "group_id"],
      [{ max_uses: 0 }, "max_uses"],
      [{ expires_in: 10 * 365 * 86_400 }, "expires_in"],
    ] as const) {
      const res = await ctx.json("/api/admin/invitations", {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(res.body.errors)).toContain(field);
    }
  });

  test("an expired invitation makes no account", async () => {
    const made = await ctx.admin("POST", "/api/admin/invitations", { max_uses: 5, expires_in: 60 });
    ctx.advance(61_000);
    expect((await new Visitor().get(`/user/register?invite=${made.code}`)).status).toBe(404);
    expect((await register(made.code)).status).toBe(404);
    const listed = (await ctx.admin("GET", "/api/admin/invitations")).invitations.find((i: { id: number }) => i.id === made.id);
    expect(listed).toMatchObject({ status: "expired", uses: 0 });
  });

  test("twelve sign-ups at once on a three-use invitation make exactly three accounts", async () => {
    const made = await ctx.admin("POST", "/api/admin/invitations", { max_uses: 3, expires_in: 3600 });
    const names = Array.from({ length: 12 }, () => unique("race"));
    const results = await Promise.all(names.map((n) => register(made.code, n)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 303)).toHaveLength(3);
    expect(statuses.every((s) => s === 303 || s === 404 || s === 422)).toBe(true);
    const [row] = await ctx.db.select().from(invitations).where(eq(invitations.id, made.id));
    expect(row!.uses).toBe(3);
    const made3 = await Promise.all(names.map(async (n) => (await ctx.db.select().from(users).where(eq(users.username, n))).length));
    expect(made3.reduce((a, b) => a + b, 0)).toBe(3);
  });
});

describe("the pages", () => {
  const zhText = async (path: string, visitor = new Visitor()) => {
    const res = await ctx.request(path, {
      headers: { accept: "text/html", "accept-language": "zh-CN", "x-forwarded-for": visitor.address, ...(visitor.cookie ? { cookie: visitor.cookie } : {}) },
      redirect: "manual",
    });
    return { status: res.status, html: await res.text() };
  };

  test("the reset, verification and invitation pages speak Chinese to a Chinese browser", async () => {
    const forgot = await zhText("/user/forgot");
    expect(forgot.status).toBe(200);
    expect(forgot.html).toContain('<html lang="zh-CN"');
    expect(forgot.html).toContain("请输入你账户的邮箱地址");
    expect(forgot.html).not.toContain("Enter the email address of your account");
    const login = await zhText("/user/login");
    expect(login.html).toContain(">忘记密码？</a>");
    const made = await ctx.admin("POST", "/api/admin/invitations", { max_uses: 1 });
    const register = await zhText(`/user/register?invite=${made.code}`);
    expect(register.status).toBe(200);
    expect(register.html).toContain("邀请码");
    expect(register.html).toContain(`value="${made.code}"`);
    const verify = await zhText("/user/verify/abcdefghijklmnopqrstuvwxyz012345");
    expect(verify.html).toContain("确认我的地址");
    const gone = await zhText("/user/register?invite=abcdefghijklmnopqrstuvwxyz012345");
    expect(gone.status).toBe(404);
    expect(gone.html).toContain("此邀请无效");
  });

  test("an administrator makes and withdraws an invitation, and saves the mail settings and sends a test mail, from the pages", async () => {
    const { username } = await account({ role: "admin" });
    const visitor = new Visitor();
    expect((await visitor.signIn(username)).status).toBe(303);
    const list = await visitor.get("/user/admin/invitations");
    expect(list.status).toBe(200);
    const made = await visitor.post("/user/admin/invitations", {
      group_id: String(ctx.defaultGroupId),
      max_uses: "4",
      expires_in_preset: "86400",
      note: "from the page",
    });
    expect(made.status).toBe(200);
    const html = await text(made);
    const url = /value="(http:\/\/img\.test\/user\/register\?invite=[\w-]+)"/.exec(html)?.[1];
    expect(url).toBeDefined();
    const [row] = await ctx.db.select().from(invitations).where(eq(invitations.note, "from the page"));
    expect(row).toMatchObject({ maxUses: 4, uses: 0, groupId: ctx.defaultGroupId });
    expect(row!.expiresAt.getTime() - row!.createdAt.getTime()).toBe(86_400_000);
    expect((await visitor.post("/user/admin/invitations", { max_uses: "0", expires_in_preset: "86400" })).status).toBe(422);
    const ask = await visitor.post(`/user/admin/invitations/${row!.id}/revoke`, { confirmed: "0" });
    expect(await text(ask)).toContain("Withdraw this invitation?");
    expect((await ctx.db.select().from(invitations).where(eq(invitations.id, row!.id)))[0]!.revokedAt).toBeNull();
    const revoked = await visitor.post(`/user/admin/invitations/${row!.id}/revoke`, { confirmed: "1" });
    expect(await text(revoked)).toContain("The invitation is withdrawn.");
    expect((await ctx.db.select().from(invitations).where(eq(invitations.id, row!.id)))[0]!.revokedAt).not.toBeNull();

    const settingsPage = await text(await visitor.get("/user/admin/settings"));
    expect(settingsPage).toContain('href="/user/admin/settings/mail"');
    const mailPage = await text(await visitor.get("/user/admin/settings/mail"));
    expect(mailPage).toContain(`value="${smtp.port}"`);
    expect(mailPage).not.toContain("s3cret");
    const saved = await visitor.post("/user/admin/settings/mail", {
      smtp_host: "127.0.0.1",
      smtp_port: String(smtp.port),
      smtp_security: "none",
      smtp_username: "",
      smtp_password: "",
      mail_from: "pictures@example.test",
    });
    expect(saved.status).toBe(200);
    expect(await text(saved)).toContain("Mail settings saved.");
    expect((await ctx.admin("GET", "/api/admin/mail")).mail_from).toBe("pictures@example.test");
    const bad = await visitor.post("/user/admin/settings/mail", { smtp_host: "127.0.0.1", smtp_port: "99999", smtp_security: "none", mail_from: "x" });
    expect(bad.status).toBe(422);
    const before = smtp.mails.length;
    const sent = await visitor.post("/user/admin/settings/mail/test", { to: "someone@example.com" });
    expect(await text(sent)).toContain("The server took the test mail to someone@example.com.");
    expect(smtp.mails[before]).toMatchObject({ to: "someone@example.com", from: "pictures@example.test" });
    await ctx.admin("PATCH", "/api/admin/mail", { mail_from: "images@example.test" });
  });
});
