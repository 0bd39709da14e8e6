/**
 * The administrator's side of accounts through the admin API and the CLI: the administrator role, search,
 * signing a user out everywhere, one-time password links (and their page), deleting a user with their images, and the
 * audit log every change writes.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { main } from "../../src/cli/index.ts";
import { images, sessions, strategies, tokens, users } from "../../src/db/schema.ts";
import { ADMIN_TOKEN, BASE_URL, createTestContext, type TestContext } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";
import { visitorClass } from "../support/visitor.ts";

setDefaultTimeout(60_000);

let ctx: TestContext;
let server: ReturnType<typeof Bun.serve>;
let SERVER_URL: string;
beforeAll(async () => {
  ctx = await createTestContext();
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: ctx.app.fetch });
  SERVER_URL = `http://127.0.0.1:${server.port}`;
});
afterAll(async () => {
  await server.stop(true);
  await ctx.close();
});

const PASSWORD = "correct horse battery";
let addressSeq = 0;
const Visitor = visitorClass(
  () => ctx,
  () => `192.0.2.${++addressSeq}`,
);
let seq = 0;
const uniqueName = () => `adm${++seq}_${Math.random().toString(36).slice(2, 6)}`;
const adminJson = (method: string, path: string, body?: unknown) =>
  ctx.json(path, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
const auditLog = async () => (await ctx.admin("GET", "/api/admin/audit-log?limit=200")).entries as any[];

async function cli(args: string[]) {
  const out: string[] = [];
  const code = await main(args, { BASE_URL: SERVER_URL, ADMIN_TOKEN }, { out: (s) => out.push(s), err: (s) => out.push(s) });
  return { code, text: out.join("\n") };
}

describe("the administrator role", () => {
  test("user create --admin and user set-role; the admin API shows and sets role; anything else is refused", async () => {
    const name = uniqueName();
    const created = await cli(["user", "create", name, "--email", `${name}@example.com`, "--admin", "--json"]);
    expect(created.code).toBe(0);
    const user = JSON.parse(created.text);
    expect(user.role).toBe("admin");
    const demoted = await cli(["user", "set-role", name, "user"]);
    expect([demoted.code, demoted.text]).toEqual([0, `User ${name} (id ${user.id}) is now a user.`]);
    expect((await ctx.admin("GET", `/api/admin/users/${user.id}`)).role).toBe("user");
    expect((await cli(["user", "set-role", name, "root"])).code).not.toBe(0);
    expectStatus(await adminJson("PATCH", `/api/admin/users/${user.id}`, { role: "owner" }), 422);
    const other = await ctx.admin("POST", "/api/admin/users", { username: uniqueName(), email: `${uniqueName()}@example.com`, role: "admin" });
    expect(other.role).toBe("admin");
  });

  test("an administrator's session ends after 30 idle minutes and 12 hours at most; a user's does not", async () => {
    const adminName = uniqueName();
    const admin = await ctx.createUser({ username: adminName, email: `${adminName}@example.com`, password: PASSWORD, role: "admin" });
    const userName = uniqueName();
    await ctx.createUser({ username: userName, email: `${userName}@example.com`, password: PASSWORD });
    const a = new Visitor();
    const u = new Visitor();
    expect((await a.signIn(adminName)).status).toBe(303);
    expect((await u.signIn(userName)).status).toBe(303);
    ctx.advance(31 * 60_000);
    expect((await a.get("/user/dashboard")).status).toBe(303); // sent to sign in
    expect((await u.get("/user/dashboard")).status).toBe(200);
    expect(await ctx.db.select().from(sessions).where(eq(sessions.userId, admin.id))).toEqual([]);
    // active all along, still 12 hours at most
    expect((await a.signIn(adminName)).status).toBe(303);
    for (let i = 0; i < 24; i++) {
      ctx.advance(29 * 60_000);
      expect((await a.get("/user/dashboard")).status, `after ${(i + 1) * 29} minutes`).toBe(200);
    }
    ctx.advance(29 * 60_000); // 12 h 5 min after sign-in (24 × 29 min = 11 h 36 min before)
    expect((await a.get("/user/dashboard")).status).toBe(303);
  });
});

describe("accounts", () => {
  test("search by username, name or email (any case, wildcards literal)", async () => {
    const base = uniqueName();
    const a = await ctx.admin("POST", "/api/admin/users", { username: `${base}_a`, email: `${base}_a@Needle.example`, name: "Ann" });
    const b = await ctx.admin("POST", "/api/admin/users", { username: `${base}_b`, email: `${base}_b@example.com`, name: "Needle Bee" });
    const found = await ctx.admin("GET", `/api/admin/users?q=${encodeURIComponent("NEEDLE")}`);
    expect(
      found.users
        .map((u: any) => u.id)
        .filter((id: number) => id === a.id || id === b.id)
        .sort(),
    ).toEqual([a.id, b.id].sort());
    expect((await ctx.admin("GET", "/api/admin/users?q=%25")).total).toBe(0); // "%" is a character, not a wildcard
    expectStatus(await adminJson("GET", `/api/admin/users?q=${"x".repeat(101)}`), 422);
  });

  test("email: changed, lower-cased, unique (422)", async () => {
    const a = await ctx.createUser();
    const b = await ctx.createUser();
    const changed = await ctx.admin("PATCH", `/api/admin/users/${a.id}`, { email: "New.Address@Example.com" });
    expect(changed.email).toBe("new.address@example.com");
    const bEmail = (await ctx.admin("GET", `/api/admin/users/${b.id}`)).email;
    const taken = await adminJson("PATCH", `/api/admin/users/${a.id}`, { email: bEmail });
    expectStatus(taken, 422);
    expect(taken.body.errors.email).toEqual(["The email is already taken."]);
  });

  test("sign-out: every token revoked and every session ended, in one call", async () => {
    const name = uniqueName();
    const user = await ctx.createUser({ username: name, email: `${name}@example.com`, password: PASSWORD });
    const v = new Visitor();
    expect((await v.signIn(name)).status).toBe(303);
    const done = await ctx.admin("POST", `/api/admin/users/${user.id}/sign-out`);
    expect(done.tokens_revoked).toBeGreaterThanOrEqual(1);
    expect((await v.get("/user/dashboard")).status).toBe(303);
    expect((await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) })).status).toBe(401);
    const live = await ctx.db.select().from(tokens).where(eq(tokens.userId, user.id));
    expect(live.every((t) => t.revokedAt !== null)).toBe(true);
    expectStatus(await adminJson("POST", "/api/admin/users/999999/sign-out"), 404);
  });

  test("a one-time password link: sets the password once, within the hour, ends the sessions", async () => {
    const name = uniqueName();
    const user = await ctx.createUser({ username: name, email: `${name}@example.com`, password: PASSWORD });
    const old = new Visitor();
    expect((await old.signIn(name)).status).toBe(303);
    const link = await ctx.admin("POST", `/api/admin/users/${user.id}/password-link`);
    expect(link.url).toMatch(new RegExp(`^${BASE_URL}/user/password/[\\w-]{40,}$`));
    const path = new URL(link.url).pathname;
    const v = new Visitor();
    const page = await v.get(path);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(`Set the password of <strong>${name}</strong>`);
    expect((await v.post(path, { password: "short", again: "short" }, { formToken: null })).status).toBe(422);
    expect((await v.post(path, { password: "a new password 1", again: "a new password 2" }, { formToken: null })).status).toBe(422);
    expect((await v.post(path, { password: "a new password", again: "a new password" }, { formToken: null, origin: "https://evil.example" })).status).toBe(403);
    const set = await v.post(path, { password: "a new password", again: "a new password" }, { formToken: null });
    expect(set.status).toBe(200);
    expect((await old.get("/user/dashboard")).status).toBe(303); // the old session ended
    expect((await new Visitor().signIn(name, "a new password")).status).toBe(303);
    // used: gone
    expect((await v.get(path)).status).toBe(404);
    expect((await v.post(path, { password: "another password", again: "another password" }, { formToken: null })).status).toBe(404);
    // expired after an hour
    const late = await ctx.admin("POST", `/api/admin/users/${user.id}/password-link`);
    ctx.advance(61 * 60_000);
    expect((await v.get(new URL(late.url).pathname)).status).toBe(404);
    expect((await v.get("/user/password/not-a-real-link-at-all-000000")).status).toBe(404);
  });

  test("a password link dies with the account's other ways in: any password change, another link used, sign-out everywhere, disabling", async () => {
    const name = uniqueName();
    const user = await ctx.createUser({ username: name, email: `${name}@example.com`, password: PASSWORD });
    const linkPath = async () => new URL((await ctx.admin("POST", `/api/admin/users/${user.id}/password-link`)).url).pathname;
    const alive = async (path: string) => (await new Visitor().get(path)).status === 200;
    const use = (path: string, password: string) => new Visitor().post(path, { password, again: password }, { formToken: null });

    // the administrator sets a password
    let path = await linkPath();
    expect(await alive(path)).toBe(true);
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { password: "set by the admin 1" });
    expect(await alive(path)).toBe(false);
    expect((await use(path, "through a dead link")).status).toBe(404);

    // the account changes its own password from a session
    path = await linkPath();
    const owner = new Visitor();
    expect((await owner.signIn(name, "set by the admin 1")).status).toBe(303);
    const changed = await owner.post("/user/account/password", {
      current_password: "set by the admin 1",
      new_password: "changed by the owner",
      new_password_again: "changed by the owner",
    });
    expect(changed.status).toBe(200);
    expect(await alive(path)).toBe(false);

    // another link of the same account is used
    const first = await linkPath();
    const second = await linkPath();
    expect((await use(second, "through the second link")).status).toBe(200);
    expect(await alive(first)).toBe(false);
    expect((await use(first, "through the first link")).status).toBe(404);
    expect((await new Visitor().signIn(name, "through the second link")).status).toBe(303);

    // sign out everywhere: the administrator's, and the account's own "sign out other sessions"
    path = await linkPath();
    await ctx.admin("POST", `/api/admin/users/${user.id}/sign-out`);
    expect(await alive(path)).toBe(false);
    path = await linkPath();
    const self = new Visitor();
    expect((await self.signIn(name, "through the second link")).status).toBe(303);
    expect((await self.post("/user/account/sessions/end-others")).status).toBe(303);
    expect(await alive(path)).toBe(false);

    // disabled, then enabled again: the link made before stays dead
    path = await linkPath();
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { enabled: false });
    expect(await alive(path)).toBe(false);
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { enabled: true });
    expect(await alive(path)).toBe(false);
    expect((await use(path, "after re-enabling")).status).toBe(404);
    expect((await new Visitor().signIn(name, "after re-enabling")).status).toBe(401);
  });

  test("deleting a user removes every image with its files, releases the strategy's quota, and the account with its albums", async () => {
    const user = await ctx.createUser();
    await ctx.admin("POST", `/api/admin/users/${user.id}/albums`, { name: "Trip" });
    const uploaded = [];
    for (let i = 0; i < 3; i++)
      uploaded.push(
        expectStatus(await ctx.upload(user.token, { bytes: await makeImage("png", 500 + i, 400), filename: `p${i}.png`, contentType: "image/png" }), 200).data,
      );
    const [before] = await ctx.db.select().from(strategies).where(eq(strategies.id, ctx.localStrategyId));
    const rows = await ctx.db.select().from(images).where(eq(images.userId, user.id));
    const files = rows.flatMap((r) => [r.path, r.thumbnailPath!]).map((p) => join(ctx.dataDir, "uploads", p));
    for (const f of files) expect(existsSync(f)).toBe(true);
    const bytes = rows.reduce((n, r) => n + r.size, 0);

    const deleted = await ctx.admin("DELETE", `/api/admin/users/${user.id}`);
    expect(deleted.images_deleted).toBe(3);
    for (const f of files) expect(existsSync(f)).toBe(false);
    expect(await ctx.db.select().from(users).where(eq(users.id, user.id))).toEqual([]);
    expect(await ctx.db.select().from(images).where(eq(images.userId, user.id))).toEqual([]);
    const [after] = await ctx.db.select().from(strategies).where(eq(strategies.id, ctx.localStrategyId));
    expect(before!.usedBytes - after!.usedBytes).toBe(bytes);
    for (const u of uploaded) expect((await ctx.request(new URL(u.url).pathname)).status).toBe(404);
    expect((await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) })).status).toBe(401);
    expectStatus(await adminJson("DELETE", `/api/admin/users/${user.id}`), 404);
  });
});

describe("the audit log", () => {
  test("every successful change is logged with who, what, which record and from where; secrets never; reads and refusals not", async () => {
    const before = (await ctx.admin("GET", "/api/admin/audit-log")).total;
    const user = await ctx.admin("POST", "/api/admin/users", { username: uniqueName(), email: `${uniqueName()}@example.com`, password: "a secret password" });
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { capacity_kb: 2048, password: "another secret" });
    await ctx.admin("GET", `/api/admin/users/${user.id}`);
    expectStatus(await adminJson("PATCH", `/api/admin/users/${user.id}`, { capacity_kb: -1 }), 422);
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: false });
    const entries = await auditLog();
    expect(entries.length).toBeGreaterThanOrEqual(3);
    const [settings, patch, create] = entries;
    expect(settings).toMatchObject({
      actor: "ADMIN_TOKEN",
      actor_user_id: null,
      action: "PATCH /api/admin/settings",
      target_type: "settings",
      target_id: "",
      detail: { guest_upload_enabled: false },
    });
    expect(patch).toMatchObject({
      actor: "ADMIN_TOKEN",
      action: "PATCH /api/admin/users/{id}",
      target_type: "users",
      target_id: String(user.id),
      detail: { capacity_kb: 2048, password: "(set)" },
    });
    expect(create).toMatchObject({ action: "POST /api/admin/users", target_type: "users", detail: { username: user.username, password: "(set)" } });
    expect(typeof create.ip).toBe("string");
    expect(Date.parse(create.created_at)).not.toBeNaN();
    expect(JSON.stringify(entries)).not.toContain("secret password");
    expect(JSON.stringify(entries)).not.toContain("another secret");
    expect((await ctx.admin("GET", "/api/admin/audit-log")).total).toBe(before + 3);
    // keyset pages
    const page = await ctx.admin("GET", `/api/admin/audit-log?limit=1&before=${settings.id}`);
    expect(page.entries.map((e: any) => e.id)).toEqual([patch.id]);
    expectStatus(await adminJson("GET", "/api/admin/audit-log?limit=0"), 422);
    // the log needs the admin token, like every admin route
    expect((await ctx.json("/api/admin/audit-log")).status).toBe(401);
  });
});
