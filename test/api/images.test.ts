import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { images, pendingRemovals, strategies } from "../../src/db/schema.ts";
import { runDueRemovals } from "../../src/services/removals.ts";
import { sweepExpired } from "../../src/services/sweeper.ts";
import { createTestContext, quietly, type TestContext, type TestUser } from "../support/harness.ts";
import { makeImage, makeNoisyJpeg } from "../support/images.ts";
import { describeAnswers, expectStatus, expectStatuses } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let png: Uint8Array;

beforeAll(async () => {
  ctx = await createTestContext();
  alice = await ctx.createUser();
  bob = await ctx.createUser();
  png = await makeImage("png", 32, 32);
});
afterAll(() => ctx.close());

const uploadPng = (user: TestUser, name = "a.png", fields: Record<string, string> = {}) =>
  ctx.upload(user.token, { bytes: png, filename: name, contentType: "image/png" }, fields);
const pathOf = (url: string) => decodeURIComponent(new URL(url).pathname.slice(3));
const stored = (url: string) => join(ctx.dataDir, "uploads", decodeURIComponent(new URL(url).pathname.slice(3)));
const del = (user: TestUser, key: string) => ctx.json(`/api/v1/images/${encodeURIComponent(key)}`, { method: "DELETE", headers: ctx.bearer(user.token) });

describe("GET /api/v1/images", () => {
  test("only the caller's images, newest first, paged, each item shaped like the upload answer", async () => {
    const carol = await ctx.createUser();
    const uploaded: any[] = [];
    for (let i = 0; i < 7; i++) {
      uploaded.push((await uploadPng(carol, `n${i}.png`)).body.data);
      if (i % 2 === 0) ctx.advance(1000); // some share a created_at second, some don't
    }
    await uploadPng(bob, "bob.png");

    const page1 = await ctx.json("/api/v1/images?per_page=3", { headers: ctx.bearer(carol.token) });
    expectStatus(page1, 200);
    expect(page1.body.data).toMatchObject({ current_page: 1, last_page: 3, per_page: 3, total: 7 });
    const all: any[] = [];
    for (let page = 1; page <= 3; page++) {
      const res = await ctx.json(`/api/v1/images?per_page=3&page=${page}`, { headers: ctx.bearer(carol.token) });
      expect(res.body.data.current_page).toBe(page);
      all.push(...res.body.data.data);
    }
    // newest first; ties (same second) in reverse upload order; no overlap, nothing missing
    expect(all.map((i) => i.key)).toEqual(uploaded.map((u) => u.key).reverse());
    expect(all[0]).toEqual(uploaded[6]);
    const beyond = await ctx.json("/api/v1/images?per_page=3&page=4", { headers: ctx.bearer(carol.token) });
    expect(beyond.body.data.data).toEqual([]);
    expect(beyond.body.data.total).toBe(7);
    // default per_page is 30
    const dflt = await ctx.json("/api/v1/images", { headers: ctx.bearer(carol.token) });
    expect(dflt.body.data).toMatchObject({ current_page: 1, last_page: 1, per_page: 30, total: 7 });
    expect(dflt.body.data.data).toHaveLength(7);
  });

  test("an account with no images: one empty page", async () => {
    const empty = await ctx.createUser();
    const res = await ctx.json("/api/v1/images", { headers: ctx.bearer(empty.token) });
    expect(res.body.data).toEqual({ current_page: 1, last_page: 1, per_page: 30, total: 0, data: [] });
  });

  test("per_page and page out of range or ill-typed → 422", async () => {
    for (const q of ["per_page=0", "per_page=101", "per_page=abc", "per_page=1.5", "page=0", "page=-1"]) {
      const res = await ctx.json(`/api/v1/images?${q}`, { headers: ctx.bearer(alice.token) });
      expectStatus(res, 422);
      expect(Object.keys(res.body.errors)).toEqual([q.split("=")[0]]);
    }
    expectStatus(await ctx.json("/api/v1/images?per_page=100", { headers: ctx.bearer(alice.token) }), 200);
    expectStatus(await ctx.json("/api/v1/images?per_page=1", { headers: ctx.bearer(alice.token) }), 200);
  });
});

describe("DELETE /api/v1/images/{key}", () => {
  test("by key: object, thumbnail and record removed; capacity, quota and counters released", async () => {
    const jpeg = await makeNoisyJpeg(900, 700);
    const up = (await ctx.upload(alice.token, { bytes: jpeg, filename: "big.jpg", contentType: "image/jpeg" })).body.data;
    expect(existsSync(stored(up.url))).toBe(true);
    expect(existsSync(stored(up.thumbnail_url))).toBe(true);
    const [strategyBefore] = await ctx.db.select().from(strategies).where(eq(strategies.id, 1));
    const profileBefore = (await ctx.json("/api/v1/profile", { headers: ctx.bearer(alice.token) })).body.data;

    const res = await del(alice, up.key);
    expectStatus(res, 200);
    expect(res.body).toEqual({ status: true, message: "success", data: null });
    expect(existsSync(stored(up.url))).toBe(false);
    expect(existsSync(stored(up.thumbnail_url))).toBe(false);
    expect(await ctx.db.select().from(images).where(eq(images.key, up.key))).toEqual([]);
    const [strategyAfter] = await ctx.db.select().from(strategies).where(eq(strategies.id, 1));
    expect(strategyBefore!.usedBytes - strategyAfter!.usedBytes).toBe(jpeg.byteLength);
    const profileAfter = (await ctx.json("/api/v1/profile", { headers: ctx.bearer(alice.token) })).body.data;
    expect(profileAfter.image_num).toBe(profileBefore.image_num - 1);
    expect(profileAfter.size).toBeCloseTo(profileBefore.size - jpeg.byteLength / 1024, 6);
    // the served address is gone too
    await expectStatus(await ctx.request(new URL(up.url).pathname), 404);
    // a second delete is a 404
    expectStatus(await del(alice, up.key), 404);
  });

  test("by stored file name with extension", async () => {
    const up = (await uploadPng(alice)).body.data;
    expectStatus(await del(alice, up.name), 200);
    expect(existsSync(stored(up.url))).toBe(false);
  });

  test("missing and foreign images answer the same 404, and the foreign image survives", async () => {
    const mine = (await uploadPng(bob)).body.data;
    const foreign = await del(alice, mine.key);
    const foreignByName = await del(alice, mine.name);
    const missing = await del(alice, "doesNotExist1234");
    expectStatus(foreign, 404);
    expectStatus(foreignByName, 404);
    expectStatus(missing, 404);
    expect(foreign.body).toEqual(missing.body);
    expect(foreign.body).toEqual({ status: false, message: "Image not found.", data: null });
    expect(existsSync(stored(mine.url))).toBe(true);
    expect((await ctx.db.select().from(images).where(eq(images.key, mine.key))).length).toBe(1);
  });

  test("storage failure after the commit: the image is gone for the account (200, charges released), its object retried until removed", async () => {
    const up = (await uploadPng(alice)).body.data;
    const profileBefore = (await ctx.json("/api/v1/profile", { headers: ctx.bearer(alice.token) })).body.data;
    // the object's path becomes a non-empty directory: removing it fails like a broken disk would
    const file = stored(up.url);
    rmSync(file);
    mkdirSync(file);
    writeFileSync(join(file, "keep"), "x");
    const { result: res } = await quietly(() => del(alice, up.key));
    expectStatus(res, 200);
    expect(await ctx.db.select().from(images).where(eq(images.key, up.key))).toEqual([]);
    const profileAfter = (await ctx.json("/api/v1/profile", { headers: ctx.bearer(alice.token) })).body.data;
    expect(profileAfter.image_num).toBe(profileBefore.image_num - 1);
    expect(profileAfter.size).toBeCloseTo(profileBefore.size - png.byteLength / 1024, 6);
    // the removal stays pending, its failure counted, waiting out its backoff
    const pending = await ctx.db
      .select()
      .from(pendingRemovals)
      .where(eq(pendingRemovals.path, pathOf(up.url)));
    expect(pending.map((p) => [p.reason, p.attempts])).toEqual([["delete", 1]]);
    expect(existsSync(file)).toBe(true);
    // once the storage recovers, a worker's next try removes the object
    rmSync(file, { recursive: true });
    writeFileSync(file, png);
    await ctx.db
      .update(pendingRemovals)
      .set({ dueAt: new Date(Date.now() - 1000) })
      .where(eq(pendingRemovals.path, pathOf(up.url)));
    expect(await runDueRemovals(ctx.deps)).toEqual({ removed: 1, failed: 0 });
    expect(existsSync(file)).toBe(false);
    expect(
      await ctx.db
        .select()
        .from(pendingRemovals)
        .where(eq(pendingRemovals.path, pathOf(up.url))),
    ).toEqual([]);
    expectStatus(await del(alice, up.key), 404);
  });

  test("concurrent deletes of different images all succeed, counters stay exact", async () => {
    const dave = await ctx.createUser();
    const keys: string[] = [];
    for (let i = 0; i < 12; i++) keys.push((await uploadPng(dave, `d${i}.png`)).body.data.key);
    const results = await Promise.all(keys.map((k) => del(dave, k)));
    expectStatuses(
      results,
      keys.map(() => 200),
    );
    const profile = (await ctx.json("/api/v1/profile", { headers: ctx.bearer(dave.token) })).body.data;
    expect([profile.image_num, profile.size]).toEqual([0, 0]);
    // and the same image deleted twice at once: one 200, one 404
    const key = (await uploadPng(dave)).body.data.key;
    const both = await Promise.all([del(dave, key), del(dave, key)]);
    expect(both.map((r) => r.status).sort(), describeAnswers(both)).toEqual([200, 404]);
    expect((await ctx.json("/api/v1/profile", { headers: ctx.bearer(dave.token) })).body.data.image_num).toBe(0);
  });
});

describe("expiry", () => {
  test("an expired image answers 404 at once, and the sweeper removes object, record and charges", async () => {
    const erin = await ctx.createUser();
    const expires = new Date(ctx.now().getTime() + 30_000).toISOString();
    const up = (await ctx.upload(erin.token, { bytes: png, filename: "e.png", contentType: "image/png" }, { expired_at: expires })).body.data;
    const keep = (await uploadPng(erin)).body.data;
    const path = new URL(up.url).pathname;
    const served = await ctx.request(path);
    await expectStatus(served, 200);
    expect(Number(served.headers.get("cache-control")?.match(/max-age=(\d+)/)?.[1])).toBeLessThanOrEqual(30);

    ctx.advance(31_000);
    await expectStatus(await ctx.request(path), 404); // before any sweep
    expect(existsSync(stored(up.url))).toBe(true);

    expect(await sweepExpired(ctx.deps)).toBe(1);
    expect(existsSync(stored(up.url))).toBe(false);
    expect(await ctx.db.select().from(images).where(eq(images.key, up.key))).toEqual([]);
    const profile = (await ctx.json("/api/v1/profile", { headers: ctx.bearer(erin.token) })).body.data;
    expect(profile.image_num).toBe(1);
    expect(profile.size).toBe(png.byteLength / 1024);
    await expectStatus(await ctx.request(new URL(keep.url).pathname), 200);
    expect(await sweepExpired(ctx.deps)).toBe(0);
  });

  test("several sweepers at once remove each image exactly once", async () => {
    const frank = await ctx.createUser();
    const expires = new Date(ctx.now().getTime() + 5_000).toISOString();
    for (let i = 0; i < 10; i++) {
      await ctx.upload(frank.token, { bytes: png, filename: `s${i}.png`, contentType: "image/png" }, { expired_at: expires });
    }
    ctx.advance(6_000);
    const counts = await Promise.all([sweepExpired(ctx.deps), sweepExpired(ctx.deps), sweepExpired(ctx.deps)]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(10);
    const profile = (await ctx.json("/api/v1/profile", { headers: ctx.bearer(frank.token) })).body.data;
    expect([profile.image_num, profile.size]).toEqual([0, 0]);
  });

  test("an image whose storage fails is still removed for its owner; its object is retried by the removal workers", async () => {
    const gina = await ctx.createUser();
    const expires = new Date(ctx.now().getTime() + 5_000).toISOString();
    const stuck = (await ctx.upload(gina.token, { bytes: png, filename: "stuck.png", contentType: "image/png" }, { expired_at: expires })).body.data;
    const fine = (await ctx.upload(gina.token, { bytes: png, filename: "fine.png", contentType: "image/png" }, { expired_at: expires })).body.data;
    const file = stored(stuck.url);
    rmSync(file);
    mkdirSync(file);
    writeFileSync(join(file, "keep"), "x");
    ctx.advance(6_000);
    expect((await quietly(() => sweepExpired(ctx.deps))).result).toBe(2);
    expect(existsSync(stored(fine.url))).toBe(false);
    expect(await ctx.db.select().from(images).where(eq(images.key, stuck.key))).toEqual([]);
    expect((await ctx.json("/api/v1/profile", { headers: ctx.bearer(gina.token) })).body.data.image_num).toBe(0);
    const stuckPath = pathOf(stuck.url);
    const pending = await ctx.db.select().from(pendingRemovals).where(eq(pendingRemovals.path, stuckPath));
    expect(pending.map((p) => [p.reason, p.attempts])).toEqual([["expiry", 1]]);
    rmSync(file, { recursive: true });
    await ctx.db
      .update(pendingRemovals)
      .set({ dueAt: new Date(Date.now() - 1000) })
      .where(eq(pendingRemovals.path, stuckPath));
    expect(await runDueRemovals(ctx.deps)).toEqual({ removed: 1, failed: 0 });
    expect(await ctx.db.select().from(pendingRemovals).where(eq(pendingRemovals.path, stuckPath))).toEqual([]);
  });
});
