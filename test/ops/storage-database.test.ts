import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { S3Client } from "bun";
// @ts-expect-error s3rver ships no types
import S3rver from "s3rver";
import { readDatabaseId } from "../../src/db/repositories/database-identity.ts";
import type { Deps } from "../../src/deps.ts";
import { lastRun } from "../../src/services/last-runs.ts";
import { RECONCILE_GRACE_SECONDS, reconcileStorage } from "../../src/services/reconcile/index.ts";
import { MARKER, StorageRegistry } from "../../src/storage/index.ts";
import { BASE_URL, createTestContext, quietly, type TestContext } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

/**
 * A storage knows which database its objects answer to (storage/marker.ts, docs/decisions/storage-database-marker.md):
 * the reconciler marks it at first use and moves nothing from a storage that is another database's — the same
 * DATA_DIR (or bucket) pointed at a new database keeps every image where it is.
 */
setDefaultTimeout(60_000);

const GRACE_MS = RECONCILE_GRACE_SECONDS * 1000;
const token = () => crypto.randomUUID().replace(/-/g, "").slice(0, 20);
const day = "2026/01/02";
const marker = (id: string) => `image-host-database: ${id}\n`;

/** Every file under `root` but the marker and the quarantine, as relative paths. */
function objectsIn(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, prefix: string) => {
    if (!existsSync(dir)) return;
    for (const entry of require("node:fs").readdirSync(dir, { withFileTypes: true })) {
      const path = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (path !== ".quarantine") walk(join(dir, entry.name), path);
      } else if (path !== MARKER) out.push(path);
    }
  };
  walk(root, "");
  return out.sort();
}

function place(root: string, path: string, at: Date) {
  const full = join(root, path);
  mkdirSync(dirname(full), { recursive: true });
  writeFileSync(full, "leftover");
  utimesSync(full, at, at);
}

const locationOf = (report: { locations: any[] }, id: number): any => report.locations.find((l) => l.strategies.some((s: { id: number }) => s.id === id));

describe("local storage and its database", () => {
  let a: TestContext; // the database that wrote the DATA_DIR
  let b: TestContext; // another database, pointed at a's DATA_DIR
  let root: string;
  let bOnA: Deps;

  beforeAll(async () => {
    a = await createTestContext();
    b = await createTestContext();
    root = join(a.dataDir, "uploads");
    bOnA = { ...b.deps, storage: new StorageRegistry({ dataDir: a.dataDir, baseUrl: BASE_URL }), config: { ...b.deps.config, dataDir: a.dataDir } };
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  test("first use marks the storage with the database's identity (a dry run writes nothing)", async () => {
    const user = await a.createUser();
    for (const n of [1, 2]) expectStatus(await a.upload(user.token, { bytes: await makeImage("png", 20 + n, 20), filename: `${n}.png` }), 200);
    expect(await readDatabaseId(a.db)).toBeNull(); // nothing has needed it yet

    const dry = await a.admin("POST", "/api/admin/storage/reconcile", { dry_run: true });
    expect(locationOf(dry, a.localStrategyId).errors).toEqual([]);
    expect(existsSync(join(root, MARKER))).toBe(false);

    const report = await a.admin("POST", "/api/admin/storage/reconcile", {});
    expect(locationOf(report, a.localStrategyId)).toMatchObject({ objects_scanned: 2, unrecognised_objects: 0, errors: [] });
    const id = await readDatabaseId(a.db);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(readFileSync(join(root, MARKER), "utf8")).toStartWith(marker(id!));
  });

  test("the same DATA_DIR pointed at another database: nothing is quarantined, the run says why (report, error log, overview)", async () => {
    const before = objectsIn(root);
    expect(before.length).toBeGreaterThanOrEqual(2);
    b.advance(10 * GRACE_MS); // every object of a's is long past the grace period
    const { result: report, logged } = await quietly(() => reconcileStorage(bOnA));
    const location = locationOf(report, b.localStrategyId);
    const bId = await readDatabaseId(b.db);
    const aId = await readDatabaseId(a.db);
    expect(location.errors).toHaveLength(1);
    expect(location.errors[0]).toContain(`its ${MARKER} names database ${aId}, and this server's database is ${bId}`);
    expect(location.errors[0]).toContain("Nothing was moved or deleted anywhere");
    expect(location.orphansFound + location.orphansRemoved).toBe(0);
    expect(report.refused).toContain("belongs to a different database");
    expect(objectsIn(root)).toEqual(before);
    expect(existsSync(join(root, ".quarantine"))).toBe(false);
    const error = logged.find((l) => l.level === "error" || l.level === 50);
    expect(String(error?.msg)).toContain("Reconciler refused to move anything");
    expect(lastRun(bOnA, "reconciler")).toMatchObject({ ok: false });
    expect(lastRun(bOnA, "reconciler")!.summary).toContain("refused to move anything");
    expect(readFileSync(join(root, MARKER), "utf8")).toStartWith(marker(aId!)); // a's marker is left as it is
  });

  test("a storage from before markers, pointed at a database that names none of its objects, is refused too, and stays refused once that database uploads there", async () => {
    rmSync(join(root, MARKER)); // as a DATA_DIR written by a version without markers
    const before = objectsIn(root);
    const first = await quietly(() => reconcileStorage(bOnA));
    expect(locationOf(first.result, b.localStrategyId).errors[0]).toContain(
      `has no ${MARKER} and holds ${before.length} objects that no record of this database names, and none that one does`,
    );
    // remembered: their database is unknown until an operator names it
    expect(readFileSync(join(root, MARKER), "utf8")).toStartWith("image-host-database: unknown\n");

    // b's own uploads land in a's DATA_DIR, more of them than a's objects: still refused
    const bApp = (await import("../../src/app.ts")).createApp(bOnA);
    const user = await b.createUser();
    const { multipart } = await import("../support/images.ts");
    for (let i = 0; i < before.length + 1; i++) {
      const m = multipart([{ name: "file", value: await makeImage("png", 33 + i, 33), filename: "b.png" }]);
      const res = await bApp.fetch(
        new Request(`${BASE_URL}/api/v1/upload`, {
          method: "POST",
          headers: { authorization: `Bearer ${user.token}`, "content-type": m.contentType },
          body: m.body,
        }),
      );
      expect(res.status).toBe(200);
    }
    b.advance(10 * GRACE_MS);
    const second = await quietly(() => reconcileStorage(bOnA));
    const location = locationOf(second.result, b.localStrategyId);
    expect(location.errors[0]).toContain("belong to an unknown database");
    expect(location.orphansRemoved).toBe(0);
    for (const path of before) expect(existsSync(join(root, path))).toBe(true);
    expect(second.logged.some((l) => String(l.msg).includes("Reconciler refused"))).toBe(true);
  });

  test("written by hand, the marker settles it: the storage is then the named database's", async () => {
    const aId = (await readDatabaseId(a.db))!;
    writeFileSync(join(root, MARKER), marker(aId));
    a.advance(2 * GRACE_MS);
    const report = await a.admin("POST", "/api/admin/storage/reconcile", { dry_run: true });
    // b's upload is an orphan to a (no record of a names it): found, and only reported in a dry run
    expect(locationOf(report, a.localStrategyId)).toMatchObject({ orphans_found: 3, errors: [] });
  });
});

describe("a storage from before markers", () => {
  let ctx: TestContext;
  let root: string;
  beforeAll(async () => {
    ctx = await createTestContext();
    root = join(ctx.dataDir, "uploads");
  });
  afterAll(() => ctx.close());

  test("objects no record names, only younger than its images, are its own leftovers: marked, and they go to the quarantine", async () => {
    const user = await ctx.createUser();
    const image = expectStatus(await ctx.upload(user.token, { bytes: await makeImage("png", 24, 24), filename: "a.png" }), 200).data;
    // only a young unknown object: not decided yet (an upload in flight looks like this), nothing marked
    const young = `${day}/${token()}.png`;
    place(root, young, new Date());
    const waiting = await ctx.admin("POST", "/api/admin/storage/reconcile", {});
    expect(locationOf(waiting, ctx.localStrategyId)).toMatchObject({ orphans_found: 0, errors: [] });
    expect(existsSync(join(root, MARKER))).toBe(false);

    ctx.advance(2 * GRACE_MS);
    const leftover = `${day}/${token()}.png`;
    place(root, leftover, new Date(Date.now() + 1000)); // after the image was stored
    const report = await ctx.admin("POST", "/api/admin/storage/reconcile", {});
    expect(locationOf(report, ctx.localStrategyId)).toMatchObject({ orphans_found: 2, orphans_removed: 2, errors: [] });
    expect(readFileSync(join(root, MARKER), "utf8")).toStartWith(marker((await readDatabaseId(ctx.db))!));
    expect(existsSync(join(root, image.pathname))).toBe(true);
    expect(existsSync(join(root, leftover))).toBe(false);
  });

  test("unknown objects older than every image of the database, and more of them than its own, mean another database's storage: refused", async () => {
    rmSync(join(root, MARKER));
    const older = [`${day}/${token()}.png`, `${day}/${token()}.png`];
    for (const path of older) place(root, path, new Date(Date.now() - 30 * 86_400_000));
    const { result } = await quietly(() => reconcileStorage(ctx.deps));
    expect(locationOf(result, ctx.localStrategyId).errors[0]).toContain("more than the 1 it names, some older (from ");
    for (const path of older) expect(existsSync(join(root, path))).toBe(true);
    expect(readFileSync(join(root, MARKER), "utf8")).toStartWith("image-host-database: unknown\n");
  });

  test("one old leftover beside as many images of its own is the database's own (a storage from before markers): marked, quarantined", async () => {
    const database = (await readDatabaseId(ctx.db))!;
    writeFileSync(join(root, MARKER), marker(database)); // settled by hand, as the refusal says
    const report = await ctx.admin("POST", "/api/admin/storage/reconcile", {});
    expect(locationOf(report, ctx.localStrategyId)).toMatchObject({ orphans_found: 2, orphans_removed: 2, errors: [] });
    rmSync(join(root, MARKER));
    const leftover = `${day}/${token()}.png`;
    place(root, leftover, new Date(Date.now() - 30 * 86_400_000));
    const again = await ctx.admin("POST", "/api/admin/storage/reconcile", {});
    expect(locationOf(again, ctx.localStrategyId)).toMatchObject({ orphans_found: 1, orphans_removed: 1, errors: [] });
    expect(readFileSync(join(root, MARKER), "utf8")).toStartWith(marker(database));
  });
});

describe("an S3 bucket and its database", () => {
  let ctx: TestContext;
  let server: { run(): Promise<{ port: number }>; close(): Promise<void> };
  let dir: string;
  let bucket: S3Client;
  let endpoint: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "imghost-s3-marker-"));
    server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: dir, configureBuckets: [{ name: "images" }] });
    const { port } = await server.run();
    endpoint = `http://127.0.0.1:${port}`;
    bucket = new S3Client({ bucket: "images", endpoint, region: "us-east-1", accessKeyId: "S3RVER", secretAccessKey: "S3RVER" });
    ctx = await createTestContext();
  });
  afterAll(async () => {
    await ctx.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("the marker is written under the strategy's prefix; a bucket prefix marked by another database keeps its objects", async () => {
    const config = { bucket: "images", endpoint, region: "us-east-1", access_key_id: "S3RVER", secret_access_key: "S3RVER", url: "https://cdn.example.com" };
    const mine = await ctx.admin("POST", "/api/admin/strategies", { name: "Mine", driver: "s3", config: { ...config, prefix: "mine" } });
    const first = await ctx.admin("POST", "/api/admin/storage/reconcile", {});
    expect(locationOf(first, mine.id).errors).toEqual([]);
    expect(await bucket.file(`mine/${MARKER}`).text()).toStartWith(marker((await readDatabaseId(ctx.db))!));

    const theirs = await ctx.admin("POST", "/api/admin/strategies", { name: "Theirs", driver: "s3", config: { ...config, prefix: "theirs" } });
    const foreign = crypto.randomUUID();
    await bucket.write(`theirs/${MARKER}`, marker(foreign));
    const object = `theirs/${day}/${token()}.png`;
    await bucket.write(object, "another site's image");
    const orphan = `mine/${day}/${token()}.png`;
    await bucket.write(orphan, "an orphan of this site's");
    ctx.advance(2 * GRACE_MS);

    const { result, logged } = await quietly(() => reconcileStorage(ctx.deps));
    expect(locationOf(result, theirs.id).errors[0]).toContain(`names database ${foreign}`);
    expect(await bucket.file(object).exists()).toBe(true);
    // nothing moves anywhere while a storage is another database's: this site's own orphan is only reported
    expect(locationOf(result, mine.id)).toMatchObject({ orphansFound: 1, orphansRemoved: 0, errors: [] });
    expect(await bucket.file(orphan).exists()).toBe(true);
    expect(logged.some((l) => String(l.msg).includes(`Reconciler refused to move anything: #${theirs.id}`))).toBe(true);
  });
});
