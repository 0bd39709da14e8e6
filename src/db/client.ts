import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import {
  type ConnectionOptions,
  type EmbeddedOptions,
  type EmbeddedPostgres,
  processStartTime,
  processState,
  runningServerConnection,
  startEmbeddedPostgres,
  TAKEOVER_MS,
} from "./embedded/index.ts";
import * as schema from "./schema.ts";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
/** What a repository function runs on: the pool, or a transaction already open. */
export type Executor = Db | Tx;

export interface Database {
  db: Db;
  /** How to reach it (a URL, or the embedded server's socket): the job queue opens its own small pool with it. */
  connection?: Connection;
  driver: "postgres" | "pglite";
  /**
   * Applies drizzle/ migrations; idempotent and safe when several instances start at once. `alsoUnderLock` runs
   * after them under the same advisory lock (PostgreSQL only): the layers above install their own schemas there
   * (the job queue's), which this layer does not know.
   */
  migrate(alsoUnderLock?: (connection: Connection) => Promise<void>): Promise<void>;
  close(): Promise<void>;
  /** PGlite only: the whole data directory, to clone a prepared database quickly. */
  dumpDataDir?: () => Promise<Blob>;
  /** How many connections of the pool are open and in use, read from pg_stat_activity (PostgreSQL only). */
  pool?: () => Promise<{ open: number; inUse: number; max: number }>;
  /** The embedded PostgreSQL this process started (openEmbedded). */
  embedded?: { dir: string; created: boolean; startMs: number; migratedFrom?: string };
}

export const migrationsFolder = resolve(import.meta.dir, "../../drizzle");
const MIGRATION_LOCK = 7_340_001;

/** A PostgreSQL server: a `postgres://` URL, or postgres.js options (the embedded server's Unix socket). */
export type Connection = string | ConnectionOptions;

let pools = 0;

export function openPostgres(connection: Connection, options: { max?: number; idleTimeoutSeconds?: number } = {}): Database {
  const connect = (extra: postgres.Options<{}>) =>
    typeof connection === "string" ? postgres(connection, extra) : postgres({ ...connection, ...extra });
  const max = options.max ?? 10;
  // a name of this pool's own, so that pg_stat_activity tells its connections from other instances'
  const applicationName = `image-host ${hostname().slice(0, 30)}:${process.pid}:${++pools}`;
  const client = connect({ max, idle_timeout: options.idleTimeoutSeconds, onnotice: () => {}, connection: { application_name: applicationName } });
  const db: Db = drizzlePostgres(client, { schema });
  return {
    db,
    driver: "postgres",
    connection,
    async pool() {
      const [row] = await client<{ open: number; active: number }[]>`
        select count(*)::int as open, (count(*) filter (where state <> 'idle'))::int as active
        from pg_stat_activity where application_name = ${applicationName}`;
      return { open: row!.open, inUse: Math.max(0, row!.active - 1), max };
    },
    async migrate(alsoUnderLock) {
      // one connection, so the advisory lock and the migration share a session
      const single = connect({ max: 1, onnotice: () => {} });
      try {
        await single`select pg_advisory_lock(${MIGRATION_LOCK})`;
        await migratePostgres(drizzlePostgres(single, { schema }), { migrationsFolder });
        await alsoUnderLock?.(connection);
      } finally {
        await single.end({ timeout: 5 });
      }
    },
    close: () => client.end({ timeout: 5 }),
  };
}

/**
 * Connections the embedded server's pool keeps at most (each is a PostgreSQL process: 4 serve 16 concurrent
 * clients on two cores as well as 10 do), and how long an idle one stays open: afterwards memory returns to idle.
 */
const EMBEDDED_POOL = 4;
const EMBEDDED_IDLE_SECONDS = 10;

/**
 * The embedded default: a PostgreSQL server started by this process on DATA_DIR/postgres (see embedded/),
 * reached through postgres.js like any other, and stopped by close(). A lock file keeps a second server off the
 * same DATA_DIR. A PGlite database left in DATA_DIR/db by an earlier version is copied in at the first start and
 * then kept, untouched, as DATA_DIR/db.pglite-migrated.
 */
export async function openEmbedded(
  dataDir: string,
  options: { max?: number; onUnexpectedExit?: EmbeddedOptions["onUnexpectedExit"] } = {},
): Promise<Database> {
  mkdirSync(dataDir, { recursive: true });
  const releaseLock = await lockDirectory(dataDir);
  let server: EmbeddedPostgres | undefined;
  try {
    const legacy = join(dataDir, "db");
    const cluster = join(dataDir, "postgres");
    const marker = join(cluster, IMPORTED_MARKER);
    const hasLegacy = existsSync(join(legacy, "PG_VERSION"));
    if (hasLegacy && existsSync(join(cluster, "PG_VERSION")) && !existsSync(marker)) {
      throw new Error(
        `${resolve(legacy)} holds a PGlite database (the embedded database of earlier versions) and ${resolve(cluster)} ` +
          "the embedded PostgreSQL, which was not made from it: move one of them away (the PGlite one is copied in " +
          "when it is alone).",
      );
    }
    server = await startEmbeddedPostgres(cluster, {
      onUnexpectedExit: options.onUnexpectedExit,
      prepare: hasLegacy
        ? async (staging) => {
            await importPglite(legacy, staging.connection());
            writeFileSync(join(staging.dir, IMPORTED_MARKER), `${resolve(legacy)}\n`);
          }
        : undefined,
    });
    // the cluster is moved into place only once the copy is complete; the marker says the PGlite files were copied
    const migratedFrom = hasLegacy ? retirePglite(legacy) : undefined;
    rmSync(marker, { force: true });
    const database = openPostgres(server.connection(), { max: options.max ?? EMBEDDED_POOL, idleTimeoutSeconds: EMBEDDED_IDLE_SECONDS });
    const running = server;
    return {
      ...database,
      embedded: { dir: running.dir, created: running.created, startMs: running.startMs, migratedFrom },
      async close() {
        try {
          await database.close();
        } finally {
          await running.stop();
          releaseLock();
        }
      },
    };
  } catch (e) {
    await server?.stop();
    releaseLock();
    throw e;
  }
}

/**
 * A connection to DATA_DIR's embedded PostgreSQL for a tool that works beside the server (`backup create`): when a
 * live server holds the DATA_DIR lock, that server's own (found through its postmaster.pid); otherwise the cluster
 * is started here for the tool's duration, holding the lock so that no server starts on it meanwhile. Never
 * initialises or converts anything: null when DATA_DIR holds no embedded PostgreSQL cluster.
 */
export async function attachEmbedded(
  dataDir: string,
): Promise<{ connection: ConnectionOptions; startedHere: boolean; close(): Promise<void> } | null> {
  const cluster = join(dataDir, "postgres");
  if (!existsSync(join(cluster, "PG_VERSION"))) return null;
  let releaseLock: () => void;
  try {
    releaseLock = await lockDirectory(dataDir);
  } catch (e) {
    if (!(e instanceof DirectoryInUse)) throw e;
    // a server holds the directory: its PostgreSQL is ready, or about to be (a server that is starting)
    for (const deadline = Date.now() + 30_000; ; ) {
      const connection = runningServerConnection(cluster);
      if (connection) return { connection, startedHere: false, close: async () => {} };
      if (Date.now() > deadline) throw new Error(`${e.message} (its embedded PostgreSQL in ${resolve(cluster)} did not answer within 30 s)`);
      await Bun.sleep(100);
    }
  }
  try {
    const server = await startEmbeddedPostgres(cluster);
    return {
      connection: server.connection(),
      startedHere: true,
      async close() {
        try {
          await server.stop();
        } finally {
          releaseLock();
        }
      },
    };
  } catch (e) {
    releaseLock();
    throw e;
  }
}

/** Left in a cluster made from a PGlite directory until that directory has been moved aside. */
const IMPORTED_MARKER = "imported-from-pglite";

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Copies a PGlite database (an earlier version's DATA_DIR/db) into a fresh embedded cluster: both are brought to
 * this version's schema by the same migrations, then every table of the public schema is copied with COPY (text
 * format: every value exactly as PostgreSQL prints it), row counts are compared and sequences carried over.
 */
async function importPglite(legacyDir: string, target: ConnectionOptions) {
  console.log(`Copying the PGlite database in ${resolve(legacyDir)} into the embedded PostgreSQL (once)…`);
  const t0 = performance.now();
  const lite = await PGlite.create({ dataDir: legacyDir });
  const sql = postgres({ ...target, max: 1, onnotice: () => {} });
  try {
    await migratePglite(drizzlePglite(lite, { schema }), { migrationsFolder });
    await migratePostgres(drizzlePostgres(sql, { schema }), { migrationsFolder });
    await sql`set session_replication_role = replica`; // no foreign-key triggers while tables arrive in any order
    const tables = (
      await lite.query<{ name: string }>(`select tablename as name from pg_tables where schemaname = 'public' order by 1`)
    ).rows;
    let rows = 0;
    for (const { name } of tables) {
      const columns = (
        await lite.query<{ c: string }>(
          `select column_name as c from information_schema.columns
           where table_schema = 'public' and table_name = $1 and is_generated = 'NEVER' order by ordinal_position`,
          [name],
        )
      ).rows
        .map((r) => quote(r.c))
        .join(", ");
      const table = `public.${quote(name)}`;
      const { blob } = await lite.query(`copy ${table} (${columns}) to '/dev/blob'`);
      if (blob && blob.size > 0) {
        const data = new Uint8Array(await blob.arrayBuffer());
        const stream = await sql.unsafe(`copy ${table} (${columns}) from stdin`).writable();
        await new Promise<void>((done, fail) => {
          stream.on("error", fail);
          stream.on("finish", done);
          stream.end(data);
        });
      }
      const [source] = (await lite.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows;
      const [copied] = await sql.unsafe<{ n: number }[]>(`select count(*)::int as n from ${table}`);
      if (source?.n !== copied?.n) throw new Error(`copying ${name}: ${source?.n} rows in PGlite, ${copied?.n} copied`);
      rows += copied!.n;
    }
    const sequences = (
      await lite.query<{ name: string; value: string | number | null }>(
        `select sequencename as name, last_value as value from pg_sequences where schemaname = 'public'`,
      )
    ).rows;
    for (const { name, value } of sequences) {
      if (value !== null) await sql`select setval(${`public.${quote(name)}`}::regclass, ${String(value)}::bigint, true)`;
    }
    console.log(`Copied ${tables.length} tables (${rows} rows) in ${((performance.now() - t0) / 1000).toFixed(1)} s.`);
  } finally {
    await sql.end({ timeout: 5 });
    await lite.close();
  }
}

/** Moves the copied PGlite directory out of the way (kept, untouched, for the user to delete). */
function retirePglite(legacyDir: string): string {
  let kept = `${legacyDir}.pglite-migrated`;
  if (existsSync(kept)) kept = `${kept}-${Date.now()}`;
  renameSync(legacyDir, kept);
  console.log(
    `The PGlite database of an earlier version now lives in the embedded PostgreSQL; its old files are kept in ${resolve(kept)} (delete them when satisfied).`,
  );
  return resolve(kept);
}

/**
 * PGlite, the embedded database of earlier versions (kept to import their data directories, and for
 * benchmarks). PGlite is a single connection inside this process: two processes opening the same directory
 * would silently lose writes, so a lock file guards the directory.
 */
export async function openPglite(dataDir: string | undefined, options: { loadDataDir?: Blob } = {}): Promise<Database> {
  let releaseLock = () => {};
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true });
    releaseLock = await lockDirectory(dataDir);
  }
  try {
    const client = await PGlite.create({ dataDir, loadDataDir: options.loadDataDir });
    const db: Db = drizzlePglite(client, { schema });
    return {
      db,
      driver: "pglite",
      migrate: () => migratePglite(drizzlePglite(client, { schema }), { migrationsFolder }),
      dumpDataDir: async () => (await client.dumpDataDir("none")) as Blob,
      async close() {
        await client.close();
        releaseLock();
      },
    };
  } catch (e) {
    releaseLock();
    throw e;
  }
}

/** Directories this process has locked: a lock file naming our own pid may also be a stale one (pid 1 in a container). */
const lockedHere = new Set<string>();

/** DATA_DIR is locked by another live process (a server, or a tool such as `backup create`). */
export class DirectoryInUse extends Error {
  constructor(
    message: string,
    readonly pid: number,
  ) {
    super(message);
  }
}

/**
 * Takes DATA_DIR's lock file (server.lock: the holder's pid and, on Linux, its start time, so that a reused pid is
 * not taken for the holder). A live holder is refused at once. A holder that is exiting (killed, not yet gone) is
 * waited for, at most TAKEOVER_MS: a start issued right after a SIGKILL takes over once it is gone, as it does
 * from a dead one (gone, or a zombie nobody reaped yet).
 */
async function lockDirectory(dir: string): Promise<() => void> {
  const lockPath = join(dir, "server.lock");
  const inUse = (pid: number, why = "") =>
    new DirectoryInUse(
      `${resolve(dir)} is in use by process ${pid}${why}. The embedded database allows one server per DATA_DIR; ` +
        "stop it, or set DATABASE_URL to run several instances on PostgreSQL.",
      pid,
    );
  if (lockedHere.has(resolve(lockPath))) throw inUse(process.pid);
  const content = `${process.pid} ${processStartTime(process.pid) ?? ""}`.trim() + "\n";
  const deadline = Date.now() + TAKEOVER_MS;
  for (;;) {
    // written whole under a private name, then linked into place: the lock never exists without its content
    const mine = `${lockPath}.${process.pid}`;
    writeFileSync(mine, content, { mode: 0o600 });
    try {
      try {
        linkSync(mine, lockPath);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw e;
        writeFileSync(lockPath, content, { mode: 0o600, flag: "wx" }); // a file system without hard links
      }
      lockedHere.add(resolve(lockPath));
      return () => {
        lockedHere.delete(resolve(lockPath));
        rmSync(lockPath, { force: true });
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    } finally {
      rmSync(mine, { force: true });
    }
    let held: string;
    try {
      held = readFileSync(lockPath, "utf8");
    } catch {
      continue; // removed meanwhile: try again
    }
    const [pidText, startTime] = held.trim().split(/\s+/);
    const pid = Number(pidText);
    // our own pid in a lock we do not hold is a dead process's (pid 1 again in a restarted container)
    const state = pid && pid !== process.pid ? processState(pid, startTime) : "dead";
    if (state === "running") throw inUse(pid);
    if (state === "exiting") {
      if (Date.now() > deadline) throw inUse(pid, ` (still exiting after ${TAKEOVER_MS / 1000} s)`);
      await Bun.sleep(20);
      continue;
    }
    // a dead holder's lock: removed only if it is still the one just read (another start may have taken over)
    try {
      if (readFileSync(lockPath, "utf8") === held) rmSync(lockPath, { force: true });
    } catch {}
  }
}
