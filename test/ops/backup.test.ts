import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { createApp } from "../../src/app.ts";
import { readDatabaseId } from "../../src/db/repositories/database-identity.ts";
import { type Database, openEmbedded } from "../../src/db/client.ts";
import { runningServerConnection } from "../../src/db/embedded/index.ts";
import { seedDatabase } from "../../src/db/seed.ts";
import { sessions, uploadLeases } from "../../src/db/schema.ts";
import type { Deps } from "../../src/deps.ts";
import { defaultBodyGateLimits } from "../../src/http/body-gate.ts";
import { createBackup, restoreBackup } from "../../src/services/backup/index.ts";
import { deleteImage } from "../../src/services/delete.ts";
import { StorageRegistry } from "../../src/storage/index.ts";
import { installQueue } from "../../src/webhooks/queue.ts";
import { testLog } from "../support/harness.ts";
import { makeAnimatedGif, makeImage, makeNoisyJpeg, multipart } from "../support/images.ts";
import sharp from "sharp";

/**
 * `backup create` / `backup restore` (src/services/backup/): a DATA_DIR with a real embedded database, filled
 * through the app, is backed up while its database runs, restored into a new DATA_DIR and compared table by table,
 * row by row, and object by object.
 */
setDefaultTimeout(60_000); // embedded clusters are initialised here, seconds each on a busy machine

const root = join(import.meta.dir, "..", "..");
const onPostgres = !!process.env.TEST_DATABASE_URL;
const BASE_URL = "http://img.test";
const ADMIN_TOKEN = "backup-test-admin-token-0123456789abcdef";

const work = mkdtempSync(join(tmpdir(), "imghost-backup-"));
const sourceDir = join(work, "data");
const customRoot = join(work, "custom-root"); // a local strategy with a root of its own, outside DATA_DIR

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI as a user runs it: another process, its environment naming DATA_DIR. */
async function cli(args: string[], env: Record<string, string | undefined>): Promise<Run> {
  const proc = Bun.spawn(["bun", "run", "src/cli/index.ts", ...args], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: undefined, ADMIN_TOKEN: undefined, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

/** Every table of the public schema as the rows' text (all columns), sorted; the sequences; the schema level. */
async function snapshot(db: Database): Promise<Record<string, string[]>> {
  const rows = async <T>(query: string) => (await db.db.execute(query as never)) as unknown as T[];
  const out: Record<string, string[]> = {};
  const tables = await rows<{ name: string }>("select tablename as name from pg_tables where schemaname = 'public' order by 1");
  for (const { name } of tables) out[name] = (await rows<{ r: string }>(`select x::text as r from public."${name}" x order by 1`)).map((r) => r.r);
  const seqs = await rows<{ name: string }>("select sequencename as name from pg_sequences where schemaname = 'public' order by 1");
  out["(sequences)"] = [];
  for (const { name } of seqs) {
    const [s] = await rows<{ v: string }>(`select last_value::text || ' ' || is_called::text as v from public."${name}"`);
    out["(sequences)"].push(`${name} ${s!.v}`);
  }
  out["(migrations)"] = (await rows<{ r: string }>("select hash || ' ' || created_at as r from drizzle.__drizzle_migrations order by created_at")).map(
    (r) => r.r,
  );
  return out;
}

/** Every file under `dir` (relative path → bytes). */
function files(dir: string): Map<string, Buffer> {
  const found = new Map<string, Buffer>();
  if (!existsSync(dir)) return found;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    found.set(relative(dir, full), readFileSync(full));
  }
  return found;
}

function expectSameFiles(actual: Map<string, Buffer>, expected: Map<string, Buffer>) {
  expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
  for (const [path, bytes] of expected) expect(Buffer.compare(actual.get(path)!, bytes)).toBe(0);
}

/** Nothing named `*.restoring-*` is left beside `dir` (nor inside it). */
function noStaging(dir: string) {
  const parent = join(dir, "..");
  expect(readdirSync(parent).filter((n) => n.includes(".restoring-"))).toEqual([]);
}

/**
 * Runs `fn` with the custom root moved aside (restore writes only into empty or absent directories), then puts the
 * original back; `fn` gets the original's new place.
 */
async function withCustomRootAside<T>(fn: (original: string) => Promise<T>): Promise<T> {
  const original = `${customRoot}.original`;
  renameSync(customRoot, original);
  try {
    return await fn(original);
  } finally {
    rmSync(customRoot, { recursive: true, force: true });
    renameSync(original, customRoot);
  }
}

let database: Database;
let deps: Deps;
let app: ReturnType<typeof createApp>;
const keys: string[] = [];
let owner = 0;
let ownerToken = "";
let customId = 0;

async function call<T = any>(method: string, path: string, token: string, body?: unknown): Promise<T> {
  const res = await app.fetch(
    new Request(`${BASE_URL}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    }),
  );
  const json = (await res.json()) as { data: T };
  if (res.status !== 200) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

async function upload(token: string, bytes: Uint8Array, filename: string, fields: Record<string, string> = {}) {
  const m = multipart([...Object.entries(fields).map(([name, value]) => ({ name, value })), { name: "file", value: bytes, filename }]);
  const res = await app.fetch(
    new Request(`${BASE_URL}/api/v1/upload`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": m.contentType }, body: m.body }),
  );
  const json = (await res.json()) as { data: { key: string } };
  if (res.status !== 200) throw new Error(`upload ${filename} → ${res.status} ${JSON.stringify(json)}`);
  keys.push(json.data.key);
  return json.data;
}

beforeAll(async () => {
  if (onPostgres) return;
  database = await openEmbedded(sourceDir);
  await database.migrate(installQueue);
  await seedDatabase(database.db);
  writeFileSync(join(sourceDir, "admin-token"), `${ADMIN_TOKEN}\n`, { mode: 0o600 });
  deps = {
    db: database.db,
    storage: new StorageRegistry({ dataDir: sourceDir, baseUrl: BASE_URL }),
    config: {
      baseUrl: BASE_URL,
      dataDir: sourceDir,
      adminToken: ADMIN_TOKEN,
      trustedProxies: 1,
      authFailures: { burst: 1e6, perMinute: 1e6 },
      uploadBodies: { ...defaultBodyGateLimits, perAddress: 1000, total: 1000 },
    },
    clock: () => new Date(),
    log: testLog.logger, // scanned for secrets with the rest of the run
  };
  app = createApp(deps);

  // users, tokens, albums, strategies (a local one with its own root, an S3 one without objects), images
  const custom = await call("POST", "/api/admin/strategies", ADMIN_TOKEN, { name: "Custom", driver: "local", config: { root: customRoot } });
  customId = custom.id;
  await call("POST", "/api/admin/strategies", ADMIN_TOKEN, {
    name: "Bucket",
    driver: "s3",
    config: { bucket: "b", url: "https://cdn.example.com", endpoint: "http://127.0.0.1:9", access_key_id: "k", secret_access_key: "s" },
  });
  await call("PATCH", "/api/admin/groups/1", ADMIN_TOKEN, { strategy_ids: [1, custom.id] });
  const people: { id: number; token: string; album: number }[] = [];
  for (const name of ["alice", "bob"]) {
    const user = await call("POST", "/api/admin/users", ADMIN_TOKEN, { username: name, email: `${name}@example.com`, password: "correct horse battery" });
    const { token } = await call("POST", `/api/admin/users/${user.id}/tokens`, ADMIN_TOKEN);
    await call("POST", `/api/admin/users/${user.id}/tokens`, ADMIN_TOKEN); // a second token
    const album = await call("POST", `/api/admin/users/${user.id}/albums`, ADMIN_TOKEN, { name: `${name}'s "album" \\ backslash, 北京` });
    people.push({ id: user.id, token, album: album.id });
  }
  owner = people[0]!.id;
  ownerToken = people[0]!.token;
  const [alice, bob] = people as [(typeof people)[number], (typeof people)[number]];
  await upload(alice.token, await makeNoisyJpeg(900, 600), "photo.jpg"); // with a thumbnail
  // in an album: its image_num (kept by triggers) must come back as it was, not counted twice by the restore's COPY
  await upload(alice.token, await makeImage("png", 64, 48), "small.png", { album_id: String(alice.album) }); // its own thumbnail
  await upload(alice.token, await makeImage("webp", 1200, 500, "#aa3300"), "wide.webp", { permission: "0", album_id: String(alice.album) });
  await upload(alice.token, await makeAnimatedGif(), "anim.gif", { strategy_id: String(custom.id) });
  await upload(bob.token, await makeImage("png", 800, 800, "#00aa33"), "ünïcødé name.png", { expired_at: "2099-01-01T00:00:00Z" });
  await upload(bob.token, await makeNoisyJpeg(500, 700), "portrait.jpg", { strategy_id: String(custom.id) });
  const gone = await upload(bob.token, await makeImage("png", 30, 30), "deleted.png");
  await call("DELETE", `/api/v1/images/${gone.key}`, bob.token); // a gap in the ids
  keys.splice(keys.indexOf(gone.key), 1);
  await call("POST", "/api/v1/images/tokens", alice.token, { num: 3, seconds: 3600 }); // temporary tokens
  // a signed-in session and an upload slot, as the user center and an upload in flight leave them
  await database.db.insert(sessions).values({ secretHash: "f".repeat(64), userId: alice.id, ip: "192.0.2.1", expiresAt: new Date(Date.now() + 86_400_000) });
  await database.db.insert(uploadLeases).values({ subject: `user:${bob.id}`, expiresAt: new Date(Date.now() + 15_000) });
  await Bun.sleep(300); // the token's last-use time is written off the request's path
});

afterAll(async () => {
  await database?.close();
  rmSync(work, { recursive: true, force: true });
});

describe.skipIf(onPostgres)("backup and restore of the embedded DATA_DIR", () => {
  test("a backup taken while the database runs restores every record and every object", async () => {
    expect(runningServerConnection(join(sourceDir, "postgres"))).not.toBeNull();
    const archive = join(work, "live.tar.gz");
    const created = await cli(["backup", "create", archive, "--json"], { DATA_DIR: sourceDir });
    expect(created.stderr).toBe("");
    expect(created.code).toBe(0);
    const summary = JSON.parse(created.stdout);
    expect(summary).toMatchObject({ gzip: true, server_running: true, dropped_images: 0, s3_images: 0 });
    expect(summary.objects).toBeGreaterThanOrEqual(keys.length); // originals, and the thumbnails that are objects of their own
    console.log(
      `live backup: ${summary.records} records, ${summary.objects} objects (${summary.object_bytes} bytes), archive ${summary.archive_bytes} bytes, ${summary.duration_ms} ms`,
    );
    expect(existsSync(`${archive}.tmp`)).toBe(false);
    expect(readdirSync(work).filter((n) => n.includes(".tmp"))).toEqual([]);

    const restoredDir = join(work, "restored");
    await withCustomRootAside(async (originalCustom) => {
      const restored = await cli(["backup", "restore", archive, "--allow-root", customRoot], { DATA_DIR: restoredDir });
      expect(restored.stderr).toBe("");
      expect(restored.code).toBe(0);
      expect(restored.stdout).toContain(`Restored ${summary.records} records in ${summary.tables} tables and ${summary.objects} objects`);
      noStaging(restoredDir);

      expectSameFiles(files(join(restoredDir, "uploads")), files(join(sourceDir, "uploads")));
      expectSameFiles(files(customRoot), files(originalCustom));
      expect(readFileSync(join(restoredDir, "admin-token"), "utf8")).toBe(`${ADMIN_TOKEN}\n`);

      const copy = await openEmbedded(restoredDir);
      try {
        const [a, b] = [await snapshot(database), await snapshot(copy)];
        expect(Object.keys(b)).toEqual(Object.keys(a));
        for (const table of Object.keys(a)) expect({ table, rows: b[table] }).toEqual({ table, rows: a[table]! });
        expect(a.images!.length).toBe(keys.length);
        expect(a.users!.length).toBe(2);
        expect(a.sessions!.length).toBe(1);
        expect(b.albums![0]).toMatch(/^\(1,1,"alice.*,2\)$/); // alice's album holds 2 images (image_num), as before the backup
      } finally {
        await copy.close();
      }
    });
  });

  test("restore refuses a DATA_DIR that is not empty, and DATABASE_URL", async () => {
    const archive = join(work, "refusals.tar");
    const made = await cli(["backup", "create", archive], { DATA_DIR: sourceDir });
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/^Backed up \d+ records in \d+ tables and \d+ objects .* to .*refusals\.tar .*server running/);

    const busy = join(work, "busy");
    mkdirSync(busy);
    writeFileSync(join(busy, "notes.txt"), "mine");
    const refused = await cli(["backup", "restore", archive], { DATA_DIR: busy });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("is not empty (notes.txt)");
    expect(refused.stderr).not.toContain("    at "); // no stack trace
    expect(readdirSync(busy)).toEqual(["notes.txt"]);
    noStaging(busy);
    // a root of its own outside DATA_DIR, not confirmed: refused before anything is written
    const unconfirmed = await cli(["backup", "restore", archive], { DATA_DIR: join(work, "fresh") });
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toContain(`the root of local strategies 2, ${JSON.stringify(customRoot)}: outside DATA_DIR`);
    expect(unconfirmed.stderr).toContain("--allow-root");
    expect(existsSync(join(work, "fresh"))).toBe(false);
    // so is a confirmed root of a local strategy of its own that is not empty
    const fresh = await cli(["backup", "restore", archive, "--allow-root", customRoot], { DATA_DIR: join(work, "fresh") });
    expect(fresh.code).toBe(1);
    expect(fresh.stderr).toContain(`the root of local strategies ${customRoot} is not empty`);
    expect(existsSync(join(work, "fresh"))).toBe(false);
    noStaging(join(work, "fresh"));

    const viaUrl = await cli(["backup", "restore", archive], { DATA_DIR: join(work, "never"), DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postgres" });
    expect(viaUrl.code).toBe(1);
    expect(viaUrl.stderr).toContain("DATABASE_URL is set");
    expect(viaUrl.stderr).toContain("docs/backups.md");
    expect(existsSync(join(work, "never"))).toBe(false);

    const exists = await cli(["backup", "create", archive], { DATA_DIR: sourceDir });
    expect(exists.code).toBe(1);
    expect(exists.stderr).toContain("already exists");

    const nothing = await cli(["backup", "create", join(work, "empty.tar")], { DATA_DIR: join(work, "no-such-data") });
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain("holds no embedded database");
    expect(existsSync(join(work, "empty.tar"))).toBe(false);
  });

  test("a damaged archive is refused and leaves nothing behind", async () => {
    const archive = join(work, "plain.tar");
    await createBackup({ dataDir: sourceDir, file: archive });
    const bytes = readFileSync(archive);
    // flip one byte inside an object (the noisy JPEG's bytes are in the archive as they are on disk)
    const [path, object] = [...files(join(sourceDir, "uploads"))].sort((x, y) => y[1].length - x[1].length)[0]!;
    const at = bytes.indexOf(object.subarray(0, 64));
    expect(at).toBeGreaterThan(0);
    const damaged = Buffer.from(bytes);
    damaged[at + Math.floor(object.length / 2)]! ^= 0xff;
    writeFileSync(join(work, "damaged.tar"), damaged);

    const target = join(work, "from-damaged");
    await withCustomRootAside(async () => {
      await expect(restoreBackup({ dataDir: target, file: join(work, "damaged.tar"), allowRoots: [customRoot] })).rejects.toThrow("the archive is damaged");
      expect(existsSync(target)).toBe(false);
      expect(existsSync(customRoot)).toBe(false); // the other root's objects were staged, and removed
      noStaging(target);
      noStaging(customRoot);
      const run = await cli(["backup", "restore", join(work, "damaged.tar")], { DATA_DIR: target });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`uploads/${path}: content differs from the manifest`);
      expect(existsSync(target)).toBe(false);

      // cut short (an interrupted copy): refused too; an empty existing DATA_DIR is left empty
      writeFileSync(join(work, "short.tar"), bytes.subarray(0, Math.floor(bytes.length / 2)));
      mkdirSync(target);
      await expect(restoreBackup({ dataDir: target, file: join(work, "short.tar") })).rejects.toThrow("incomplete");
      expect(readdirSync(target)).toEqual([]);
      expect(existsSync(customRoot)).toBe(false);
      noStaging(target);
    });
  });

  test("the archive names the database's identity and its sequences of no column; an archive of format 1 (without them) still restores", async () => {
    const base = join(work, "format-2.tar");
    await createBackup({ dataDir: sourceDir, file: base });
    const entries = await new Bun.Archive(readFileSync(base)).files();
    const manifest = JSON.parse(await entries.get("manifest.json")!.text());
    expect(manifest.format_version).toBe(2);
    expect(manifest.database.database_id).toBe(await readDatabaseId(database.db));
    expect(manifest.database.standalone_sequences.map((s: { sequence: string }) => s.sequence)).toContain("webhook_event_seq");
    expect(manifest.webhooks).toEqual({ sealed_with: [], key_file: null });

    // as the previous build wrote it: format 1, no identity, no webhook key, no sequences of no column
    manifest.format_version = 1;
    delete manifest.webhooks;
    delete manifest.database.database_id;
    delete manifest.database.standalone_sequences;
    const rebuilt: Record<string, Blob | string> = { "manifest.json": JSON.stringify(manifest) };
    for (const [name, file] of entries) if (!(name in rebuilt)) rebuilt[name] = file;
    const archive = join(work, "format-1.tar");
    writeFileSync(archive, await new Bun.Archive(rebuilt).bytes());
    const target = join(work, "restored-format-1");
    await withCustomRootAside(async () => {
      const summary = await restoreBackup({ dataDir: target, file: archive, allowRoots: [customRoot] });
      expect(summary.warnings).toEqual([]);
      const copy = await openEmbedded(target);
      try {
        expect(await readDatabaseId(copy.db)).toBeNull(); // written at first use, like any database's
        expect((await snapshot(copy)).images).toEqual((await snapshot(database)).images);
      } finally {
        await copy.close();
      }
    });
  });

  test("an archive of a newer schema is refused before anything is written", async () => {
    const entries = await new Bun.Archive(readFileSync(join(work, "plain.tar"))).files();
    const manifest = JSON.parse(await entries.get("manifest.json")!.text());
    manifest.database.migrations.push({ tag: "9999_from_the_future", hash: "0".repeat(64), created_at: 4_000_000_000_000 });
    const rebuilt: Record<string, Blob | string> = { "manifest.json": JSON.stringify(manifest) };
    for (const [name, file] of entries) if (name !== "manifest.json") rebuilt[name] = file;
    writeFileSync(join(work, "newer.tar"), await new Bun.Archive(rebuilt).bytes());

    const target = join(work, "from-newer");
    const run = await cli(["backup", "restore", join(work, "newer.tar")], { DATA_DIR: target });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("migration 9999_from_the_future");
    expect(run.stderr).toContain("newer or different version");
    expect(existsSync(target)).toBe(false);
    noStaging(target);
  });

  test("an image deleted while the backup runs is left out, and restored as deleted", async () => {
    const victim = keys[0]!;
    const archive = join(work, "during-delete.tar");
    const summary = await createBackup({
      dataDir: sourceDir,
      file: archive,
      // between the snapshot and the copy of the objects
      beforeObjects: () => deleteImage(deps, owner, victim),
    });
    keys.shift();
    expect(summary.dropped_images).toBe(1);
    const listed = await new Bun.Archive(await Bun.file(archive).bytes()).files("objects.json");
    const objects = JSON.parse(await listed.get("objects.json")!.text());
    expect(objects.dropped_images).toEqual([expect.objectContaining({ key: victim })]);

    const target = join(work, "restored-after-delete");
    await withCustomRootAside(async (originalCustom) => {
      const restored = await restoreBackup({ dataDir: target, file: archive, allowRoots: [customRoot] });
      expect(restored.dropped_images).toBe(1);
      const copy = await openEmbedded(target);
      try {
        // the restored state is the live one after the delete: record gone, its owner's and strategy's bytes released
        const [a, b] = [await snapshot(database), await snapshot(copy)];
        // but for one counter: the live delete queued (and then finished) the removal of its objects, which took ids
        // from pending_removals' sequence; the restore has no objects to remove for it
        const withoutRemovalIds = (rows: string[]) => rows.filter((r) => !r.startsWith("pending_removals_id_seq "));
        a["(sequences)"] = withoutRemovalIds(a["(sequences)"]!);
        b["(sequences)"] = withoutRemovalIds(b["(sequences)"]!);
        for (const table of Object.keys(a)) expect({ table, rows: b[table] }).toEqual({ table, rows: a[table]! });
      } finally {
        await copy.close();
      }
      expectSameFiles(files(join(target, "uploads")), files(join(sourceDir, "uploads")));
      expectSameFiles(files(customRoot), files(originalCustom));
    });
  });

  test("a backup of a stopped server starts its database for the duration, then stops it", async () => {
    await database.close();
    try {
      const archive = join(work, "stopped.tgz");
      const run = await cli(["backup", "create", archive, "--json"], { DATA_DIR: sourceDir });
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ server_running: false, gzip: true });
      expect(runningServerConnection(join(sourceDir, "postgres"))).toBeNull();
      expect(existsSync(join(sourceDir, "server.lock"))).toBe(false);
    } finally {
      database = await openEmbedded(sourceDir);
    }
  });
});

/**
 * A crafted archive (consistent checksums, so only the rule stops it) whose manifest puts a
 * root's objects outside DATA_DIR, or into the database directory, is refused before anything is written.
 */
describe.skipIf(onPostgres)("restore writes only under DATA_DIR and confirmed roots, never the database directory", () => {
  /** Every path under `work` (files, directories, links), to compare before and after a refused restore. */
  const tree = () => readdirSync(work, { recursive: true }).map(String).sort();

  /** The base archive with its root of its own (custom-root's) moved to `configRoot` and extra objects added under it (checksums kept consistent). */
  async function craft(name: string, configRoot: string, extra: Record<string, string>): Promise<string> {
    const base = join(work, "crafting-base.tar");
    if (!existsSync(base)) await createBackup({ dataDir: sourceDir, file: base });
    const files = await new Bun.Archive(readFileSync(base)).files();
    const manifest = JSON.parse(await files.get("manifest.json")!.text());
    const objects = JSON.parse(await files.get("objects.json")!.text());
    const root = manifest.storage.roots.find((r: any) => r.config_root !== null);
    root.config_root = configRoot;
    const entryPrefix = `${root.prefix}/`;
    const rebuilt: Record<string, Blob | string> = { "manifest.json": JSON.stringify(manifest) };
    for (const [entry, file] of files) if (entry !== "manifest.json" && entry !== "objects.json") rebuilt[entry] = file;
    for (const [path, text] of Object.entries(extra)) {
      const entry = `${entryPrefix}${path}`;
      rebuilt[entry] = text;
      const bytes = Buffer.from(text);
      objects.objects.push({ name: entry, bytes: bytes.length, sha256: new Bun.CryptoHasher("sha256").update(bytes).digest("hex") });
      objects.count++;
      objects.bytes += bytes.length;
    }
    rebuilt["objects.json"] = JSON.stringify(objects);
    const file = join(work, name);
    writeFileSync(file, await new Bun.Archive(rebuilt).bytes());
    return file;
  }

  test("a root outside DATA_DIR (an ~/.ssh) is refused unless confirmed with --allow-root; nothing is written", async () => {
    const home = join(work, "victim-home");
    mkdirSync(home);
    const archive = await craft("ssh.tar", join(home, ".ssh"), { authorized_keys: "ssh-ed25519 AAAA attacker" });
    const target = join(work, "restored-ssh");
    const before = tree();
    const run = await cli(["backup", "restore", archive], { DATA_DIR: target });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("the archive names places this restore may not write to: nothing was restored");
    expect(run.stderr).toContain(`${JSON.stringify(join(home, ".ssh"))}: outside DATA_DIR`);
    expect(run.stderr).not.toContain("    at ");
    // the bound: no file written anywhere (not in the victim's home, not DATA_DIR, not a staging directory)
    expect(tree()).toEqual(before);
    expect(existsSync(join(home, ".ssh"))).toBe(false);

    // spelled through a symlink or '..' it is the same place, and refused the same way
    symlinkSync(home, join(work, "innocent-link"));
    const linked = await craft("ssh-link.tar", join(work, "innocent-link", ".ssh"), { authorized_keys: "ssh-ed25519 AAAA attacker" });
    const dotted = await craft("ssh-dots.tar", `${target}/../victim-home/.ssh`, { authorized_keys: "ssh-ed25519 AAAA attacker" });
    const beforeSpelled = tree();
    for (const file of [linked, dotted]) {
      await expect(restoreBackup({ dataDir: target, file })).rejects.toThrow("may not write to");
      // confirming another directory does not confirm this one
      await expect(restoreBackup({ dataDir: target, file, allowRoots: [customRoot] })).rejects.toThrow("may not write to");
    }
    expect(tree()).toEqual(beforeSpelled);
    expect(existsSync(join(home, ".ssh"))).toBe(false);
  });

  test("a root in the database directory is refused, however it is spelled and whatever is confirmed", async () => {
    const target = join(work, "restored-pg");
    const planted = { PG_VERSION: "18\n", "postgresql.conf": "shared_preload_libraries = 'evil'\n" };
    const sneaky = join(work, "sneaky-link");
    mkdirSync(target);
    symlinkSync(target, sneaky);
    const spellings = [join(target, "postgres"), `${target}/uploads/../postgres`, join(sneaky, "postgres"), join(target, "postgres", "base"), work];
    const before = tree();
    for (const [i, configRoot] of spellings.entries()) {
      const archive = await craft(`pg-${i}.tar`, configRoot, planted);
      const expected = before.concat(relative(work, archive)).sort();
      for (const allowRoots of [[], [work], [target]]) {
        const refusal = restoreBackup({ dataDir: target, file: archive, allowRoots });
        await expect(refusal).rejects.toThrow("may not write to");
        const message = await refusal.catch((e) => `${e.message}\n${e.details.join("\n")}`);
        expect(message).toContain("database directory");
        expect({ configRoot, allowRoots, tree: tree() }).toEqual({ configRoot, allowRoots, tree: expected });
      }
      rmSync(archive);
    }
    expect(readdirSync(target)).toEqual([]);
  });

  test("an entry that would leave its root, or a root through a dangling link, is refused before anything is written", async () => {
    const target = join(work, "restored-escape");
    symlinkSync(join(work, "not-yet"), join(work, "dangling"));
    const dangling = await craft("dangling.tar", join(work, "dangling", "images"), { "2026/01/01/x.png": "x" });
    const escaping = await craft("escape.tar", join(target, "images"), { "../../escaped.txt": "x" });
    const before = tree();
    const refused = await restoreBackup({ dataDir: target, file: dangling, allowRoots: [join(work, "victim-home")] }).catch((e) => e);
    expect(refused.message).toContain("may not write to");
    expect(refused.details.join("\n")).toContain("symbolic link to nowhere (dangling)");
    await expect(restoreBackup({ dataDir: target, file: escaping })).rejects.toThrow("unexpected entry");
    expect(tree()).toEqual(before);
    expect(existsSync(join(work, "not-yet"))).toBe(false);
  });

  test("a confirmed root (given twice on the command line with another) is restored, and only there", async () => {
    const elsewhere = join(work, "confirmed-elsewhere");
    const archive = await craft("confirmed.tar", join(elsewhere, "images"), {});
    const target = join(work, "restored-confirmed");
    const run = await cli(["backup", "restore", archive, "--allow-root", join(work, "victim-home"), "--allow-root", elsewhere, "--json"], { DATA_DIR: target });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expectSameFiles(files(join(elsewhere, "images")), files(customRoot));
    expect(readdirSync(elsewhere)).toEqual(["images"]); // no staging directory left in it, nothing beside it
    expect(readdirSync(join(work, "victim-home"))).toEqual([]);
    noStaging(target);
  });
});

test("backup refuses a DATABASE_URL deployment and points to docs/backups.md", async () => {
  const run = await cli(["backup", "create", join(work, "pg.tar")], {
    DATA_DIR: join(work, "pg-data"),
    DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postgres",
  });
  expect(run.code).toBe(1);
  expect(run.stderr).toContain("DATABASE_URL is set");
  expect(run.stderr).toContain("pg_dump");
  expect(run.stderr).toContain("docs/backups.md");
  expect(existsSync(join(work, "pg.tar"))).toBe(false);
});

/**
 * Variants are derived data. A backup holds neither their objects nor their rows (image_variants is an
 * empty entry), so a restore never leaves a row naming a missing object; the restored server makes each variant again
 * on its first request. Last in the file: the tests above compare the live DATA_DIR with restores file by file.
 */
describe.skipIf(onPostgres)("variants: left out of the archive, made again after a restore", () => {
  const variantOf = async (fetcher: { fetch(r: Request): Response | Promise<Response> }, pathname: string) => {
    const res = await fetcher.fetch(new Request(`${BASE_URL}/i/${pathname}?w=320&format=webp`, { headers: { "x-forwarded-for": "198.51.100.7" } }));
    const bytes = new Uint8Array(await res.arrayBuffer());
    return { status: res.status, type: res.headers.get("content-type"), width: res.status === 200 ? (await sharp(bytes).metadata()).width : null };
  };
  const variantRows = async (db: Database) =>
    (await db.db.execute("select image_id::int as image_id, width, format, path from image_variants order by id" as never)) as unknown as {
      image_id: number;
      width: number;
      format: string;
      path: string;
    }[];
  const variantFiles = (dir: string) => [...files(dir).keys()].filter((p) => p.startsWith("variants/")).sort();

  test("a backup of a server with variants restores without them; each variant URL answers again, remade", async () => {
    // the stopped-server test above reopened the database: the app works on the open one
    deps = { ...deps, db: database.db };
    app = createApp(deps);
    const onDefault = (await upload(ownerToken, await makeNoisyJpeg(900, 600), "to-vary.jpg")) as unknown as { key: string; pathname: string };
    const onCustom = (await upload(ownerToken, await makeNoisyJpeg(700, 500), "to-vary-too.jpg", { strategy_id: String(customId) })) as unknown as {
      key: string;
      pathname: string;
    };
    for (const up of [onDefault, onCustom]) expect(await variantOf(app, up.pathname)).toEqual({ status: 200, type: "image/webp", width: 320 });
    const liveRows = await variantRows(database);
    expect(liveRows.length).toBe(2);
    expect(variantFiles(join(sourceDir, "uploads")).length).toBe(1);
    expect(variantFiles(customRoot).length).toBe(1);

    const archive = join(work, "with-variants.tar");
    const summary = await createBackup({ dataDir: sourceDir, file: archive });
    const entries = await new Bun.Archive(readFileSync(archive)).files();
    const names = [...entries.keys()];
    expect(names.filter((n) => n.includes("variants/"))).toEqual([]); // no variant object
    expect(await entries.get("db/image_variants.copy")!.text()).toBe(""); // and no variant row
    const manifest = JSON.parse(await entries.get("manifest.json")!.text());
    expect(manifest.database.tables.find((t: { name: string }) => t.name === "image_variants")).toMatchObject({ rows: 0, bytes: 0 });
    const objects = JSON.parse(await entries.get("objects.json")!.text());
    expect(objects.objects.filter((o: { name: string }) => o.name.includes("variants/"))).toEqual([]);
    expect(summary.objects).toBe(objects.count);

    const target = join(work, "restored-variants");
    await withCustomRootAside(async (originalCustom) => {
      const restored = await restoreBackup({ dataDir: target, file: archive, allowRoots: [customRoot] });
      expect(restored.records).toBe(summary.records);
      // everything but the variants, as on the live server
      const withoutVariants = (m: Map<string, Buffer>) => new Map([...m].filter(([p]) => !p.startsWith("variants/")));
      expectSameFiles(files(join(target, "uploads")), withoutVariants(files(join(sourceDir, "uploads"))));
      expectSameFiles(files(customRoot), withoutVariants(files(originalCustom)));
      expect(variantFiles(join(target, "uploads"))).toEqual([]);

      const copy = await openEmbedded(target);
      try {
        expect(await variantRows(copy)).toEqual([]); // no row naming a missing object
        const restoredApp = createApp({
          ...deps,
          db: copy.db,
          storage: new StorageRegistry({ dataDir: target, baseUrl: BASE_URL }),
          config: { ...deps.config, dataDir: target },
        });
        for (const up of [onDefault, onCustom]) expect(await variantOf(restoredApp, up.pathname)).toEqual({ status: 200, type: "image/webp", width: 320 });
        const remade = await variantRows(copy);
        expect(remade.map((r) => [r.width, r.format]).sort()).toEqual(liveRows.map((r) => [r.width, r.format]).sort());
        expect(remade.map((r) => r.image_id).sort()).toEqual(liveRows.map((r) => r.image_id).sort());
        expect(variantFiles(join(target, "uploads")).length).toBe(1);
        expect(variantFiles(customRoot).length).toBe(1);
        // a second request serves the stored variant (no new row, no new file)
        expect(await variantOf(restoredApp, onDefault.pathname)).toEqual({ status: 200, type: "image/webp", width: 320 });
        expect((await variantRows(copy)).length).toBe(2);
      } finally {
        await copy.close();
      }
    });
  });

  test("an archive that holds variant rows (made by hand, or by an earlier build) restores none of them", async () => {
    const base = join(work, "with-variants.tar");
    const entries = await new Bun.Archive(readFileSync(base)).files();
    const manifest = JSON.parse(await entries.get("manifest.json")!.text());
    const live = (await database.db.execute(
      "select id, image_id, width, format, path, size, created_at from image_variants order by id" as never,
    )) as unknown as Record<string, unknown>[];
    expect(live.length).toBeGreaterThan(0);
    const table = manifest.database.tables.find((t: { name: string }) => t.name === "image_variants");
    // the live table's rows in COPY text form, columns in the manifest's order
    const copied = (await database.db.execute(
      `select ${table.columns.map((c: string) => `"${c}"::text`).join(" || E'\\t' || ")} as line from image_variants order by id` as never,
    )) as unknown as { line: string }[];
    const text = copied.map((r) => `${r.line}\n`).join("");
    table.rows = copied.length;
    table.bytes = Buffer.byteLength(text);
    table.sha256 = new Bun.CryptoHasher("sha256").update(text).digest("hex");
    const rebuilt: Record<string, Blob | string> = { "manifest.json": JSON.stringify(manifest), "db/image_variants.copy": text };
    for (const [name, file] of entries) if (!(name in rebuilt)) rebuilt[name] = file;
    const archive = join(work, "variant-rows.tar");
    writeFileSync(archive, await new Bun.Archive(rebuilt).bytes());

    const target = join(work, "restored-variant-rows");
    await withCustomRootAside(async () => {
      await restoreBackup({ dataDir: target, file: archive, allowRoots: [customRoot] });
      const copy = await openEmbedded(target);
      try {
        expect(await variantRows(copy)).toEqual([]);
      } finally {
        await copy.close();
      }
    });
  });
});
