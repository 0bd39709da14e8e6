/**
 * `backup create`.
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
 * Variants (issue 17 §3) are derived data: neither their rows (DERIVED_TABLES) nor their objects are archived, so
 * the archive is as small as the originals make it, and a restored server makes each variant again on its first
 * request (under the same cold budget and decode queue as ever).
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream, existsSync } from "node:fs";
import { mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import tar from "tar-stream";
import packageJson from "../../../package.json" with { type: "json" };
import { attachEmbedded } from "../../db/client.ts";
import { ensureDatabaseId, parseDatabaseId, READ_COMMENT } from "../../db/repositories/database-identity.ts";
import * as schema from "../../db/schema.ts";
import { parseKey, secretBox } from "../../webhooks/secret-box.ts";
import { StorageRegistry } from "../../storage/index.ts";
import { LocalStorage, syncPath } from "../../storage/local.ts";
import {
  BACKUP_FORMAT,
  DATA_DIR_FILES,
  DERIVED_TABLES,
  BACKUP_FORMAT_VERSION,
  BackupError,
  type BackupSummary,
  DEFAULT_ROOT_PREFIX,
  fsyncDirectory,
  isGzipName,
  isSafeRelativePath,
  journalEntries,
  MANIFEST,
  type Manifest,
  OBJECT_LIST,
  type ObjectList,
  quoteIdent,
  S3_NOTE,
  sha256Hex,
  type TableEntry,
  WEBHOOK_KEY,
} from "./format.ts";

export interface CreateOptions {
  dataDir: string;
  file: string;
  /** Runs after the snapshot's tables are read, before its objects are copied (tests provoke a concurrent delete there). */
  beforeObjects?: () => Promise<void>;
  /**
   * WEBHOOK_SECRET_KEY as the server reads it, when set: then the server seals with it, not with DATA_DIR's key file,
   * and the summary says that a restore needs it (the archive never holds an environment secret).
   */
  webhookSecretKey?: string;
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
    // the identity the storage's markers name (written now if the database has none yet): the restored one keeps it
    await ensureDatabaseId(drizzle(sql, { schema }));
    const result = await sql.begin("isolation level repeatable read read only", async (tx) => {
      const manifest = await readSnapshot(tx, dataDir, spool, attached.startedHere);
      await options.beforeObjects?.();
      return writeArchive(tx, manifest, { dataDir, spool, temp, gzip });
    });
    await syncPath(temp);
    await rename(temp, file);
    await fsyncDirectory(dirname(file));
    const { manifest, objects } = result;
    const key = webhookKeyReport(manifest, options.webhookSecretKey);
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
      webhook_key: key.state,
      warnings: key.warnings,
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

/**
 * Reads the schema level, the tables (spooled to files: a tar entry needs its size first), the sequences, the
 * database's identity, the webhook keys and the strategies. `withDerived` copies the rows of derived tables too
 * (`database move`, whose copy keeps the variants' objects where they are).
 */
export async function readSnapshot(tx: Tx, dataDir: string, spool: string, startedHere: boolean, withDerived = false): Promise<Manifest> {
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
    // a derived table's entry holds no rows (variants are made again on demand after a restore)
    const derived = DERIVED_TABLES.has(name) && !withDerived;
    const copy = derived
      ? `copy (select ${columns.map(quoteIdent).join(", ")} from public.${quoteIdent(name)} where false) to stdout`
      : `copy public.${quoteIdent(name)} (${columns.map(quoteIdent).join(", ")}) to stdout`;
    const source = await tx.unsafe(copy).readable();
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
    const [{ n }] = derived ? [{ n: 0 }] : await tx.unsafe<{ n: number }[]>(`select count(*)::int as n from public.${quoteIdent(name)}`);
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

  // sequences of no column (webhook_event_seq orders the deliveries of one subject: it must not start again at 1)
  const standalone = await tx<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind = 'S'
      and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype in ('a', 'i'))
    order by 1`;
  const standaloneSequences: NonNullable<Manifest["database"]["standalone_sequences"]> = [];
  for (const { name } of standalone) {
    const [{ v }] = await tx.unsafe<{ v: string | null }[]>(`select case when is_called then last_value::text end as v from public.${quoteIdent(name)}`);
    standaloneSequences.push({ sequence: name, last_value: v === null ? null : Number(v) });
  }
  const [{ comment }] = await tx.unsafe<{ comment: string | null }[]>(READ_COMMENT);
  const [{ endpoints }] = await tx<{ endpoints: boolean }[]>`select to_regclass('public.webhook_endpoints') is not null as endpoints`;
  const sealedWith = endpoints
    ? (await tx<{ id: string }[]>`select distinct split_part(secret_sealed, ':', 2) as id from webhook_endpoints where secret_sealed like 'v1:%' order by 1`).map((r) => r.id)
    : [];

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
  let keyFile: string | null = null;
  for (const name of DATA_DIR_FILES) {
    const path = join(dataDir, name);
    if (!existsSync(path)) continue;
    const bytes = await readFile(path);
    files.push({ name, bytes: bytes.length, sha256: sha256Hex(bytes) });
    if (name === WEBHOOK_KEY) keyFile = fingerprint(bytes.toString("utf8").trim(), path);
  }

  return {
    format: BACKUP_FORMAT,
    format_version: BACKUP_FORMAT_VERSION,
    created_at: new Date().toISOString(),
    app_version: packageJson.version,
    source: { data_dir: dataDir, server_running: !startedHere, postgres_version: version },
    database: { migrations, tables, sequences, standalone_sequences: standaloneSequences, database_id: parseDatabaseId(comment) },
    webhooks: { sealed_with: sealedWith, key_file: keyFile },
    storage: { roots, s3_strategy_ids: s3, note: S3_NOTE },
    files,
  };
}

/** A key's fingerprint as sealed values name it; a file that holds no key has none (the server would refuse it too). */
function fingerprint(text: string, where: string): string | null {
  try {
    return secretBox(parseKey(text, where)).keyId;
  } catch {
    return null;
  }
}

/**
 * Where the key that opens the archived webhook secrets is. The server seals with WEBHOOK_SECRET_KEY when it is set,
 * else with DATA_DIR/webhook-secret-key (archived). An environment secret is never written into the archive: it
 * stays where the operator keeps it, and the summary says a restore needs it.
 */
function webhookKeyReport(manifest: Manifest, environmentKey: string | undefined): { state: "archived" | "environment" | "missing" | "none"; warnings: string[] } {
  const sealed = manifest.webhooks?.sealed_with ?? [];
  if (sealed.length === 0) return { state: "none", warnings: [] };
  const environment = environmentKey ? fingerprint(environmentKey, "WEBHOOK_SECRET_KEY") : null;
  const file = manifest.webhooks?.key_file ?? null;
  const warnings: string[] = [];
  for (const id of sealed) {
    if (id === file) continue;
    warnings.push(
      id === environment
        ? `The webhook secrets are sealed with WEBHOOK_SECRET_KEY (key ${id}), which this archive does not hold: keep that WEBHOOK_SECRET_KEY with the archive, a restored server needs it.`
        : `Some webhook secrets are sealed with key ${id}, which is neither in DATA_DIR nor WEBHOOK_SECRET_KEY: a restored server cannot sign for those endpoints until their secrets are rotated.`,
    );
  }
  const state = warnings.length === 0 ? "archived" : sealed.every((id) => id === file || id === environment) ? "environment" : "missing";
  return { state, warnings };
}

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
  for (const f of manifest.files) {
    const bytes = await readFile(join(o.dataDir, f.name));
    if (sha256Hex(bytes) !== f.sha256) throw new BackupError(`${f.name} changed during the backup: run it again`);
    await guard(addBuffer(pack, { name: f.name, mode: 0o600, mtime: now }, bytes));
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
