/**
 * Backups of the embedded deployment: DATA_DIR's PostgreSQL and the objects of its local strategies, as one tar
 * archive (gzip when the file name ends in `.gz` or `.tgz`). On DATABASE_URL deployments the README's pg_dump
 * recipe applies instead.
 *
 * Consistency. `createBackup` reads every table of the `public` schema with `COPY … TO STDOUT` inside one
 * `REPEATABLE READ READ ONLY` transaction (one snapshot), then, still in it, copies the objects that the
 * snapshot's image records name. A record commits only after its objects are durable, and an object is removed
 * only by a delete that then removes its record: so an object missing at copy time belongs to an image deleted
 * after the snapshot (or already broken). Such an image is left out: its objects are not in the archive and the
 * restore deletes its record the way the service deletes an image (`deleteImageAndRelease`, which releases its
 * owner's and its strategy's bytes). The restored state is the snapshot less the images deleted while the backup
 * ran. Objects are opened before they are read, so one deleted while it is being copied is still copied whole.
 * Uploads in flight at the snapshot are not in it (their records had not committed), nor are their objects.
 *
 * Archive layout, in this order: `manifest.json` (format, schema level, tables with their columns, row counts and
 * sha256, sequences, strategies' roots), `db/<table>.copy` (COPY text format), `admin-token` (when DATA_DIR has
 * one), `uploads/<path>` (objects of strategies using the default root DATA_DIR/uploads), `roots/<n>/<path>`
 * (objects of local strategies with a root of their own), and last `objects.json` (every object's size and
 * sha256, the images left out). Objects of S3 strategies are not in the archive: their records are, and the
 * bucket is backed up with the provider's tools.
 *
 * Atomicity. The archive is written to FILE.tmp, fsynced and renamed. A restore builds everything (database
 * cluster, objects) in a staging directory beside DATA_DIR (`DATA_DIR.restoring-…`), verifies every sha256 and
 * row count, and renames it into place only when complete; any failure removes the staging directory. When
 * DATA_DIR is a mount point (an empty volume), the staging directory is inside it and its entries are renamed
 * into place at the end, the database last.
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, existsSync, readFileSync } from "node:fs";
import { copyFile, mkdir, open, readdir, readFile, rename, rm, rmdir, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";
import type { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip, createGzip } from "node:zlib";
import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import tar from "tar-stream";
import packageJson from "../../package.json" with { type: "json" };
import { attachEmbedded, migrationsFolder, openPostgres } from "../db/client.ts";
import type { ConnectionOptions } from "../db/embedded.ts";
import { startEmbeddedPostgres } from "../db/embedded.ts";
import { deleteImageAndRelease } from "../db/repositories/images.ts";
import * as schema from "../db/schema.ts";
import { StorageRegistry } from "../storage/index.ts";
import { LocalStorage, syncPath } from "../storage/local.ts";

export const BACKUP_FORMAT = "image-host-backup";
export const BACKUP_FORMAT_VERSION = 1;

/** A refusal or failure to report as is (no stack trace). */
export class BackupError extends Error {
  constructor(
    message: string,
    readonly details: string[] = [],
  ) {
    super(message);
  }
}

export interface TableEntry {
  name: string;
  /** The archive entry holding its rows (COPY text format). */
  file: string;
  /** The columns copied, in this order (generated columns are not copied). */
  columns: string[];
  rows: number;
  bytes: number;
  sha256: string;
}

export interface Manifest {
  format: typeof BACKUP_FORMAT;
  format_version: number;
  created_at: string;
  app_version: string;
  source: { data_dir: string; server_running: boolean; postgres_version: string };
  database: {
    /** drizzle's journal of applied migrations (drizzle.__drizzle_migrations): the schema level of the rows. */
    migrations: { tag: string | null; hash: string; created_at: number }[];
    tables: TableEntry[];
    /** Each serial column's sequence as the backup read it (never below the largest id of the snapshot). */
    sequences: { table: string; column: string; sequence: string; last_value: number | null }[];
  };
  storage: {
    /** Where the objects of local strategies go: `uploads/` is DATA_DIR/uploads, `roots/<n>/` a root of its own. */
    roots: { prefix: string; config_root: string | null; strategy_ids: number[] }[];
    /** Strategies whose objects are not in the archive (back up their bucket with the provider's tools). */
    s3_strategy_ids: number[];
    note: string;
  };
  files: { name: string; bytes: number; sha256: string }[];
}

export interface ObjectList {
  count: number;
  bytes: number;
  objects: { name: string; bytes: number; sha256: string }[];
  /** Images of the snapshot whose objects were gone when copied (deleted during the backup): restored as deleted. */
  dropped_images: { id: number; key: string; missing: string[] }[];
  /** Image records of S3 strategies: in the archive, their objects are not. */
  s3_images: number;
}

/** What an archive holds, as both summaries report it. */
interface ArchiveCounts {
  file: string;
  tables: number;
  records: number;
  objects: number;
  object_bytes: number;
  dropped_images: number;
  s3_images: number;
  duration_ms: number;
}

export interface BackupSummary extends ArchiveCounts {
  archive_bytes: number;
  gzip: boolean;
  server_running: boolean;
}

export interface RestoreSummary extends ArchiveCounts {
  data_dir: string;
  migrated_from: string | null;
}

const MANIFEST = "manifest.json";
const OBJECT_LIST = "objects.json";
const ADMIN_TOKEN = "admin-token";
const DEFAULT_ROOT_PREFIX = "uploads";
const S3_NOTE = "Objects of S3 strategies are not in this archive (their records are): back up the bucket with the provider's tools.";

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;
const isGzipName = (file: string) => /\.(gz|tgz)$/i.test(file);
const sha256Hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** A relative object path as the service writes them: '/'-separated, no empty, `.` or `..` segment. */
function isSafeRelativePath(path: string): boolean {
  if (!path || path.startsWith("/") || path.includes("\\") || path.includes("\0")) return false;
  return path.split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..");
}

// ───────────────────────────── create ─────────────────────────────

export interface CreateOptions {
  dataDir: string;
  file: string;
  /** Runs after the snapshot's tables are read, before its objects are copied (tests provoke a concurrent delete there). */
  beforeObjects?: () => Promise<void>;
}

/**
 * Writes a consistent archive of DATA_DIR's embedded database and local objects to `file` (refused when it exists).
 * Works while the server runs (through its PostgreSQL's socket) and when it does not (the cluster is started for
 * the duration, holding the DATA_DIR lock).
 */
export async function createBackup(options: CreateOptions): Promise<BackupSummary> {
  const t0 = performance.now();
  const dataDir = resolve(options.dataDir);
  const file = resolve(options.file);
  if (existsSync(file)) throw new BackupError(`${file} already exists: remove it or choose another name`);
  if (!existsSync(dirname(file))) throw new BackupError(`${dirname(file)} does not exist`);
  if (file === dataDir || file.startsWith(dataDir + sep)) throw new BackupError(`write the archive outside DATA_DIR (${dataDir})`);

  const attached = await attachEmbedded(dataDir).catch((e: Error) => {
    throw new BackupError(`cannot open the embedded database of ${dataDir}: ${e.message}`);
  });
  if (!attached) {
    throw new BackupError(`${dataDir} holds no embedded database (no ${join(dataDir, "postgres")}): nothing to back up`, [
      "Check DATA_DIR. A DATA_DIR of an earlier version (PGlite, DATA_DIR/db) is converted by starting the server once.",
    ]);
  }
  const temp = `${file}.tmp`;
  const spool = `${file}.tmp-tables`;
  const sql = postgres({ ...attached.connection, max: 1, onnotice: () => {} });
  try {
    await rm(spool, { recursive: true, force: true });
    await mkdir(spool, { mode: 0o700 });
    const gzip = isGzipName(file);
    const result = await sql.begin("isolation level repeatable read read only", async (tx) => {
      const manifest = await readSnapshot(tx, dataDir, spool, attached.startedHere);
      await options.beforeObjects?.();
      return writeArchive(tx, manifest, { dataDir, spool, temp, gzip });
    });
    await syncPath(temp);
    await rename(temp, file);
    await fsyncDirectory(dirname(file));
    const { manifest, objects } = result;
    return {
      file,
      archive_bytes: (await stat(file)).size,
      gzip,
      server_running: !attached.startedHere,
      tables: manifest.database.tables.length,
      records: manifest.database.tables.reduce((n, t) => n + t.rows, 0),
      objects: objects.count,
      object_bytes: objects.bytes,
      dropped_images: objects.dropped_images.length,
      s3_images: objects.s3_images,
      duration_ms: Math.round(performance.now() - t0),
    };
  } catch (e) {
    await rm(temp, { force: true });
    if (e instanceof BackupError) throw e;
    throw new BackupError(`backup failed: ${(e as Error).message}`);
  } finally {
    await rm(spool, { recursive: true, force: true });
    await sql.end({ timeout: 5 });
    await attached.close();
  }
}

type Tx = postgres.TransactionSql;

/** Reads the schema level, the tables (spooled to files: a tar entry needs its size first) and the strategies. */
async function readSnapshot(tx: Tx, dataDir: string, spool: string, startedHere: boolean): Promise<Manifest> {
  const tags = new Map(journalEntries().map((e) => [e.when, e.tag]));
  const [{ present }] = await tx<{ present: boolean }[]>`select to_regclass('drizzle.__drizzle_migrations') is not null as present`;
  const applied = present
    ? await tx<{ hash: string; created_at: string }[]>`
        select hash, created_at::text as created_at from drizzle.__drizzle_migrations order by created_at, id`
    : [];
  if (applied.length === 0) throw new BackupError("the database has no schema yet (no migration applied): start the server once first");
  const migrations = applied.map((m) => ({ tag: tags.get(Number(m.created_at)) ?? null, hash: m.hash, created_at: Number(m.created_at) }));

  const [{ version }] = await tx<{ version: string }[]>`select current_setting('server_version') as version`;
  const names = (await tx<{ name: string }[]>`select tablename as name from pg_tables where schemaname = 'public' order by 1`).map((r) => r.name);
  const tables: TableEntry[] = [];
  for (const name of names) {
    const columns = (
      await tx<{ c: string }[]>`
        select column_name as c from information_schema.columns
        where table_schema = 'public' and table_name = ${name} and is_generated = 'NEVER' order by ordinal_position`
    ).map((r) => r.c);
    const entry = `db/${name}.copy`;
    const target = join(spool, `${name}.copy`);
    const hash = createHash("sha256");
    let bytes = 0;
    let lines = 0;
    const source = await tx.unsafe(`copy public.${quoteIdent(name)} (${columns.map(quoteIdent).join(", ")}) to stdout`).readable();
    const sink = createWriteStream(target, { mode: 0o600 });
    await pipeline(
      source,
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          hash.update(chunk);
          bytes += chunk.length;
          for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
          yield chunk;
        }
      },
      sink,
    );
    const [{ n }] = await tx.unsafe<{ n: number }[]>(`select count(*)::int as n from public.${quoteIdent(name)}`);
    if (n !== lines) throw new BackupError(`copying ${name}: ${n} rows in the table, ${lines} lines copied`);
    tables.push({ name, file: entry, columns, rows: n, bytes, sha256: hash.digest("hex") });
  }

  // sequences are not transactional: read now, each is at least the largest id the snapshot holds
  const serials = await tx<{ table: string; column: string; sequence: string }[]>`
    select table_name as table, column_name as column,
           pg_get_serial_sequence(format('public.%I', table_name), column_name) as sequence
    from information_schema.columns
    where table_schema = 'public' and pg_get_serial_sequence(format('public.%I', table_name), column_name) is not null
    order by 1, 2`;
  const sequences: Manifest["database"]["sequences"] = [];
  for (const s of serials) {
    const [{ v }] = await tx.unsafe<{ v: string | null }[]>(`select case when is_called then last_value::text end as v from ${s.sequence}`);
    sequences.push({ ...s, last_value: v === null ? null : Number(v) });
  }

  const strategies = await tx<{ id: number; driver: string; config: Record<string, unknown> }[]>`
    select id, driver, config from strategies order by id`;
  const roots: Manifest["storage"]["roots"] = [];
  const s3: number[] = [];
  for (const s of strategies) {
    if (s.driver !== "local") {
      s3.push(s.id);
      continue;
    }
    const configRoot = typeof s.config?.root === "string" ? s.config.root : null;
    const same = roots.find((r) => r.config_root === configRoot);
    if (same) same.strategy_ids.push(s.id);
    else roots.push({ prefix: configRoot === null ? DEFAULT_ROOT_PREFIX : `roots/${roots.length}`, config_root: configRoot, strategy_ids: [s.id] });
  }

  const files: Manifest["files"] = [];
  const tokenFile = join(dataDir, ADMIN_TOKEN);
  if (existsSync(tokenFile)) {
    const bytes = await readFile(tokenFile);
    files.push({ name: ADMIN_TOKEN, bytes: bytes.length, sha256: sha256Hex(bytes) });
  }

  return {
    format: BACKUP_FORMAT,
    format_version: BACKUP_FORMAT_VERSION,
    created_at: new Date().toISOString(),
    app_version: packageJson.version,
    source: { data_dir: dataDir, server_running: !startedHere, postgres_version: version },
    database: { migrations, tables, sequences },
    storage: { roots, s3_strategy_ids: s3, note: S3_NOTE },
    files,
  };
}

interface Journal {
  entries: { idx: number; when: number; tag: string }[];
}

/** drizzle/meta/_journal.json: the migrations of this build, in order (`when` is what the database records). */
function readJournal(): Journal {
  return JSON.parse(readFileSync(join(migrationsFolder, "meta/_journal.json"), "utf8")) as Journal;
}

const journalEntries = () => readJournal().entries;

/** Streams the archive to `temp`: the manifest, the spooled tables, the admin token, the objects, the object list. */
async function writeArchive(
  tx: Tx,
  manifest: Manifest,
  o: { dataDir: string; spool: string; temp: string; gzip: boolean },
): Promise<{ manifest: Manifest; objects: ObjectList }> {
  const pack = tar.pack();
  const sink = createWriteStream(o.temp, { mode: 0o600 });
  const done = o.gzip ? pipeline(pack, createGzip(), sink) : pipeline(pack, sink);
  // a failure of the file (disk full) must end the waits on the pack
  const failed = done.then(
    () => new Promise<never>(() => {}),
    (e: unknown) => Promise.reject(e),
  );
  failed.catch(() => {});
  const guard = <T>(p: Promise<T>) => Promise.race([p, failed]);
  const now = new Date(manifest.created_at);

  await guard(addBuffer(pack, { name: MANIFEST, mode: 0o600, mtime: now }, Buffer.from(JSON.stringify(manifest, null, 2))));
  for (const t of manifest.database.tables) {
    const source = join(o.spool, `${t.name}.copy`);
    await guard(addStream(pack, { name: t.file, size: t.bytes, mode: 0o600, mtime: now }, createReadStream(source), guard));
  }
  if (manifest.files.length > 0) {
    const bytes = await readFile(join(o.dataDir, ADMIN_TOKEN));
    if (sha256Hex(bytes) !== manifest.files[0]!.sha256) throw new BackupError(`${ADMIN_TOKEN} changed during the backup: run it again`);
    await guard(addBuffer(pack, { name: ADMIN_TOKEN, mode: 0o600, mtime: now }, bytes));
  }

  const registry = new StorageRegistry({ dataDir: o.dataDir, baseUrl: "http://localhost" });
  const strategies = await tx<{ id: number; driver: string; config: Record<string, unknown> }[]>`select id, driver, config from strategies`;
  const locals = new Map<number, { storage: LocalStorage; prefix: string }>();
  for (const s of strategies) {
    if (s.driver !== "local") continue;
    const storage = registry.for({ id: s.id, driver: "local", config: s.config });
    const root = manifest.storage.roots.find((r) => r.strategy_ids.includes(s.id));
    if (storage instanceof LocalStorage && root) locals.set(s.id, { storage, prefix: root.prefix });
  }

  const list: ObjectList = { count: 0, bytes: 0, objects: [], dropped_images: [], s3_images: 0 };
  const images = tx<{ id: string; key: string; strategy_id: number; path: string; thumbnail_path: string | null }[]>`
    select id::text as id, key, strategy_id, path, thumbnail_path from images order by id`.cursor(500);
  for await (const rows of images) {
    for (const image of rows) {
      const local = locals.get(image.strategy_id);
      if (!local) {
        list.s3_images++;
        continue;
      }
      const paths = [...new Set([image.path, image.thumbnail_path].filter((p): p is string => p !== null))];
      // open every object of the image first: all of them are copied, or the image is left out
      const opened: { path: string; handle: Awaited<ReturnType<typeof open>> }[] = [];
      const missing: string[] = [];
      for (const path of paths) {
        const full = isSafeRelativePath(path) ? local.storage.readableFile(path)?.name : undefined;
        try {
          if (!full) throw Object.assign(new Error("not a path of this storage"), { code: "ENOENT" });
          opened.push({ path, handle: await open(full, "r") });
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "ENOENT") {
            await Promise.all(opened.map((f) => f.handle.close()));
            throw e;
          }
          missing.push(path);
        }
      }
      if (missing.length > 0) {
        await Promise.all(opened.map((f) => f.handle.close()));
        list.dropped_images.push({ id: Number(image.id), key: image.key, missing });
        continue;
      }
      for (const { path, handle } of opened) {
        try {
          const info = await handle.stat();
          const name = `${local.prefix}/${path}`;
          const sha256 = await guard(
            addStream(pack, { name, size: info.size, mode: 0o644, mtime: info.mtime }, handle.createReadStream({ autoClose: false }), guard),
          );
          list.objects.push({ name, bytes: info.size, sha256 });
          list.count++;
          list.bytes += info.size;
        } finally {
          await handle.close();
        }
      }
    }
  }
  await guard(addBuffer(pack, { name: OBJECT_LIST, mode: 0o600, mtime: new Date() }, Buffer.from(JSON.stringify(list, null, 2))));
  pack.finalize();
  await done;
  return { manifest, objects: list };
}

type TarHeader = { name: string; size?: number; mode: number; mtime: Date };

function addBuffer(pack: tar.Pack, header: TarHeader, bytes: Buffer): Promise<string> {
  return new Promise((done, fail) => {
    pack.entry({ ...header, size: bytes.length, type: "file" }, bytes, (e) => (e ? fail(e) : done(sha256Hex(bytes))));
  });
}

/** Streams `source` into a new entry of `header.size` bytes; resolves with its sha256. */
async function addStream(
  pack: tar.Pack,
  header: TarHeader,
  source: AsyncIterable<unknown>,
  guard: <T>(p: Promise<T>) => Promise<T>,
): Promise<string> {
  const hash = createHash("sha256");
  const { promise: finished, resolve: done, reject: fail } = Promise.withResolvers<void>();
  finished.catch(() => {});
  const entry = pack.entry({ ...header, type: "file" }, (err) => (err ? fail(err) : done()));
  let written = 0;
  try {
    for await (const chunk of source) {
      if (!(chunk instanceof Uint8Array)) throw new BackupError(`${header.name}: unexpected chunk`);
      hash.update(chunk);
      written += chunk.length;
      if (written > (header.size ?? 0)) throw new BackupError(`${header.name} grew while it was copied`);
      if (!entry.write(chunk)) await guard(new Promise<void>((drained) => entry.once("drain", () => drained())));
    }
    if (written !== header.size) throw new BackupError(`${header.name} shrank while it was copied`);
    entry.end(undefined);
    await guard(finished);
  } catch (e) {
    entry.destroy(e as Error);
    throw e;
  }
  return hash.digest("hex");
}

async function fsyncDirectory(path: string) {
  try {
    await syncPath(path);
  } catch {} // some filesystems refuse to sync a directory; the rename is then as durable as they make it
}

// ───────────────────────────── restore ─────────────────────────────

export interface RestoreOptions {
  dataDir: string;
  file: string;
}

/**
 * Restores an archive into an empty or absent DATA_DIR: verifies the manifest and every entry's sha256, makes a new
 * cluster at the archive's schema level, copies the rows in, removes the images the backup left out, applies this
 * build's newer migrations and writes the objects. Built in a staging directory and renamed into place only when
 * complete: a failure leaves DATA_DIR as it was.
 */
export async function restoreBackup(options: RestoreOptions): Promise<RestoreSummary> {
  const t0 = performance.now();
  const dataDir = resolve(options.dataDir);
  const file = resolve(options.file);
  if (!existsSync(file)) throw new BackupError(`${file} does not exist`);
  await assertEmpty(dataDir, "DATA_DIR");

  const main = await stageDirectory(dataDir);
  const others = new Map<string, Staged>(); // roots of their own outside DATA_DIR, by absolute path
  const work = join(main.path, ".restore");
  let server: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  try {
    await mkdir(work, { recursive: true, mode: 0o700 });
    const { manifest, objects, entries, targets } = await extract(file, dataDir, main, others, work);
    verify(manifest, objects, entries);

    server = await startEmbeddedPostgres(join(main.path, "postgres"));
    const migratedFrom = await loadDatabase(server.connection(), manifest, objects, work);
    await server.stop();
    server = undefined;

    await rm(work, { recursive: true, force: true });
    for (const dir of targets) await fsyncDirectory(dir);
    for (const staged of others.values()) await staged.commit();
    await main.commit();
    return {
      file,
      data_dir: dataDir,
      tables: manifest.database.tables.length,
      records: manifest.database.tables.reduce((n, t) => n + t.rows, 0) - objects.dropped_images.length,
      objects: objects.count,
      object_bytes: objects.bytes,
      dropped_images: objects.dropped_images.length,
      s3_images: objects.s3_images,
      migrated_from: migratedFrom,
      duration_ms: Math.round(performance.now() - t0),
    };
  } catch (e) {
    await server?.stop().catch(() => {});
    for (const staged of others.values()) await staged.abort();
    await main.abort();
    if (e instanceof BackupError) throw e;
    throw new BackupError(`restore failed, nothing was restored: ${(e as Error).message}`);
  }
}

/** Refuses a directory that exists and holds anything (`lost+found` of a fresh filesystem aside). */
async function assertEmpty(dir: string, label: string) {
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return;
    if (code === "ENOTDIR") throw new BackupError(`${label} ${dir} is a file, not a directory`);
    throw e;
  }
  const found = entries.filter((n) => n !== "lost+found");
  if (found.length > 0) {
    throw new BackupError(`${label} ${dir} is not empty (${found.slice(0, 5).join(", ")}${found.length > 5 ? ", …" : ""}): restore only into an empty or new directory`, [
      "Stop the server, move the directory aside (keep it until the restored one works), then restore.",
    ]);
  }
}

interface Staged {
  /** Where to build the directory's contents. */
  path: string;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

/**
 * A staging directory for `target` (absent or empty): beside it, renamed over it at commit (atomic); inside it
 * when it is a mount point (an empty volume, which cannot be renamed over), its entries moved up at commit.
 */
async function stageDirectory(target: string): Promise<Staged> {
  const suffix = randomBytes(4).toString("hex");
  const parent = dirname(target);
  await mkdir(parent, { recursive: true });
  const exists = existsSync(target);
  const mountPoint = exists && (await stat(target)).dev !== (await stat(parent)).dev;
  if (!mountPoint) {
    const path = `${target}.restoring-${suffix}`;
    await mkdir(path, { mode: 0o755 });
    return {
      path,
      async commit() {
        await assertEmpty(target, basename(target));
        if (exists) await rmdir(target).catch(() => {}); // empty (checked); rename replaces an empty directory anyway
        await rename(path, target);
        await fsyncDirectory(parent);
      },
      abort: () => rm(path, { recursive: true, force: true }),
    };
  }
  const path = join(target, `.restoring-${suffix}`);
  await mkdir(path, { mode: 0o700 });
  return {
    path,
    async commit() {
      // the database last: until it is in place, DATA_DIR holds no database a server would start on
      const entries = (await readdir(path)).sort((a, b) => Number(a === "postgres") - Number(b === "postgres"));
      for (const name of entries) await rename(join(path, name), join(target, name));
      await rmdir(path);
      await fsyncDirectory(target);
    },
    abort: () => rm(path, { recursive: true, force: true }),
  };
}

interface Extracted {
  manifest: Manifest;
  objects: ObjectList;
  /** Every entry written, by name: its size and sha256. */
  entries: Map<string, { bytes: number; sha256: string }>;
  /** Directories objects were written to (synced before the rename). */
  targets: Set<string>;
}

/** Reads the archive once, writing every entry where it belongs in the staging directories and hashing it. */
async function extract(file: string, dataDir: string, main: Staged, others: Map<string, Staged>, work: string): Promise<Extracted> {
  const head = Buffer.alloc(2);
  const fd = await open(file, "r");
  try {
    await fd.read(head, 0, 2, 0);
  } finally {
    await fd.close();
  }
  const gzip = head[0] === 0x1f && head[1] === 0x8b;
  const extractor = tar.extract();
  // tar-stream's streams are streamx streams, which node's pipeline drives (its types know only node's Writable)
  const destination = extractor as unknown as Writable;
  const feeding = gzip ? pipeline(createReadStream(file), createGunzip(), destination) : pipeline(createReadStream(file), destination);
  feeding.catch(() => {});

  let manifest: Manifest | undefined;
  let objects: ObjectList | undefined;
  const entries = new Map<string, { bytes: number; sha256: string }>();
  const targets = new Set<string>();
  /** Archive prefix (`uploads`, `roots/0`) → directory the objects go to. */
  const rootDirs = new Map<string, string>();
  const createdDirs = new Set<string>();

  try {
    for await (const entry of extractor) {
      const { name, type } = entry.header;
      if (type !== "file") throw new BackupError(`the archive holds ${name} of type ${type}: not an archive of this tool`);
      if (entries.has(name) || name === MANIFEST && manifest) throw new BackupError(`the archive holds ${name} twice`);
      if (!manifest) {
        if (name !== MANIFEST) throw new BackupError(`${file} is not a backup of this service (its first entry is ${name}, not ${MANIFEST})`);
        manifest = checkManifest(JSON.parse((await collect(entry)).toString("utf8")));
        for (const root of manifest.storage.roots) rootDirs.set(root.prefix, await rootDirectory(root, dataDir, main, others));
        continue;
      }
      if (name === OBJECT_LIST) {
        objects = JSON.parse((await collect(entry)).toString("utf8")) as ObjectList;
        continue;
      }
      if (objects) throw new BackupError(`the archive holds ${name} after ${OBJECT_LIST}`);
      let target: string | undefined;
      let mode = 0o644;
      const table = manifest.database.tables.find((t) => t.file === name);
      if (table) {
        target = join(work, `${table.name}.copy`);
        mode = 0o600;
      } else if (name === ADMIN_TOKEN && manifest.files.some((f) => f.name === ADMIN_TOKEN)) {
        target = join(main.path, ADMIN_TOKEN);
        mode = 0o600;
      } else {
        const root = [...rootDirs.keys()].find((prefix) => name.startsWith(`${prefix}/`));
        const path = root === undefined ? "" : name.slice(root.length + 1);
        if (root === undefined || !isSafeRelativePath(path)) throw new BackupError(`the archive holds an unexpected entry: ${name}`);
        target = join(rootDirs.get(root)!, ...path.split("/"));
      }
      const dir = dirname(target);
      if (!createdDirs.has(dir)) {
        await mkdir(dir, { recursive: true });
        createdDirs.add(dir);
      }
      if (!table && name !== ADMIN_TOKEN) targets.add(dir);
      entries.set(name, await writeEntry(entry, target, mode));
    }
    await feeding;
  } catch (e) {
    extractor.destroy();
    await feeding.catch(() => {});
    if (e instanceof SyntaxError) throw new BackupError(`${file} is damaged: a manifest is not valid JSON (${e.message})`);
    if (e instanceof BackupError) throw e;
    const message = (e as Error).message;
    if (/unexpected end/i.test(message)) throw new BackupError(`${file} is incomplete: it ends in the middle of an entry (an interrupted copy?)`);
    throw new BackupError(`${file} cannot be read as a backup archive (${message})`);
  }
  if (!manifest) throw new BackupError(`${file} is empty or not a tar archive`);
  if (!objects) throw new BackupError(`${file} is incomplete: it ends before ${OBJECT_LIST} (an interrupted copy?)`);
  return { manifest, objects, entries, targets };
}

async function collect(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    if (!(chunk instanceof Uint8Array)) throw new BackupError("the archive yields an unexpected chunk");
    size += chunk.length;
    if (size > 512 * 1024 * 1024) throw new BackupError("a manifest of more than 512 MB: not an archive of this tool");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Writes one entry to `target` (fsynced), hashing it. */
async function writeEntry(source: AsyncIterable<unknown>, target: string, mode: number): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash("sha256");
  let bytes = 0;
  const handle = await open(target, "wx", mode);
  try {
    for await (const chunk of source) {
      if (!(chunk instanceof Uint8Array)) throw new BackupError("the archive yields an unexpected chunk");
      hash.update(chunk);
      bytes += chunk.length;
      await handle.write(chunk);
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  return { bytes, sha256: hash.digest("hex") };
}

/** The manifest's format and schema level, against this build's. */
function checkManifest(value: unknown): Manifest {
  const m = value as Manifest;
  if (m?.format !== BACKUP_FORMAT) throw new BackupError(`not a backup of this service (format ${JSON.stringify(m?.format)})`);
  if (m.format_version !== BACKUP_FORMAT_VERSION) {
    throw new BackupError(`the archive's format version is ${m.format_version}; this build reads version ${BACKUP_FORMAT_VERSION}: restore it with the version that made it (${m.app_version})`);
  }
  const known = readMigrationFiles({ migrationsFolder });
  for (const [i, migration] of m.database.migrations.entries()) {
    const ours = known[i];
    if (!ours || ours.folderMillis !== migration.created_at || ours.hash !== migration.hash) {
      throw new BackupError(
        `the archive's database schema (migration ${migration.tag ?? migration.created_at}) is not one this build knows: it comes from a newer or different version (${m.app_version})`,
        ["Restore it with that version (or newer), then upgrade."],
      );
    }
  }
  for (const t of m.database.tables) {
    if (!/^[a-z_][a-z0-9_]*$/.test(t.name) || t.file !== `db/${t.name}.copy`) throw new BackupError(`the manifest names an unexpected table: ${t.name}`);
  }
  for (const root of m.storage.roots) {
    if (root.prefix !== DEFAULT_ROOT_PREFIX && !/^roots\/\d+$/.test(root.prefix)) throw new BackupError(`the manifest names an unexpected root: ${root.prefix}`);
  }
  return m;
}

/**
 * Where the objects of a root go: DATA_DIR/uploads for the default root; for a root of its own, its configured
 * directory (resolved as the server resolves it), inside the staging directory when it lies within DATA_DIR,
 * otherwise staged on its own; it must be empty or absent.
 */
async function rootDirectory(root: Manifest["storage"]["roots"][number], dataDir: string, main: Staged, others: Map<string, Staged>) {
  if (root.config_root === null) return join(main.path, "uploads");
  const dir = resolve(root.config_root);
  if (dir === dataDir) throw new BackupError(`a local strategy's root is DATA_DIR itself (${dir}): restore its objects by hand`);
  if (dir.startsWith(dataDir + sep)) return join(main.path, dir.slice(dataDir.length + 1));
  const existing = others.get(dir);
  if (existing) return existing.path;
  await assertEmpty(dir, `the root of local strategies ${root.strategy_ids.join(", ")}`);
  const staged = await stageDirectory(dir);
  others.set(dir, staged);
  return staged.path;
}

/** Every entry the manifests name is there, with its size and sha256, and nothing else is. */
function verify(manifest: Manifest, objects: ObjectList, entries: Map<string, { bytes: number; sha256: string }>) {
  const expected = new Map<string, { bytes: number; sha256: string }>();
  for (const t of manifest.database.tables) expected.set(t.file, t);
  for (const f of manifest.files) expected.set(f.name, f);
  for (const o of objects.objects) expected.set(o.name, o);
  const problems: string[] = [];
  for (const [name, want] of expected) {
    const got = entries.get(name);
    if (!got) problems.push(`${name}: missing`);
    else if (got.bytes !== want.bytes || got.sha256 !== want.sha256) problems.push(`${name}: content differs from the manifest (sha256 ${got.sha256}, expected ${want.sha256})`);
  }
  for (const name of entries.keys()) if (!expected.has(name)) problems.push(`${name}: not in the manifest`);
  if (objects.count !== objects.objects.length || objects.bytes !== objects.objects.reduce((n, o) => n + o.bytes, 0)) {
    problems.push(`${OBJECT_LIST}: its totals disagree with its list`);
  }
  if (problems.length > 0) {
    throw new BackupError(`the archive is damaged: ${problems.length} ${problems.length === 1 ? "entry fails" : "entries fail"} verification; nothing was restored`, problems.slice(0, 20));
  }
}

/** Tables ordered so that each comes after the tables it references (self-references need no order). */
async function foreignKeyOrder(sql: postgres.Sql, tables: TableEntry[]): Promise<TableEntry[]> {
  const edges = await sql<{ from: string; to: string }[]>`
    select c.conrelid::regclass::text as from, c.confrelid::regclass::text as to
    from pg_constraint c join pg_namespace n on n.oid = c.connamespace
    where c.contype = 'f' and n.nspname = 'public'`;
  const unquote = (n: string) => n.replace(/^public\./, "").replace(/^"(.*)"$/, "$1");
  const needs = new Map(tables.map((t) => [t.name, new Set<string>()]));
  for (const e of edges) if (unquote(e.from) !== unquote(e.to)) needs.get(unquote(e.from))?.add(unquote(e.to));
  const ordered: TableEntry[] = [];
  const placed = new Set<string>();
  while (ordered.length < tables.length) {
    const next = tables.filter((t) => !placed.has(t.name) && [...needs.get(t.name)!].every((n) => placed.has(n) || !needs.has(n)));
    if (next.length === 0) throw new BackupError("the tables' foreign keys form a cycle: cannot order the copy");
    for (const t of next) {
      ordered.push(t);
      placed.add(t.name);
    }
  }
  return ordered;
}

/**
 * Brings the new cluster to the archive's schema level, copies every table in (one transaction, foreign keys
 * checked), sets the sequences, deletes the images the backup left out as the service deletes an image, then
 * applies this build's newer migrations. Returns the archive's level when it was older than this build's.
 */
async function loadDatabase(connection: ConnectionOptions, manifest: Manifest, objects: ObjectList, work: string): Promise<string | null> {
  // drizzle's migrator, on a copy of drizzle/ whose journal stops at the archive's level
  const partial = join(work, "migrations");
  await mkdir(join(partial, "meta"), { recursive: true });
  const journal = readJournal();
  const level = manifest.database.migrations.length;
  const entries = journal.entries.slice(0, level);
  for (const e of entries) await copyFile(join(migrationsFolder, `${e.tag}.sql`), join(partial, `${e.tag}.sql`));
  await writeFile(join(partial, "meta/_journal.json"), JSON.stringify({ ...journal, entries }));

  const sql = postgres({ ...connection, max: 1, onnotice: () => {} });
  try {
    await migrate(drizzle(sql, { schema }), { migrationsFolder: partial });
    const applied = await sql<{ hash: string; created_at: string }[]>`select hash, created_at::text as created_at from drizzle.__drizzle_migrations order by created_at, id`;
    if (applied.length !== level || applied.some((a, i) => a.hash !== manifest.database.migrations[i]!.hash)) {
      throw new BackupError("the migrations applied to the new database differ from the archive's");
    }
    const present = (await sql<{ name: string }[]>`select tablename as name from pg_tables where schemaname = 'public' order by 1`).map((r) => r.name);
    const archived = manifest.database.tables.map((t) => t.name).sort();
    if (present.join(",") !== archived.join(",")) {
      throw new BackupError(`the archive's tables (${archived.join(", ")}) are not those of its schema level (${present.join(", ")})`);
    }

    const ordered = await foreignKeyOrder(sql, manifest.database.tables);
    await sql.begin(async (tx) => {
      for (const t of ordered) {
        if (t.rows === 0) continue;
        const sink = await tx.unsafe(`copy public.${quoteIdent(t.name)} (${t.columns.map(quoteIdent).join(", ")}) from stdin`).writable();
        await pipeline(createReadStream(join(work, `${t.name}.copy`)), sink);
      }
      for (const t of ordered) {
        const [{ n }] = await tx.unsafe<{ n: number }[]>(`select count(*)::int as n from public.${quoteIdent(t.name)}`);
        if (n !== t.rows) throw new BackupError(`restoring ${t.name}: ${t.rows} rows in the archive, ${n} in the table`);
      }
      for (const s of manifest.database.sequences) {
        if (!manifest.database.tables.some((t) => t.name === s.table)) continue;
        const [{ max }] = await tx.unsafe<{ max: string | null }[]>(
          `select max(${quoteIdent(s.column)})::text as max from public.${quoteIdent(s.table)}`,
        );
        const value = Math.max(s.last_value ?? 0, Number(max ?? 0));
        if (value > 0) await tx`select setval(pg_get_serial_sequence(${`public.${quoteIdent(s.table)}`}, ${s.column}), ${value}::bigint, true)`;
      }
    });
  } finally {
    await sql.end({ timeout: 5 });
  }

  const database = openPostgres(connection, { max: 1 });
  try {
    if (objects.dropped_images.length > 0) {
      await database.db.transaction(async (tx) => {
        for (const dropped of objects.dropped_images) {
          const [image] = await tx.select().from(schema.images).where(eq(schema.images.id, dropped.id)).for("update");
          if (image) await deleteImageAndRelease(tx, image);
        }
      });
    }
    await database.migrate(); // this build's newer migrations, if the archive is older
  } finally {
    await database.close();
  }
  const known = readMigrationFiles({ migrationsFolder }).length;
  return level < known ? (manifest.database.migrations.at(-1)?.tag ?? String(level)) : null;
}
