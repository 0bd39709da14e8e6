import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { GROUP_STRATEGIES_MAX, STRATEGIES_MAX } from "../../src/db/repositories/strategies.ts";
import { strategies, users } from "../../src/db/schema.ts";
import { ADMIN_TOKEN, createTestContext, type TestContext } from "../support/harness.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

let ctx: TestContext;

beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const call = (method: string, path: string, body?: unknown, type = "application/json") =>
  ctx.json(path, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body !== undefined ? { "content-type": type } : {}) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });

describe("administration API", () => {
  test("the seeded database: settings, a default and a guest group, one local strategy linked to both", async () => {
    expect(await ctx.admin("GET", "/api/admin/settings")).toEqual({
      api_enabled: true,
      guest_upload_enabled: false,
      registration_enabled: false,
      password_sign_in: true,
      site_name: "",
      site_logo: null,
      site_favicon: null,
      accent_color: "",
      default_locale: "en",
      require_second_factor: "off",
    });
    const { groups } = await ctx.admin("GET", "/api/admin/groups");
    expect(groups.map((g: any) => [g.name, g.is_default, g.is_guest, g.enabled, g.allow_api, g.strategy_ids])).toEqual([
      ["Default", true, false, true, true, [1]],
      ["Guests", false, true, true, true, [1]],
    ]);
    const { strategies } = await ctx.admin("GET", "/api/admin/strategies");
    expect(strategies).toEqual([{ id: 1, name: "Local", driver: "local", config: {}, quota_kb: null, used_kb: 0, enabled: true }]);
  });

  test("users: created in the default group, password stored hashed, duplicates refused", async () => {
    const u = await ctx.admin("POST", "/api/admin/users", { username: "zoe", email: "Zoe@Example.com", password: "correct horse" });
    expect(u).toMatchObject({ username: "zoe", name: "zoe", email: "zoe@example.com", group_id: 1, enabled: true, capacity_kb: null });
    const [row] = await ctx.db.select().from(users).where(eq(users.id, u.id));
    expect(row!.passwordHash).not.toContain("correct horse");
    expect(await Bun.password.verify("correct horse", row!.passwordHash!)).toBe(true);
    for (const body of [
      { username: "zoe", email: "other@example.com" },
      { username: "zoe2", email: "zoe@example.com" },
    ]) {
      const res = await call("POST", "/api/admin/users", body);
      expectStatus(res, 422);
      expect(res.body.message).toContain("already taken");
    }
    expectStatus(await call("POST", "/api/admin/users", { username: "x", email: "nope" }), 422);
    expectStatus(await call("POST", "/api/admin/users", { username: "guesty", email: "g@example.com", group_id: 2 }), 422);
    expectStatus(await call("GET", "/api/admin/users/999999"), 404);
    const { users: found } = await ctx.admin("GET", "/api/admin/users?username=zoe");
    expect(found.map((x: any) => x.id)).toEqual([u.id]);
  });

  test("groups and strategies: unknown or repeated strategy ids, bad driver config and unknown extensions are 422", async () => {
    expectStatus(await call("PATCH", "/api/admin/groups/1", { strategy_ids: [1, 1] }), 422);
    expectStatus(await call("PATCH", "/api/admin/groups/1", { strategy_ids: [424242] }), 422);
    expectStatus(await call("PATCH", "/api/admin/groups/1", { allowed_extensions: ["svg"] }), 422);
    expectStatus(await call("PATCH", "/api/admin/groups/999", { enabled: true }), 404);
    expectStatus(await call("POST", "/api/admin/groups", { name: "w", review_provider: "webhook" }), 422);
    const s3 = await call("POST", "/api/admin/strategies", { name: "S3", driver: "s3", config: { bucket: "b" } });
    expectStatus(s3, 422);
    expect(Object.keys(s3.body.errors)).toEqual(["config.url"]);
    expectStatus(await call("POST", "/api/admin/strategies", { name: "L", driver: "local", config: { rooot: "/x" } }), 422);
    expectStatus(await call("PATCH", "/api/admin/strategies/999", { name: "x" }), 404);
  });

  test("malformed JSON → 400, wrong media type → 415, token revocation of an unknown id → 404", async () => {
    const bad = await call("PATCH", "/api/admin/settings", "{nope");
    expectStatus(bad, 400);
    expect(bad.body).toMatchObject({ status: false, data: null });
    const wrongType = await call("PATCH", "/api/admin/settings", "api_enabled=true", "application/x-www-form-urlencoded");
    expectStatus(wrongType, 415);
    expectStatus(await call("DELETE", "/api/admin/tokens/999999"), 404);
  });
});

// every list has a LIMIT — the admin group and strategy lists are pages, a group's strategies are bounded
describe("bounded group and strategy lists", () => {
  test("GET /api/admin/groups is a page: page, per_page (1–500), current_page, last_page, total", async () => {
    for (let i = 0; i < 3; i++) await ctx.admin("POST", "/api/admin/groups", { name: `paged-group-${i}` });
    const all = await ctx.admin("GET", "/api/admin/groups");
    expect(all).toMatchObject({ current_page: 1, per_page: 100, last_page: 1 });
    expect(all.total).toBe(all.groups.length);
    expect(all.total).toBeGreaterThanOrEqual(5);

    const second = await ctx.admin("GET", "/api/admin/groups?page=2&per_page=2");
    expect(second).toMatchObject({ current_page: 2, per_page: 2, total: all.total, last_page: Math.ceil(all.total / 2) });
    expect(second.groups.map((g: any) => g.id)).toEqual(all.groups.slice(2, 4).map((g: any) => g.id));
    // each group of the page keeps its ordered strategies
    expect(second.groups.map((g: any) => g.strategy_ids)).toEqual(all.groups.slice(2, 4).map((g: any) => g.strategy_ids));
    const beyond = await ctx.admin("GET", `/api/admin/groups?page=${all.total + 1}&per_page=1`);
    expect(beyond.groups).toEqual([]);

    for (const query of ["per_page=501", "per_page=0", "page=0", "page=x"]) expectStatus(await call("GET", `/api/admin/groups?${query}`), 422);
  });

  test("GET /api/admin/strategies is a page the same way", async () => {
    for (let i = 0; i < 2; i++)
      await ctx.admin("POST", "/api/admin/strategies", { name: `paged-strategy-${i}`, driver: "local", config: { root: `/tmp/paged-${i}` } });
    const all = await ctx.admin("GET", "/api/admin/strategies");
    expect(all).toMatchObject({ current_page: 1, per_page: 100, last_page: 1, total: all.strategies.length });
    const page = await ctx.admin("GET", "/api/admin/strategies?page=2&per_page=1");
    expect(page).toMatchObject({ current_page: 2, per_page: 1, total: all.total, last_page: all.total });
    expect(page.strategies.map((s: any) => s.id)).toEqual([all.strategies[1].id]);
    expectStatus(await call("GET", "/api/admin/strategies?per_page=501"), 422);
  });

  test(`a group lists at most ${GROUP_STRATEGIES_MAX} strategies: ${GROUP_STRATEGIES_MAX} are kept in order and usable, one more is a 422`, async () => {
    const existing = (await ctx.admin("GET", "/api/admin/strategies?per_page=500")).strategies.map((s: any) => s.id);
    const rows = await ctx.db
      .insert(strategies)
      .values(Array.from({ length: GROUP_STRATEGIES_MAX + 1 - existing.length }, (_, i) => ({ name: `bulk-${i}`, driver: "local" as const, config: {} })))
      .returning({ id: strategies.id });
    const ids: number[] = [...existing, ...rows.map((r) => r.id)].reverse();
    expect(ids).toHaveLength(GROUP_STRATEGIES_MAX + 1);
    const group = await ctx.admin("POST", "/api/admin/groups", { name: "many-strategies" });

    const tooMany = await call("PATCH", `/api/admin/groups/${group.id}`, { strategy_ids: ids });
    expectStatus(tooMany, 422);
    expect(tooMany.body.message).toBe(`The strategy_ids field is invalid: A group lists at most ${GROUP_STRATEGIES_MAX} strategies.`);
    expect(tooMany.body.errors).toEqual({ strategy_ids: [tooMany.body.message] });
    expectStatus(await call("POST", "/api/admin/groups", { name: "too-many", strategy_ids: ids }), 422);

    const kept = ids.slice(0, GROUP_STRATEGIES_MAX);
    const saved = await ctx.admin("PATCH", `/api/admin/groups/${group.id}`, { strategy_ids: kept });
    expect(saved.strategy_ids).toEqual(kept);
    const listed = (await ctx.admin("GET", "/api/admin/groups?per_page=500")).groups.find((g: any) => g.id === group.id);
    expect(listed.strategy_ids).toEqual(kept);

    // a member of the group sees all of them, in the group's order (listUsableStrategies' LIMIT is the same bound)
    const member = await ctx.createUser({ group_id: group.id });
    const usable = await ctx.json("/api/v1/strategies", { headers: ctx.bearer(member.token) });
    expectStatus(usable, 200);
    expect(usable.body.data.strategies.map((s: any) => s.id)).toEqual(kept);
  });

  test(`the service holds at most ${STRATEGIES_MAX} strategies: creating one more is a 422`, async () => {
    const { total } = await ctx.admin("GET", "/api/admin/strategies?per_page=1");
    await ctx.db
      .insert(strategies)
      .values(Array.from({ length: STRATEGIES_MAX - total }, (_, i) => ({ name: `filler-${i}`, driver: "local" as const, config: {} })));
    const refused = await call("POST", "/api/admin/strategies", { name: "one too many", driver: "local" });
    expectStatus(refused, 422);
    expect(refused.body.message).toBe(`The service holds ${STRATEGIES_MAX} storage strategies, the most it may: change one instead.`);
    expect((await ctx.admin("GET", "/api/admin/strategies?per_page=1")).total).toBe(STRATEGIES_MAX);
  });
});
