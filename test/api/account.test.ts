import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { tokens } from "../../src/db/schema.ts";
import { sha256Hex } from "../../src/services/secrets.ts";
import { BASE_URL, createTestContext, type TestContext, type TestUser } from "../support/harness.ts";
import { makeImage, multipart } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

let ctx: TestContext;
let alice: TestUser;

beforeAll(async () => {
  ctx = await createTestContext();
  alice = await ctx.createUser({ name: "Alice Liddell", registered_ip: "203.0.113.7" });
});
afterAll(() => ctx.close());

async function upload(token: string, bytes: Uint8Array, filename = "a.png") {
  const m = multipart([{ name: "file", value: bytes, filename, contentType: "image/png" }]);
  return ctx.json("/api/v1/upload", { method: "POST", headers: { ...ctx.bearer(token), "content-type": m.contentType }, body: m.body });
}

describe("GET /api/v1/profile", () => {
  test("every field of 2.2, capacity from the group default", async () => {
    const body = expectStatus(await ctx.json("/api/v1/profile", { headers: ctx.bearer(alice.token) }), 200);
    expect(body).toEqual({
      status: true,
      message: "success",
      data: {
        username: alice.username,
        name: "Alice Liddell",
        avatar: `https://www.gravatar.com/avatar/${sha256Hex(`${alice.username}@example.com`)}?d=identicon`,
        email: `${alice.username}@example.com`,
        capacity: 1048576,
        size: 0,
        url: `${BASE_URL}/user/dashboard`,
        image_num: 0,
        album_num: 0,
        registered_ip: "203.0.113.7",
      },
    });
  });

  test("the typed client generated from the spec reads the same profile", async () => {
    const answer = await ctx.api.GET("/api/v1/profile", { headers: ctx.bearer(alice.token) });
    expectStatus(answer, 200);
    expect(answer.data?.data.username).toBe(alice.username);
  });

  test("counters stay exact: size in fractional KB, images and albums counted, capacity override", async () => {
    const bob = await ctx.createUser({ capacity_kb: 2048 });
    const png = await makeImage("png", 30, 30);
    const up = await upload(bob.token, png);
    expectStatus(up, 200);
    await ctx.admin("POST", `/api/admin/users/${bob.id}/albums`, { name: "Holiday" });
    await ctx.admin("POST", `/api/admin/users/${bob.id}/albums`, { name: "Work" });
    const { body } = await ctx.json("/api/v1/profile", { headers: ctx.bearer(bob.token) });
    expect(body.data.capacity).toBe(2048);
    expect(body.data.size).toBe(png.byteLength / 1024);
    expect(Number.isInteger(body.data.size)).toBe(false);
    expect(body.data.image_num).toBe(1);
    expect(body.data.album_num).toBe(2);
    await ctx.json(`/api/v1/images/${up.body.data.key}`, { method: "DELETE", headers: ctx.bearer(bob.token) });
    const after = await ctx.json("/api/v1/profile", { headers: ctx.bearer(bob.token) });
    expect(after.body.data.size).toBe(0);
    expect(after.body.data.image_num).toBe(0);
    // back to the group default
    await ctx.admin("PATCH", `/api/admin/users/${bob.id}`, { capacity_kb: null });
    expect((await ctx.json("/api/v1/profile", { headers: ctx.bearer(bob.token) })).body.data.capacity).toBe(1048576);
  });
});

describe("GET /api/v1/strategies", () => {
  test("the group's enabled strategies in group order, with q as a case-insensitive substring", async () => {
    const s3 = await ctx.admin("POST", "/api/admin/strategies", {
      name: "Cloud S3",
      driver: "s3",
      config: { bucket: "b", url: "https://cdn.example.com" },
    });
    const backup = await ctx.admin("POST", "/api/admin/strategies", { name: "Local backup", driver: "local", config: {} });
    const off = await ctx.admin("POST", "/api/admin/strategies", { name: "Local off", driver: "local", enabled: false });
    const group = await ctx.admin("POST", "/api/admin/groups", { name: "Ordered", strategy_ids: [backup.id, s3.id, off.id, 1] });
    const carol = await ctx.createUser({ group_id: group.id });

    const all = expectStatus(await ctx.json("/api/v1/strategies", { headers: ctx.bearer(carol.token) }), 200);
    expect(all.data).toEqual({
      strategies: [
        { id: backup.id, name: "Local backup" },
        { id: s3.id, name: "Cloud S3" },
        { id: 1, name: "Local" },
      ],
    });
    const filtered = await ctx.json("/api/v1/strategies?q=LOC", { headers: ctx.bearer(carol.token) });
    expect(filtered.body.data.strategies.map((s: { id: number }) => s.id)).toEqual([backup.id, 1]);
    const none = await ctx.json("/api/v1/strategies?q=%25", { headers: ctx.bearer(carol.token) });
    expect(none.body.data.strategies).toEqual([]);
    // another group sees only its own
    const own = await ctx.json("/api/v1/strategies", { headers: ctx.bearer(alice.token) });
    expect(own.body.data.strategies).toEqual([{ id: 1, name: "Local" }]);
  });

  test("guests list the guest group's strategies when guest upload is on", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
    const body = expectStatus(await ctx.json("/api/v1/strategies"), 200);
    expect(body.data.strategies).toEqual([{ id: 1, name: "Local" }]);
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: false });
    expectStatus(await ctx.json("/api/v1/strategies"), 401);
  });
});

describe("POST /api/v1/images/tokens", () => {
  const issue = (body: unknown, type = "application/json") =>
    ctx.json("/api/v1/images/tokens", {
      method: "POST",
      headers: { ...ctx.bearer(alice.token), "content-type": type },
      body: type === "application/json" ? JSON.stringify(body) : new URLSearchParams(body as Record<string, string>).toString(),
    });

  test("issues num tokens expiring after seconds, formatted YYYY-MM-DD HH:MM:SS; only hashes are stored", async () => {
    const before = Math.floor(ctx.now().getTime() / 1000);
    const body = expectStatus(await issue({ num: 3, seconds: 3600 }), 200);
    expect(body.status).toBe(true);
    expect(body.message).toBe("success");
    const issued = body.data.tokens as { token: string; expired_at: string }[];
    expect(issued).toHaveLength(3);
    expect(new Set(issued.map((t) => t.token)).size).toBe(3);
    for (const t of issued) {
      expect(t.token).toMatch(/^[A-Za-z0-9_-]{40}$/);
      expect(t.expired_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      const [d, time] = t.expired_at.split(" ");
      const expires = new Date(`${d}T${time}`).getTime() / 1000; // server time zone = this process's
      expect(expires - before).toBeGreaterThanOrEqual(3600);
      expect(expires - before).toBeLessThanOrEqual(3601);
      const [row] = await ctx.db
        .select()
        .from(tokens)
        .where(eq(tokens.secretHash, sha256Hex(t.token)));
      expect(row?.kind).toBe("temporary");
      expect(JSON.stringify(row)).not.toContain(t.token);
    }
  });

  test("accepts a form body and string numbers", async () => {
    const body = expectStatus(await issue({ num: "2", seconds: "60" }, "application/x-www-form-urlencoded"), 200);
    expect(body.data.tokens).toHaveLength(2);
  });

  test("limits: num 1–100, seconds 1–2626560", async () => {
    expectStatus(await issue({ num: 100, seconds: 2626560 }), 200);
    expectStatus(await issue({ num: 1, seconds: 1 }), 200);
    const cases: [unknown, string[]][] = [
      [{ num: 0, seconds: 60 }, ["num"]],
      [{ num: 101, seconds: 60 }, ["num"]],
      [{ num: 1, seconds: 0 }, ["seconds"]],
      [{ num: 1, seconds: 2626561 }, ["seconds"]],
      [{ num: 1.5, seconds: 60 }, ["num"]],
      [{ num: "many", seconds: 60 }, ["num"]],
      [{ seconds: 60 }, ["num"]],
      [{}, ["num", "seconds"]],
    ];
    for (const [input, fields] of cases) {
      const body = expectStatus(await issue(input), 422);
      expect(body.status).toBe(false);
      expect(body.data).toBeNull();
      expect(Object.keys(body.errors).sort()).toEqual(fields);
      for (const f of fields) expect(body.errors[f][0]).toContain(f);
    }
    expectStatus(await ctx.json("/api/v1/images/tokens", { method: "POST", headers: ctx.bearer(alice.token) }), 422);
    const badJson = await ctx.json("/api/v1/images/tokens", {
      method: "POST",
      headers: { ...ctx.bearer(alice.token), "content-type": "application/json" },
      body: "{nope",
    });
    expectStatus(badJson, 422);
  });

  test("a temporary token uploads, then stops working when it expires", async () => {
    const token = expectStatus(await issue({ num: 1, seconds: 30 }), 200).data.tokens[0].token;
    const png = await makeImage("png", 10, 10);
    const ok = await upload(token, png);
    expectStatus(ok, 200);
    // the image belongs to the account that issued the token
    const list = await ctx.json("/api/v1/images", { headers: ctx.bearer(alice.token) });
    expect(list.body.data.data.map((i: { key: string }) => i.key)).toContain(ok.body.data.key);
    ctx.advance(31_000);
    expectStatus(await upload(token, png), 401);
  });
});

describe("GET /health and the spec", () => {
  test("health answers 200 while the database answers", async () => {
    expect(expectStatus(await ctx.json("/health"), 200)).toEqual({ status: true, message: "success", data: { database: "up" } });
  });

  test("the served spec is the committed one, with this server's address", async () => {
    const served = await expectStatus(await ctx.request("/api/v1/openapi.json"), 200);
    const committed = await Bun.file(`${import.meta.dir}/../../openapi/openapi.json`).json();
    expect(served.servers).toEqual([{ url: BASE_URL }]);
    expect({ ...served, servers: committed.servers }).toEqual(committed);
  });

  test("docs are served with the Scalar bundle from this server", async () => {
    const page: string = await expectStatus(await ctx.request("/docs"), 200);
    expect(page).toContain("/docs/scalar.js");
    expect(page).toContain("/api/v1/openapi.json");
    const script = await ctx.request("/docs/scalar.js");
    const source: string = await expectStatus(script, 200);
    expect(script.headers.get("content-type")).toContain("javascript");
    expect(Buffer.byteLength(source)).toBeGreaterThan(100_000);
  });

  test("health answers 503 when the database is gone", async () => {
    const other = await createTestContext();
    await other.close();
    const res = await other.app.request(`${BASE_URL}/health`);
    expect(await expectStatus(res, 503)).toEqual({ status: false, message: "The database does not answer.", data: null });
  });
});
