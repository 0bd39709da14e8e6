/**
 * The admin Overview and Users pages, in-process. Every change goes through the admin API (same validation,
 * same messages, the audit log naming the administrator); the authorization matrix of every page and form post.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { images, users } from "../../src/db/schema.ts";
import { createTestContext, type TestContext } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";
import { visitorClass } from "../support/visitor.ts";

setDefaultTimeout(60_000);

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx?.close());

const PASSWORD = "correct horse battery";
let addressSeq = 0;
const Visitor = visitorClass(
  () => ctx,
  () => `198.18.0.${++addressSeq}`,
);
let seq = 0;
const uniqueName = () => `ap${++seq}_${Math.random().toString(36).slice(2, 6)}`;
const location = (res: Response) => res.headers.get("location");

async function signedIn(role: "admin" | "user" = "admin") {
  const username = uniqueName();
  const user = await ctx.createUser({ username, email: `${username}@example.com`, password: PASSWORD, role });
  const visitor = new Visitor();
  expect((await visitor.signIn(username)).status).toBe(303);
  return { user: { ...user, username }, visitor };
}
const latestAudit = async () => (await ctx.admin("GET", "/api/admin/audit-log?limit=1")).entries[0];

describe("overview", () => {
  test("totals, per strategy, 30 days as inline SVG, readiness, database, last job runs", async () => {
    const { visitor } = await signedIn();
    const owner = await ctx.createUser();
    await ctx.upload(owner.token, { bytes: await makeImage("png", 300, 200), filename: "a.png", contentType: "image/png" });
    const res = await visitor.get("/user/admin");
    expect(res.status).toBe(200);
    const html = await res.text();
    const [{ n: userCount }] = (await ctx.db.execute("select count(*)::int as n from users" as never)) as unknown as { n: number }[];
    expect(html).toContain(`<dt>Users</dt><dd>${userCount.toLocaleString("en")}</dd>`);
    expect(html).toMatch(/<svg class="chart" viewBox="0 0 600 160" role="img" aria-labelledby="uploads-chart-title uploads-chart-desc">/);
    expect((html.match(/<rect class="bar"/g) ?? []).length).toBe(60); // 30 days × 2 charts
    expect(html).toContain("Ready: every enabled storage");
    expect(html).toContain("not run on this instance since it started");
    expect(html).toMatch(/#1 Local/);
    // no script, no chart library: the page loads only the site's own script
    expect(html.match(/<script [^>]*src="([^"]+)"/g)?.every((s) => s.includes("/user/assets/"))).toBe(true);
  });
});

describe("users", () => {
  test("search and pages; create; the API's validation and messages on the form", async () => {
    const { visitor } = await signedIn();
    const target = uniqueName();
    await ctx.createUser({ username: target, email: `${target}@needle.example` });
    const found = await (await visitor.get(`/user/admin/users?q=NEEDLE.example`)).text();
    expect(found).toContain(`>${target}</a>`);
    expect(found).toContain("matching &quot;NEEDLE.example&quot;");

    const name = uniqueName();
    const created = await visitor.post("/user/admin/users", { username: name, email: `${name}@example.com`, role: "admin" });
    expect(created.status).toBe(303);
    const [row] = await ctx.db.select().from(users).where(eq(users.username, name));
    expect(location(created)).toBe(`/user/admin/users/${row!.id}?done=created`);
    expect(row!.role).toBe("admin");
    const audit = await latestAudit();
    expect(audit).toMatchObject({ action: "POST /api/admin/users", actor_user_id: expect.any(Number) });
    expect(audit.actor).toMatch(/^ap\d+_\w+ \(user \d+\)$/);

    const bad = await visitor.post("/user/admin/users", { username: "x", email: "not-an-email" });
    expect(bad.status).toBe(422);
    const html = await bad.text();
    expect(html).toContain('id="username-error"');
    expect(html).toContain('id="email-error"');
    const taken = await visitor.post("/user/admin/users", { username: name, email: `${name}@example.com` });
    expect(taken.status).toBe(422);
    expect(await taken.text()).toContain("The username or email is already taken.");
  });

  test("edit group, capacity, status, email, role; set a password; a one-time link; revoke and end sessions", async () => {
    const { visitor } = await signedIn();
    const name = uniqueName();
    const user = await ctx.createUser({ username: name, email: `${name}@example.com`, password: PASSWORD });
    const page = await visitor.get(`/user/admin/users/${user.id}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(`User ${name}`);

    const saved = await visitor.post(`/user/admin/users/${user.id}/edit`, {
      name: "Renamed",
      email: `NEW.${name}@example.com`,
      group_id: "1",
      capacity_kb: "4096",
      enabled: "true",
      role: "user",
    });
    expect([saved.status, location(saved)]).toEqual([303, `/user/admin/users/${user.id}?done=saved`]);
    const [row] = await ctx.db.select().from(users).where(eq(users.id, user.id));
    expect([row!.name, row!.email, row!.capacityKb, row!.enabled]).toEqual(["Renamed", `new.${name}@example.com`, 4096, true]);
    const cleared = await visitor.post(`/user/admin/users/${user.id}/edit`, { capacity_kb: "" });
    expect(cleared.status).toBe(303);
    expect((await ctx.db.select().from(users).where(eq(users.id, user.id)))[0]!.capacityKb).toBeNull();
    const negative = await visitor.post(`/user/admin/users/${user.id}/edit`, { capacity_kb: "-5" });
    expect(negative.status).toBe(422);
    // the capacity is a size with a unit on the form: its error speaks of sizes, not of the API's field
    expect(await negative.text()).toContain('id="capacity-kb-error" class="field-error">Give a size: a number of KB, MB or GB (≥ 0 KB).</small>');
    const inMb = await visitor.post(`/user/admin/users/${user.id}/edit`, { capacity_kb: "1.5", capacity_kb_unit: "MB" });
    expect(inMb.status).toBe(303);
    expect((await ctx.db.select().from(users).where(eq(users.id, user.id)))[0]!.capacityKb).toBe(1536);
    expect((await visitor.post(`/user/admin/users/${user.id}/edit`, { capacity_kb: "2", capacity_kb_unit: "GB" })).status).toBe(303);
    expect((await ctx.db.select().from(users).where(eq(users.id, user.id)))[0]!.capacityKb).toBe(2 * 1024 * 1024);
    expect(await (await visitor.get(`/user/admin/users/${user.id}`)).text()).toMatch(
      /<input id="capacity-kb" name="capacity_kb" type="number"[^>]* value="2"[^<]*<select name="capacity_kb_unit" aria-label="Unit of Capacity">(<option value="[KM]B">[KM]B<\/option>){2}<option value="GB" selected="">GB<\/option>/,
    );
    const noGroup = await visitor.post(`/user/admin/users/${user.id}/edit`, { group_id: "999999" });
    expect(noGroup.status).toBe(422);
    expect(await noGroup.text()).toContain("The group_id must be an existing, non-guest group.");
    expect((await ctx.db.select().from(users).where(eq(users.id, user.id)))[0]!.groupId).toBe(1);

    const shortPassword = await visitor.post(`/user/admin/users/${user.id}/password`, { password: "short" });
    expect(shortPassword.status).toBe(422);
    const password = await visitor.post(`/user/admin/users/${user.id}/password`, { password: "a brand new password" });
    expect(location(password)).toBe(`/user/admin/users/${user.id}?done=password`);
    expect((await new Visitor().signIn(name, "a brand new password")).status).toBe(303);
    expect((await latestAudit()).detail).toEqual({ password: "(set)" });

    const link = await visitor.post(`/user/admin/users/${user.id}/password-link`);
    expect(link.status).toBe(200);
    expect(link.headers.get("cache-control")).toBe("no-store");
    const url = /id="link" readonly="" value="([^"]+)"/.exec(await link.text())?.[1];
    expect(url).toMatch(/\/user\/password\/[\w-]{40,}$/);
    expect((await new Visitor().get(new URL(url!).pathname)).status).toBe(200);

    const user2 = new Visitor();
    expect((await user2.signIn(name, "a brand new password")).status).toBe(303);
    const out = await visitor.post(`/user/admin/users/${user.id}/sign-out`);
    expect(location(out)).toBe(`/user/admin/users/${user.id}?done=signed-out`);
    expect((await user2.get("/user/dashboard")).status).toBe(303);
    expect((await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) })).status).toBe(401);
  });

  test("delete says what happens to the images, needs the confirmation, then removes the user and their images", async () => {
    const { visitor } = await signedIn();
    const user = await ctx.createUser();
    const up = expectStatus(await ctx.upload(user.token, { bytes: await makeImage("png", 300, 200), filename: "a.png", contentType: "image/png" }), 200).data;
    const page = await (await visitor.get(`/user/admin/users/${user.id}`)).text();
    expect(page).toContain("deletes <strong>their one image</strong>");
    const unconfirmed = await visitor.post(`/user/admin/users/${user.id}/delete`, {});
    expect(unconfirmed.status).toBe(400);
    expect(await ctx.db.select().from(users).where(eq(users.id, user.id))).not.toEqual([]);
    const [row] = await ctx.db.select().from(users).where(eq(users.id, user.id));
    const deleted = await visitor.post(`/user/admin/users/${user.id}/delete`, { confirm: row!.username });
    expect([deleted.status, location(deleted)]).toEqual([303, "/user/admin/users?done=deleted"]);
    expect(await ctx.db.select().from(users).where(eq(users.id, user.id))).toEqual([]);
    expect(await ctx.db.select().from(images).where(eq(images.key, up.key))).toEqual([]);
    expect((await ctx.request(new URL(up.url).pathname)).status).toBe(404);
    expect((await latestAudit()).action).toBe("DELETE /api/admin/users/{id}");
    expect((await visitor.get(`/user/admin/users/${user.id}`)).status).toBe(404);
  });
});

describe("authorization matrix of the Overview and Users pages", () => {
  const pages = (id: number) => ["/user/admin", "/user/admin/users", `/user/admin/users/${id}`];
  const posts = (id: number): [string, Record<string, string>][] => [
    ["/user/admin/users", { username: uniqueName(), email: `${uniqueName()}@example.com` }],
    [`/user/admin/users/${id}/edit`, { name: "Changed by a stranger" }],
    [`/user/admin/users/${id}/password`, { password: "a stranger's password" }],
    [`/user/admin/users/${id}/password-link`, {}],
    [`/user/admin/users/${id}/sign-out`, {}],
    [`/user/admin/users/${id}/delete`, { confirm: "x" }],
  ];

  test("anonymous: sent to sign in; a user: 403; nothing changes", async () => {
    const victim = await ctx.createUser();
    const anonymous = new Visitor();
    for (const p of pages(victim.id)) expect((await anonymous.get(p)).status, p).toBe(303);
    for (const [p, f] of posts(victim.id)) expect((await anonymous.post(p, f, { formToken: null })).status, p).toBe(303);
    const { visitor } = await signedIn("user");
    for (const p of pages(victim.id)) {
      const res = await visitor.get(p);
      expect(res.status, p).toBe(403);
      expect(await res.text()).toContain("This page is for administrators.");
    }
    for (const [p, f] of posts(victim.id)) expect((await visitor.post(p, f)).status, p).toBe(403);
    const [row] = await ctx.db.select().from(users).where(eq(users.id, victim.id));
    expect(row!.name).not.toBe("Changed by a stranger");
    expect((await ctx.json("/api/v1/profile", { headers: ctx.bearer(victim.token) })).status).toBe(200);
    // the nav shows Admin to administrators only
    expect(await (await visitor.get("/user/dashboard")).text()).not.toContain('href="/user/admin"');
  });

  test("a cross-site post is a 403; a disabled administrator is signed out; the site switch does not lock administrators out", async () => {
    const victim = await ctx.createUser();
    const { user, visitor } = await signedIn();
    expect(await (await visitor.get("/user/dashboard")).text()).toContain('href="/user/admin"');
    for (const [p, f] of posts(victim.id)) {
      expect((await visitor.post(p, f, { origin: "https://evil.example" })).status, p).toBe(403);
      expect((await visitor.post(p, f, { formToken: null })).status, p).toBe(403);
    }
    expect((await ctx.json("/api/v1/profile", { headers: ctx.bearer(victim.token) })).status).toBe(200);

    await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: false });
    try {
      for (const p of pages(victim.id)) expect((await visitor.get(p)).status, p).toBe(200);
      expect((await visitor.get("/user/dashboard")).status).toBe(403); // the user pages follow the switch
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: true });
    }
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { enabled: false });
    for (const p of pages(victim.id)) expect((await visitor.get(p)).status, p).toBe(303);
  });
});
