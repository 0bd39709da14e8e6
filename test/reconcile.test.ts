import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { S3Client } from "bun";
import { eq, sql } from "drizzle-orm";
// @ts-expect-error s3rver ships no types
import S3rver from "s3rver";
import { strategies } from "../src/db/schema.ts";
import { RECONCILE_GRACE_SECONDS, RECONCILE_LOCK, reconcileStorage } from "../src/services/reconcile.ts";
import { LocalStorage } from "../src/storage/local.ts";
import { S3Storage } from "../src/storage/s3.ts";
import { createTestContext, type TestContext, type TestUser } from "./support/harness.ts";
import { makeImage, makeNoisyJpeg } from "./support/images.ts";
import { expectStatus } from "./support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

/**
 * s3rver's paged listing under Bun: it encrypts continuation tokens with "des", a name Bun's BoringSSL knows only as
 * "des-cbc", and it pages through directories in readdirSync's order, which it takes to be sorted (ext4's is not).
 * Returns the function that undoes the patch.
 */
function patchS3rverPaging(): () => void {
  type Patch = (original: any) => any;
  const desCbc: Patch = (original) => (algorithm: string, ...rest: unknown[]) => original(algorithm === "des" ? "des-cbc" : algorithm, ...rest);
  const sorted: Patch = (original) => (...args: unknown[]) => (args.length === 1 ? original(...args).sort() : original(...args));
  const nodeCrypto = require("node:crypto");
  const targets: [Record<string, any>, string, Patch][] = [
    [nodeCrypto, "createCipheriv", desCbc],
    [nodeCrypto, "createDecipheriv", desCbc],
    [createRequire(require.resolve("s3rver"))("fs-extra"), "readdirSync", sorted],
  ];
  const restores = targets.map(([module, name, patch]) => {
    const original = module[name];
    module[name] = patch(original);
    return () => (module[name] = original);
  });
  return () => restores.forEach((restore) => restore());
}

const GRACE_MS = RECONCILE_GRACE_SECONDS * 1000;
const token = () => crypto.randomUUID().replace(/-/g, "").slice(0, 20);
const day = "2026/01/02";

/** The report of one location (the one holding `strategyId`). */
function locationOf(report: any, strategyId: number) {
  const found = report.locations.find((l: any) => l.strategies.some((s: any) => s.id === strategyId));
  if (!found) throw new Error(`no location for strategy ${strategyId}: ${JSON.stringify(report)}`);
  return found;
}

describe("local strategy", () => {
  let ctx: TestContext;
  let user: TestUser;
  let root: string;
  const reconcile = (body?: { dry_run?: boolean }, query = "") => ctx.admin("POST", `/api/admin/storage/reconcile${query}`, body);
  /** A file in the root, written `ageMs` before the service's clock. */
  function place(path: string, ageMs: number) {
    const full = join(root, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, "leftover");
    const at = new Date(ctx.now().getTime() - ageMs);
    utimesSync(full, at, at);
    return full;
  }

  beforeAll(async () => {
    ctx = await createTestContext();
    root = join(ctx.dataDir, "uploads");
    user = await ctx.createUser();
  });
  afterAll(() => ctx.close());

  test("orphans past the grace and abandoned .part files are removed; young ones, foreign files and images stay; missing objects are reported", async () => {
    const small = expectStatus(await ctx.upload(user.token, { bytes: await makeImage("png", 20, 20), filename: "a.png" }), 200).data;
    const photo = expectStatus(await ctx.upload(user.token, { bytes: await makeNoisyJpeg(900, 600), filename: "b.jpg" }), 200).data;
    const photoThumbnail = new URL(photo.thumbnail_url).pathname.slice("/i/".length);
    const lost = expectStatus(await ctx.upload(user.token, { bytes: await makeImage("png", 30, 30), filename: "c.png" }), 200).data;
    rmSync(join(root, lost.pathname));
    ctx.advance(2 * GRACE_MS); // every file so far is past the grace

    const orphan = `${day}/${token()}.png`;
    const orphanThumbnail = `thumbnails/${day}/${token()}.webp`;
    const young = `${day}/${token()}.png`;
    const part = `${day}/${token()}.png.4242.${crypto.randomUUID()}.part`;
    const livePart = `${day}/${token()}.png.4242.${crypto.randomUUID()}.part`;
    const foreign = "README.txt";
    place(orphan, 2 * GRACE_MS);
    place(orphanThumbnail, GRACE_MS + 60_000);
    place(young, GRACE_MS - 60_000);
    place(part, 2 * GRACE_MS);
    place(livePart, 1000);
    place(foreign, 2 * GRACE_MS);

    const dry = locationOf(await reconcile({ dry_run: true }), ctx.localStrategyId);
    expect(dry).toMatchObject({ orphans_found: 2, orphans_removed: 0, parts_found: 1, parts_removed: 0, records_missing_object: 1 });
    for (const path of [orphan, orphanThumbnail, part]) expect(existsSync(join(root, path))).toBe(true);

    const report = await reconcile();
    expect(report).toMatchObject({ dry_run: false, skipped: false, grace_seconds: RECONCILE_GRACE_SECONDS });
    const local = locationOf(report, ctx.localStrategyId);
    expect(local).toMatchObject({
      driver: "local",
      objects_scanned: 7, // small, photo + thumbnail, orphan, orphan thumbnail, young, foreign
      recent_objects: 1,
      unrecognised_objects: 1,
      orphans_found: 2,
      orphans_removed: 2,
      parts_found: 1,
      parts_removed: 1,
      records_missing_object: 1,
      missing_objects: [{ key: lost.key, path: lost.pathname }],
      errors: [],
    });
    expect(local.orphans.sort()).toEqual([orphan, orphanThumbnail].sort());
    for (const path of [orphan, orphanThumbnail, part]) expect(existsSync(join(root, path))).toBe(false);
    for (const path of [small.pathname, photo.pathname, photoThumbnail, young, livePart, foreign]) expect(existsSync(join(root, path))).toBe(true);

    // the missing object's record is reported again, never deleted
    const again = locationOf(await reconcile(), ctx.localStrategyId);
    expect(again).toMatchObject({ orphans_found: 0, parts_found: 0, records_missing_object: 1 });
    expectStatus(await ctx.json(`/api/v1/images/${lost.key}`, { method: "DELETE", headers: ctx.bearer(user.token) }), 200);
  });

  test("dry_run in the query; a wrong dry_run is a 422; no token is a 401", async () => {
    place(`${day}/${token()}.png`, 2 * GRACE_MS);
    const report = await reconcile(undefined, "?dry_run=true");
    expect(report.dry_run).toBe(true);
    expect(locationOf(report, ctx.localStrategyId)).toMatchObject({ orphans_found: 1, orphans_removed: 0 });
    expectStatus(await ctx.json("/api/admin/storage/reconcile?dry_run=yes", { method: "POST", headers: ctx.bearer(ctx.deps.config.adminToken) }), 422);
    const wrongBody = await ctx.json("/api/admin/storage/reconcile", {
      method: "POST",
      headers: { ...ctx.bearer(ctx.deps.config.adminToken), "content-type": "application/json" },
      body: JSON.stringify({ dry_run: "yes" }),
    });
    expectStatus(wrongBody, 422);
    expectStatus(await ctx.json("/api/admin/storage/reconcile", { method: "POST" }), 401);
  });

  test("strategies sharing a root, or nested in it, are reconciled together: neither takes the other's objects for orphans", async () => {
    const shared = await ctx.admin("POST", "/api/admin/strategies", { name: "Same root", driver: "local", config: {} });
    const nested = await ctx.admin("POST", "/api/admin/strategies", { name: "Nested", driver: "local", config: { root: join(root, "thumbnails") } });
    const group = await ctx.admin("POST", "/api/admin/groups", { name: "nested", strategy_ids: [nested.id] });
    const nestedUser = await ctx.createUser({ group_id: group.id });
    const onNested = expectStatus(await ctx.upload(nestedUser.token, { bytes: await makeImage("webp", 20, 20), filename: "n.webp" }), 200).data;
    ctx.advance(2 * GRACE_MS);

    const report = await reconcile();
    const outer = locationOf(report, ctx.localStrategyId);
    expect(outer.strategies.map((s: any) => s.id).sort()).toEqual([ctx.localStrategyId, shared.id].sort());
    expect(outer.orphans).not.toContain(`thumbnails/${onNested.pathname}`); // what the earlier tests left, nothing else
    expect(outer.orphans.every((p: string) => p.startsWith(day))).toBe(true);
    expect(locationOf(report, nested.id).orphans_found).toBe(0);
    expect(existsSync(join(root, "thumbnails", onNested.pathname))).toBe(true);
  });

  test("a strategy whose configuration cannot be read suspends every removal: its objects could be anywhere", async () => {
    const orphan = `${day}/${token()}.png`;
    place(orphan, 2 * GRACE_MS);
    const [unreadable] = await ctx.db.insert(strategies).values({ name: "Unreadable", driver: "s3", config: { bucket: 42 } }).returning();
    const report = await reconcile();
    const entry = report.locations.find((l: any) => l.strategies[0].id === unreadable!.id);
    expect(entry.errors[0]).toStartWith("unreadable configuration, so nothing was removed anywhere");
    expect(locationOf(report, ctx.localStrategyId).orphans).toContain(orphan);
    expect(existsSync(join(root, orphan))).toBe(true);
    await ctx.db.delete(strategies).where(eq(strategies.id, unreadable!.id));
  });

  test("one run at a time: a second call while one runs is skipped", async () => {
    const [a, b] = await Promise.all([reconcileStorage(ctx.deps, { dryRun: true }), reconcileStorage(ctx.deps, { dryRun: true })]);
    expect([a.skipped, b.skipped].sort()).toEqual([false, true]);
    if (ctx.driver !== "postgres") return;
    // another instance holds the lock (here: a transaction of this test on another connection)
    const report = await ctx.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${RECONCILE_LOCK})`);
      return reconcileStorage(ctx.deps);
    });
    expect(report).toMatchObject({ skipped: true, locations: [] });
  });
});

describe("local storage", () => {
  const root = mkdtempSync(join(tmpdir(), "imghost-local-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  test("put leaves no temporary file; list walks the root, flags .part files and honours the prefix", async () => {
    const storage = new LocalStorage({ root, publicUrl: "http://img.test/i" });
    await storage.put("2026/01/02/a.png", new Uint8Array([1, 2, 3]));
    await storage.put("thumbnails/2026/01/02/a.webp", new Uint8Array([4]));
    writeFileSync(join(root, "2026/01/02/a.png.1.x.part"), "");
    const all = await Array.fromAsync(storage.list());
    expect(all.map((o) => [o.path, o.size, o.temporary]).sort()).toEqual([
      ["2026/01/02/a.png", 3, false],
      ["2026/01/02/a.png.1.x.part", 0, true],
      ["thumbnails/2026/01/02/a.webp", 1, false],
    ]);
    expect(all.every((o) => o.modifiedAt instanceof Date)).toBe(true);
    expect((await Array.fromAsync(storage.list("thumbnails/"))).map((o) => o.path)).toEqual(["thumbnails/2026/01/02/a.webp"]);
    expect((await Array.fromAsync(storage.list("2026/01/02/a.png."))).map((o) => o.path)).toEqual(["2026/01/02/a.png.1.x.part"]);
    expect(await Array.fromAsync(storage.list("1999/"))).toEqual([]);
    expect(await storage.exists("2026/01/02/a.png")).toBe(true);
    expect(await storage.exists("2026/01/02/b.png")).toBe(false);
  });
});

describe("s3 strategy", () => {
  let ctx: TestContext;
  let server: { run(): Promise<{ port: number }>; close(): Promise<void> };
  let dir: string;
  let bucket: S3Client;
  let config: { bucket: string; endpoint: string; region: string; access_key_id: string; secret_access_key: string };

  let unpatch: () => void;

  beforeAll(async () => {
    unpatch = patchS3rverPaging();
    dir = mkdtempSync(join(tmpdir(), "imghost-s3-"));
    server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: dir, configureBuckets: [{ name: "images" }] });
    const { port } = await server.run();
    config = { bucket: "images", endpoint: `http://127.0.0.1:${port}`, region: "us-east-1", access_key_id: "S3RVER", secret_access_key: "S3RVER" };
    bucket = new S3Client({ bucket: "images", endpoint: config.endpoint, region: "us-east-1", accessKeyId: "S3RVER", secretAccessKey: "S3RVER" });
    ctx = await createTestContext();
  });
  afterAll(async () => {
    await ctx.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
    unpatch();
  });

  test("list pages through the bucket under the prefix only, with paths relative to it", async () => {
    const storage = new S3Storage({ ...config, accessKeyId: "S3RVER", secretAccessKey: "S3RVER", publicUrl: "https://cdn.example.com", prefix: "paging/", listPageSize: 2 });
    for (const name of ["a", "b", "c", "d", "e"]) await storage.put(`${day}/${name}.png`, new Uint8Array([1]), "image/png");
    await bucket.write("paging-other/x.png", "x");
    const listed = await Array.fromAsync(storage.list());
    expect(listed.map((o) => o.path).sort()).toEqual(["a", "b", "c", "d", "e"].map((n) => `${day}/${n}.png`));
    expect(listed.every((o) => o.size === 1 && !o.temporary && Math.abs(o.modifiedAt.getTime() - Date.now()) < 60_000)).toBe(true);
    expect((await Array.fromAsync(storage.list(`${day}/c`))).map((o) => o.path)).toEqual([`${day}/c.png`]);
  });

  test("orphans under the strategy's prefix are removed once past the grace; keys outside it and the images stay; a missing thumbnail is reported", async () => {
    const strategy = await ctx.admin("POST", "/api/admin/strategies", {
      name: "S3",
      driver: "s3",
      config: { ...config, prefix: "site-a", url: "https://cdn.example.com" },
    });
    const group = await ctx.admin("POST", "/api/admin/groups", { name: "on s3", strategy_ids: [strategy.id] });
    const user = await ctx.createUser({ group_id: group.id });
    const kept = expectStatus(await ctx.upload(user.token, { bytes: await makeNoisyJpeg(900, 600), filename: "p.jpg" }), 200).data;
    const lost = expectStatus(await ctx.upload(user.token, { bytes: await makeNoisyJpeg(900, 600), filename: "q.jpg" }), 200).data;
    const lostThumbnail = new URL(lost.thumbnail_url).pathname.slice("/site-a/".length);
    await bucket.delete(`site-a/${lostThumbnail}`);
    const orphan = `${day}/${token()}.png`;
    await bucket.write(`site-a/${orphan}`, "orphan");
    const outside = [`${day}/${token()}.png`, `site-b/${day}/${token()}.png`];
    for (const key of outside) await bucket.write(key, "not ours");

    // s3rver stamps LastModified with the real time: younger than the grace until the clock moves on
    const fresh = locationOf(await ctx.admin("POST", "/api/admin/storage/reconcile", {}), strategy.id);
    expect(fresh).toMatchObject({ driver: "s3", objects_scanned: 4, recent_objects: 4, orphans_found: 0, errors: [] });

    ctx.advance(2 * GRACE_MS);
    const later = locationOf(await ctx.admin("POST", "/api/admin/storage/reconcile", {}), strategy.id);
    expect(later).toMatchObject({
      objects_scanned: 4, // kept + its thumbnail, lost (its thumbnail gone), orphan
      orphans_found: 1,
      orphans_removed: 1,
      orphans: [orphan],
      records_missing_object: 1,
      missing_objects: [{ key: lost.key, path: lostThumbnail }],
      errors: [],
    });
    expect(await bucket.file(`site-a/${orphan}`).exists()).toBe(false);
    for (const key of [...outside, `site-a/${kept.pathname}`, `site-a/${lost.pathname}`]) expect(await bucket.file(key).exists()).toBe(true);
  });

  test("an unreachable bucket is an error of its location, not of the run", async () => {
    await ctx.admin("POST", "/api/admin/strategies", {
      name: "Unreachable",
      driver: "s3",
      config: { ...config, endpoint: "http://127.0.0.1:9", url: "https://cdn.example.com" },
    });
    const report = await ctx.admin("POST", "/api/admin/storage/reconcile", { dry_run: true });
    const unreachable = report.locations.find((l: any) => l.strategies[0].name === "Unreachable");
    expect(unreachable.errors).toHaveLength(1);
    expect(unreachable.errors[0]).toContain("s3 listing failed");
    expect(locationOf(report, ctx.localStrategyId).errors).toEqual([]);
  });
});
