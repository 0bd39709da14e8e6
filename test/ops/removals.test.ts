import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { eq, inArray, sql } from "drizzle-orm";
import { findImageForOwner, RecordRefused, recordAcceptedUpload } from "../../src/db/repositories/images.ts";
import { queueRemovals } from "../../src/db/repositories/stored-objects.ts";
import { images, pendingRemovals, users } from "../../src/db/schema.ts";
import type { Deps } from "../../src/deps.ts";
import { removeImage } from "../../src/services/delete.ts";
import { LEASE_SECONDS } from "../../src/services/limits.ts";
import { finishRemovals, leaseUploadObjects, retryDelaySeconds, runDueRemovals, startRemovals } from "../../src/services/removals.ts";
import { randomToken } from "../../src/services/secrets.ts";
import { StorageRegistry } from "../../src/storage/index.ts";
import { createTestContext, quietly, type TestContext, type TestUser } from "../support/harness.ts";
import { makeImage, makeNoisyJpeg } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

/**
 * Pending removals. A crash is simulated by stopping a step where a killed process would stop (the
 * delete's transaction committed, its objects not yet removed; an upload's objects written, its record never made),
 * then a removal worker's pass (runDueRemovals) plays the part of a surviving instance.
 */
let ctx: TestContext;
let alice: TestUser;
let png: Uint8Array;

beforeAll(async () => {
  ctx = await createTestContext();
  alice = await ctx.createUser();
  png = await makeImage("png", 32, 32);
});
afterAll(() => ctx.close());

const uploads = () => join(ctx.dataDir, "uploads");
const pathOf = (url: string) => decodeURIComponent(new URL(url).pathname.slice(3));
const onDisk = (path: string) => existsSync(join(uploads(), path));
const pendingFor = (paths: string[]) => ctx.db.select().from(pendingRemovals).where(inArray(pendingRemovals.path, paths));
/** Makes rows due now, as a lapsed lease or an elapsed backoff would (due times are on the database's clock). */
const makeDue = (paths: string[]) =>
  ctx.db.update(pendingRemovals).set({ dueAt: sql`now() - interval '1 second'` }).where(inArray(pendingRemovals.path, paths));
const profile = async (user: TestUser) => (await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) })).body.data;

describe("a delete killed between its commit and the objects' removal", () => {
  test("is done as the account sees it at once, and any worker removes the objects; serving stops when they go", async () => {
    const jpeg = await makeNoisyJpeg(900, 600);
    const up = expectStatus(await ctx.upload(alice.token, { bytes: jpeg, filename: "big.jpg", contentType: "image/jpeg" }), 200).data;
    const paths = [pathOf(up.url), pathOf(up.thumbnail_url)];
    const before = await profile(alice);
    // the object server has seen it (and kept its facts), as an instance serving it would have
    await expectStatus(await ctx.request(new URL(up.url).pathname), 200);

    // the delete's transaction, committed; the process dies before finishRemovals
    await ctx.db.transaction(async (tx) => {
      const image = await findImageForOwner(tx, up.key, alice.id, true);
      await removeImage(ctx.deps, tx, image!);
    });
    const after = await profile(alice);
    expect(after.image_num).toBe(before.image_num - 1);
    expect(after.size).toBeCloseTo(before.size - jpeg.byteLength / 1024, 6);
    expect(await ctx.db.select().from(images).where(eq(images.key, up.key))).toEqual([]);
    expect((await pendingFor(paths)).map((r) => [r.path, r.reason, r.attempts])).toEqual(paths.map((p) => [p, "delete", 0]));
    expect(paths.map(onDisk)).toEqual([true, true]);

    // due at once: the next pass of any instance's worker removes both objects
    expect(await runDueRemovals(ctx.deps)).toEqual({ removed: 2, failed: 0 });
    expect(paths.map(onDisk)).toEqual([false, false]);
    expect(await pendingFor(paths)).toEqual([]);
    await expectStatus(await ctx.request(new URL(up.url).pathname), 404);
    await expectStatus(await ctx.request(new URL(up.thumbnail_url).pathname), 404);
    expect(await runDueRemovals(ctx.deps)).toEqual({ removed: 0, failed: 0 });
  });

  test("a delete that answers has removed its objects and left no pending row", async () => {
    const up = expectStatus(await ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }), 200).data;
    expectStatus(await ctx.json(`/api/v1/images/${up.key}`, { method: "DELETE", headers: ctx.bearer(alice.token) }), 200);
    expect(onDisk(pathOf(up.url))).toBe(false);
    expect(await pendingFor([pathOf(up.url)])).toEqual([]);
  });
});

describe("an upload killed after writing its objects", () => {
  test("its objects and the write's temporary file are removed once its lease lapses, not before", async () => {
    const stem = randomToken(15);
    const paths = [`2026/01/02/${stem}.png`, `thumbnails/2026/01/02/${stem}.webp`];
    const lease = await leaseUploadObjects(ctx.deps, ctx.localStrategyId, paths);
    const storage = ctx.deps.storage.for({ id: ctx.localStrategyId, driver: "local", config: {} });
    await storage.put(paths[0]!, png, "image/png");
    // the thumbnail's write was under way: only its temporary file exists
    const part = `${paths[1]}.${process.pid}.${crypto.randomUUID()}.part`;
    mkdirSync(dirname(join(uploads(), part)), { recursive: true });
    writeFileSync(join(uploads(), part), "half");
    lease.stop(); // the process dies: nobody renews the lease any more

    const rows = await pendingFor(paths);
    expect(rows.map((r) => r.reason)).toEqual(["upload", "upload"]);
    const [{ seconds }] = (await ctx.db.execute(
      sql`select extract(epoch from min(due_at) - now())::float8 as seconds from pending_removals where id in (${sql.join(lease.ids, sql`, `)})`,
    )) as unknown as { seconds: number }[];
    expect(seconds).toBeGreaterThan(LEASE_SECONDS - 5);
    expect(seconds).toBeLessThanOrEqual(LEASE_SECONDS);
    // the lease has not lapsed: a worker leaves the upload alone
    expect(await runDueRemovals(ctx.deps)).toEqual({ removed: 0, failed: 0 });
    expect(onDisk(paths[0]!)).toBe(true);

    await makeDue(paths);
    expect(await runDueRemovals(ctx.deps)).toEqual({ removed: 2, failed: 0 });
    expect([onDisk(paths[0]!), onDisk(part)]).toEqual([false, false]);
    expect(await pendingFor(paths)).toEqual([]);
  });

  test("an upload whose lease lapsed records nothing and charges nothing (IHLSE)", async () => {
    const stem = randomToken(15);
    const path = `2026/01/03/${stem}.png`;
    const lease = await leaseUploadObjects(ctx.deps, ctx.localStrategyId, [path]);
    lease.stop();
    await makeDue([path]);
    expect((await runDueRemovals(ctx.deps)).removed).toBe(1); // a worker took the objects
    const [before] = await ctx.db.select().from(users).where(eq(users.id, alice.id));
    const recording = recordAcceptedUpload(
      ctx.db,
      {
        key: randomToken(12),
        userId: alice.id,
        strategyId: ctx.localStrategyId,
        path,
        name: `${stem}.png`,
        originName: "late.png",
        size: png.byteLength,
        mimetype: "image/png",
        extension: "png",
        width: 32,
        height: 32,
        md5: "0".repeat(32),
        sha1: "0".repeat(40),
        createdAt: new Date(),
      },
      { subject: `user:${alice.id}`, defaultCapacityKb: 1_048_576, limits: { perMinute: null, perHour: null, perDay: null, perWeek: null, perMonth: null } },
      lease.ids,
    );
    const refused = await recording.then(
      () => null,
      (e) => e,
    );
    expect(refused).toBeInstanceOf(RecordRefused);
    expect(refused.reason).toBe("lease");
    expect(await ctx.db.select().from(images).where(eq(images.path, path))).toEqual([]);
    const [after] = await ctx.db.select().from(users).where(eq(users.id, alice.id));
    expect([after!.usedBytes, after!.imageNum]).toEqual([before!.usedBytes, before!.imageNum]);
  });

  test("an accepted upload leaves no pending row", async () => {
    const up = expectStatus(await ctx.upload(alice.token, { bytes: png, filename: "ok.png", contentType: "image/png" }), 200).data;
    expect(onDisk(pathOf(up.url))).toBe(true);
    expect(await pendingFor([pathOf(up.url)])).toEqual([]);
  });
});

describe("the removal worker", () => {
  test("a storage failure is retried with backoff until the storage recovers", async () => {
    const path = `2026/01/04/${randomToken(15)}.png`;
    // the path is a non-empty directory: removing it fails like a broken disk would
    mkdirSync(join(uploads(), path), { recursive: true });
    writeFileSync(join(uploads(), path, "keep"), "x");
    await queueRemovals(ctx.db, ctx.localStrategyId, [path], "delete");

    for (let attempt = 1; attempt <= 3; attempt++) {
      const { result } = await quietly(() => runDueRemovals(ctx.deps));
      expect(result).toEqual({ removed: 0, failed: 1 });
      const [row] = await pendingFor([path]);
      expect(row!.attempts).toBe(attempt);
      expect(row!.lastError).toContain("local delete failed");
      const [{ seconds }] = (await ctx.db.execute(
        sql`select extract(epoch from due_at - now())::float8 as seconds from pending_removals where id = ${row!.id}`,
      )) as unknown as { seconds: number }[];
      expect(seconds).toBeGreaterThan(retryDelaySeconds(attempt - 1) - 1);
      expect(seconds).toBeLessThanOrEqual(retryDelaySeconds(attempt - 1));
      // waiting out its backoff: not retried before
      expect(await runDueRemovals(ctx.deps)).toEqual({ removed: 0, failed: 0 });
      await makeDue([path]);
    }
    expect([retryDelaySeconds(0), retryDelaySeconds(1), retryDelaySeconds(2), retryDelaySeconds(20)]).toEqual([1, 2, 4, 300]);

    rmSync(join(uploads(), path), { recursive: true });
    writeFileSync(join(uploads(), path), png);
    expect(await runDueRemovals(ctx.deps)).toEqual({ removed: 1, failed: 0 });
    expect(onDisk(path)).toBe(false);
    expect(await pendingFor([path])).toEqual([]);
  });

  test("workers running at once never remove the same object twice, and remove every one", async () => {
    const removedPaths: string[] = [];
    const registry = new StorageRegistry({ dataDir: ctx.dataDir, baseUrl: "http://localhost" });
    // a storage that counts its removals and takes a little while, so the workers overlap
    const counting: Deps["storage"] = Object.assign(Object.create(registry), {
      for(strategy: Parameters<StorageRegistry["for"]>[0]) {
        const real = registry.for(strategy);
        return Object.assign(Object.create(real), {
          async delete(path: string) {
            removedPaths.push(path);
            await Bun.sleep(2);
            return real.delete(path);
          },
        });
      },
    });
    const paths = Array.from({ length: 120 }, () => `2026/01/05/${randomToken(15)}.png`);
    const storage = ctx.deps.storage.for({ id: ctx.localStrategyId, driver: "local", config: {} });
    for (const p of paths) await storage.put(p, png, "image/png");
    await queueRemovals(ctx.db, ctx.localStrategyId, paths, "delete");

    const deps = { ...ctx.deps, storage: counting };
    const outcomes = await Promise.all([runDueRemovals(deps), runDueRemovals(deps), runDueRemovals(deps)]);
    expect(outcomes.reduce((n, o) => n + o.removed, 0)).toBe(paths.length);
    expect(outcomes.filter((o) => o.removed > 0).length).toBeGreaterThan(1); // they did share the work
    expect(removedPaths.length).toBe(paths.length);
    expect(new Set(removedPaths).size).toBe(paths.length);
    expect(paths.filter(onDisk)).toEqual([]);
    expect(await pendingFor(paths)).toEqual([]);
  });

  test("finishing a delete waits for a worker holding its rows, so the objects are gone when it returns", async () => {
    const path = `2026/01/06/${randomToken(15)}.png`;
    const storage = ctx.deps.storage.for({ id: ctx.localStrategyId, driver: "local", config: {} });
    await storage.put(path, png, "image/png");
    const ids = await queueRemovals(ctx.db, ctx.localStrategyId, [path], "delete");
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    // another instance's worker: holds the row, removes the object slowly, then commits
    const worker = ctx.db.transaction(async (tx) => {
      await tx.execute(sql`select id from pending_removals where id = ${ids[0]!} for update`);
      locked();
      await held;
      await storage.delete(path);
      await tx.delete(pendingRemovals).where(eq(pendingRemovals.id, ids[0]!));
    });
    await isLocked;
    let finished = false;
    const finishing = finishRemovals(ctx.deps, ids).then((ok) => {
      finished = true;
      return ok;
    });
    await Bun.sleep(200);
    expect(finished).toBe(false);
    release();
    await worker;
    expect(await finishing).toBe(true);
    expect(onDisk(path)).toBe(false);
  });

  test("an object that an image record names is never removed: the row is dropped and the object kept", async () => {
    const up = expectStatus(await ctx.upload(alice.token, { bytes: png, filename: "live.png", contentType: "image/png" }), 200).data;
    await queueRemovals(ctx.db, ctx.localStrategyId, [pathOf(up.url)], "delete");
    const { result, logged } = await quietly(() => runDueRemovals(ctx.deps));
    expect(result).toEqual({ removed: 0, failed: 0 });
    expect(JSON.stringify(logged)).toContain("an image record names this object");
    expect(onDisk(pathOf(up.url))).toBe(true);
    expect(await pendingFor([pathOf(up.url)])).toEqual([]);
    await expectStatus(await ctx.request(new URL(up.url).pathname), 200);
  });

  test("an instance's worker makes a pass as it starts: what a crash left is finished after a restart, not an interval later", async () => {
    const path = `2026/01/07/${randomToken(15)}.png`;
    const storage = ctx.deps.storage.for({ id: ctx.localStrategyId, driver: "local", config: {} });
    await storage.put(path, png, "image/png");
    await queueRemovals(ctx.db, ctx.localStrategyId, [path], "delete");
    const worker = startRemovals(ctx.deps, 3_600_000);
    const deadline = Date.now() + 10_000;
    while (onDisk(path) && Date.now() < deadline) await Bun.sleep(20);
    await worker.stop();
    expect(onDisk(path)).toBe(false);
    expect(await pendingFor([path])).toEqual([]);
  });
});
