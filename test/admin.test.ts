import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { users } from "../src/db/schema.ts";
import { ADMIN_TOKEN, createTestContext, type TestContext } from "./support/harness.ts";
import { expectStatus } from "./support/status.ts";

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
    expect(await ctx.admin("GET", "/api/admin/settings")).toEqual({ api_enabled: true, guest_upload_enabled: false, registration_enabled: false });
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
