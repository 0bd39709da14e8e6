import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { images, strategies } from "../../src/db/schema.ts";
import { createTestContext, type TestContext } from "../support/harness.ts";
import { makeNoisyJpeg } from "../support/images.ts";
import { describeAnswers, expectStatus, expectStatuses } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

let ctx: TestContext;
let png: Uint8Array; // the same bytes for every upload here, so sizes are exact
let size: number;

beforeAll(async () => {
  ctx = await createTestContext();
  // a photo-like JPEG of several KB, so KB-granular quotas can sit between n and n+1 files
  png = await makeNoisyJpeg(96, 96);
  size = png.byteLength;
  expect(size).toBeGreaterThan(4096);
});
afterAll(() => ctx.close());

const file = () => ({ bytes: png, filename: "a.jpg", contentType: "image/jpeg" });
/** A quota or capacity in KB with room for n files and not n+1. */
const roomFor = (n: number) => Math.floor((size * n + size / 2) / 1024);

/** A group of its own with these strategies and settings, and a user in it. */
async function userInGroup(group: Record<string, unknown>, user: Record<string, unknown> = {}) {
  const g = await ctx.admin("POST", "/api/admin/groups", { name: `g${Math.random()}`, ...group });
  return { group: g, user: await ctx.createUser({ group_id: g.id, ...user }) };
}

async function strategyUsedBytes(id: number) {
  const [row] = await ctx.db.select().from(strategies).where(eq(strategies.id, id));
  return row!.usedBytes;
}

describe("strategy selection (contract 4.2)", () => {
  test("rule 1: without strategy_id, the first strategy in group order with enough quota", async () => {
    const first = await ctx.admin("POST", "/api/admin/strategies", { name: "First", driver: "local", quota_kb: roomFor(2) });
    const second = await ctx.admin("POST", "/api/admin/strategies", { name: "Second", driver: "local", quota_kb: null });
    const { user } = await userInGroup({ strategy_ids: [first.id, second.id] });

    const keysOn = async (id: number) => (await ctx.db.select().from(images).where(eq(images.strategyId, id))).map((r) => r.key);
    const r1 = await ctx.upload(user.token, file());
    const r2 = await ctx.upload(user.token, file());
    const r3 = await ctx.upload(user.token, file());
    expectStatuses([r1, r2, r3], [200, 200, 200]);
    expect(await keysOn(first.id)).toEqual([r1.body.data.key, r2.body.data.key]);
    expect(await keysOn(second.id)).toEqual([r3.body.data.key]);
    expect(await strategyUsedBytes(first.id)).toBe(2 * size);

    // rule 2: when the first regains quota, automatic uploads prefer it again
    expectStatus(await ctx.json(`/api/v1/images/${r1.body.data.key}`, { method: "DELETE", headers: ctx.bearer(user.token) }), 200);
    expect(await strategyUsedBytes(first.id)).toBe(size);
    const r4 = await ctx.upload(user.token, file());
    expect(await keysOn(first.id)).toContain(r4.body.data.key);

    // rule 3: strategy_id given and lacking quota → 400, no fallback
    const r5 = await ctx.upload(user.token, file(), { strategy_id: String(first.id) });
    expectStatus(r5, 400);
    expect(r5.body.message).toContain("quota");
    expect(await keysOn(second.id)).toEqual([r3.body.data.key]);
    // and with room, strategy_id is honoured even when it is not first
    const r6 = await ctx.upload(user.token, file(), { strategy_id: String(second.id) });
    expectStatus(r6, 200);
    expect(await keysOn(second.id)).toContain(r6.body.data.key);
  });

  test("rule 1 under concurrency: uploads that lose the first strategy's quota to a race go to the next one", async () => {
    const first = await ctx.admin("POST", "/api/admin/strategies", { name: "Small", driver: "local", quota_kb: roomFor(3) });
    const second = await ctx.admin("POST", "/api/admin/strategies", { name: "Big", driver: "local", quota_kb: null });
    const { user } = await userInGroup({ strategy_ids: [first.id, second.id] });
    const results = await Promise.all(Array.from({ length: 12 }, () => ctx.upload(user.token, file())));
    expectStatuses(
      results,
      results.map(() => 200),
    );
    expect(await strategyUsedBytes(first.id)).toBe(3 * size);
    expect(await strategyUsedBytes(second.id)).toBe(9 * size);
    // with strategy_id there is no fallback, even in a race
    const full = await Promise.all(Array.from({ length: 3 }, () => ctx.upload(user.token, file(), { strategy_id: String(first.id) })));
    expectStatuses(full, [400, 400, 400]);
  });

  test("strategy_id must be usable by the caller's group: another group's or a disabled one → 400", async () => {
    const mine = await ctx.admin("POST", "/api/admin/strategies", { name: "Mine", driver: "local" });
    const theirs = await ctx.admin("POST", "/api/admin/strategies", { name: "Theirs", driver: "local" });
    const { user } = await userInGroup({ strategy_ids: [mine.id] });
    for (const id of [theirs.id, 999999]) {
      const res = await ctx.upload(user.token, file(), { strategy_id: String(id) });
      expectStatus(res, 400);
      expect(res.body.message).toContain("not available");
    }
    await ctx.admin("PATCH", `/api/admin/strategies/${mine.id}`, { enabled: false });
    expectStatus(await ctx.upload(user.token, file(), { strategy_id: String(mine.id) }), 400);
    expectStatus(await ctx.upload(user.token, file()), 400); // no usable strategy left
  });

  test("every strategy full → 400 and nothing stored", async () => {
    const tiny = await ctx.admin("POST", "/api/admin/strategies", { name: "Tiny", driver: "local", quota_kb: 0 });
    const { user } = await userInGroup({ strategy_ids: [tiny.id] });
    const res = await ctx.upload(user.token, file());
    expectStatus(res, 400);
    expect(res.body.message).toContain("quota");
  });
});

describe("capacity (check 3)", () => {
  test("an upload that would pass the account's capacity → 400; exactly at capacity → 200", async () => {
    const { user } = await userInGroup({ strategy_ids: [1] }, { capacity_kb: roomFor(2) });
    expectStatus(await ctx.upload(user.token, file()), 200);
    expectStatus(await ctx.upload(user.token, file()), 200);
    const third = await ctx.upload(user.token, file());
    expectStatus(third, 400);
    expect(third.body.message).toBe("Insufficient capacity.");
  });

  test("50 concurrent uploads never push used space past capacity or quota", async () => {
    const fit = 7;
    const quota = await ctx.admin("POST", "/api/admin/strategies", { name: "Race", driver: "local", quota_kb: roomFor(12) });
    const { user } = await userInGroup({ strategy_ids: [quota.id] }, { capacity_kb: roomFor(fit) });
    const results = await Promise.all(Array.from({ length: 50 }, () => ctx.upload(user.token, file())));
    const ok = results.filter((r) => r.status === 200).length;
    const refused = results.filter((r) => r.status === 400);
    expect(ok, describeAnswers(results)).toBe(fit);
    expect(refused.length, describeAnswers(results)).toBe(50 - fit);
    for (const r of refused) expect(r.body.message).toBe("Insufficient capacity.");
    const profile = await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) });
    expect(profile.body.data.image_num).toBe(fit);
    expect(profile.body.data.size).toBe((fit * size) / 1024);
    expect(await strategyUsedBytes(quota.id)).toBe(fit * size);

    // the strategy quota holds the same way across accounts
    const others = await Promise.all(Array.from({ length: 5 }, () => ctx.createUser()));
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { strategy_ids: [quota.id] });
    const burst = await Promise.all(others.flatMap((o) => Array.from({ length: 5 }, () => ctx.upload(o.token, file()))));
    expect(burst.filter((r) => r.status === 200).length, describeAnswers(burst)).toBe(12 - fit);
    expect(await strategyUsedBytes(quota.id)).toBe(12 * size);
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { strategy_ids: [1] });
  });
});

describe("frequency (check 4)", () => {
  test("per-minute limit counts every accepted upload, deleted or not, and the window rolls", async () => {
    const { user } = await userInGroup({ strategy_ids: [1], uploads_per_minute: 3 });
    const first = await ctx.upload(user.token, file());
    await ctx.json(`/api/v1/images/${first.body.data.key}`, { method: "DELETE", headers: ctx.bearer(user.token) });
    expectStatus(await ctx.upload(user.token, file()), 200);
    expectStatus(await ctx.upload(user.token, file()), 200);
    const fourth = await ctx.upload(user.token, file());
    expectStatus(fourth, 400);
    expect(fourth.body.message).toBe("Upload frequency limit reached: at most 3 uploads per minute.");
    ctx.advance(61_000);
    expectStatus(await ctx.upload(user.token, file()), 200);
  });

  test("hour, day, week and month windows each hold", async () => {
    for (const [field, window, step] of [
      ["uploads_per_hour", "hour", 3_600_000],
      ["uploads_per_day", "day", 86_400_000],
      ["uploads_per_week", "week", 7 * 86_400_000],
      ["uploads_per_month", "month", 30 * 86_400_000],
    ] as const) {
      const { user } = await userInGroup({ strategy_ids: [1], [field]: 2 });
      expectStatus(await ctx.upload(user.token, file()), 200);
      ctx.advance(61_000); // past the minute: only the longer window counts
      expectStatus(await ctx.upload(user.token, file()), 200);
      const refused = await ctx.upload(user.token, file());
      expectStatus(refused, 400);
      expect(refused.body.message).toContain(`per ${window}`);
      ctx.advance(step);
      expectStatus(await ctx.upload(user.token, file()), 200);
    }
  });

  test("concurrent uploads cannot overrun the frequency limit", async () => {
    const { user } = await userInGroup({ strategy_ids: [1], uploads_per_minute: 5 });
    const results = await Promise.all(Array.from({ length: 20 }, () => ctx.upload(user.token, file())));
    expect(results.filter((r) => r.status === 200).length, describeAnswers(results)).toBe(5);
  });

  test("guests are limited per IP address", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.guestGroupId}`, { uploads_per_minute: 2, concurrent_uploads: null });
    const from = (ip: string) => ctx.upload(null, file(), {}, { headers: { "x-forwarded-for": ip } });
    expectStatus(await from("198.51.100.7"), 200);
    expectStatus(await from("198.51.100.7"), 200);
    expectStatus(await from("198.51.100.7"), 400);
    expectStatus(await from("198.51.100.8"), 200);
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: false });
  });
});

describe("concurrency (check 5)", () => {
  test("uploads in flight beyond the group's limit → 400; slots are released afterwards", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let arrived = 0;
    const reviewer = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch() {
        arrived++;
        await gate;
        return Response.json({ allow: true });
      },
    });
    try {
      const { user } = await userInGroup({
        strategy_ids: [1],
        concurrent_uploads: 2,
        review_provider: "webhook",
        review_webhook_url: `http://127.0.0.1:${reviewer.port}/`,
        review_timeout_ms: 10_000,
      });
      const held = [ctx.upload(user.token, file()), ctx.upload(user.token, file())];
      while (arrived < 2) await Bun.sleep(5);
      const third = await ctx.upload(user.token, file());
      expectStatus(third, 400);
      expect(third.body.message).toBe("Too many concurrent uploads: at most 2 at a time.");
      release();
      expectStatuses(await Promise.all(held), [200, 200]);
      expectStatus(await ctx.upload(user.token, file()), 200);
    } finally {
      release();
      reviewer.stop(true);
    }
  });
});
