import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
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
  driver: "postgres";
  /**
   * Applies drizzle/ migrations; idempotent and safe when several instances start at once. `alsoUnderLock` runs
   * after them under the same advisory lock (PostgreSQL only): the layers above install their own schemas there
   * (the job queue's), which this layer does not know.
   */
  migrate(alsoUnderLock?: (connection: Connection) => Promise<void>): Promise<void>;
  close(): Promise<void>;
  /** How many connections of the pool are open and in use, read from pg_stat_activity (PostgreSQL only). */
  pool?: () => Promise<{ open: number; inUse: number; max: number }>;
  /** The embedded PostgreSQL this process started (openEmbedded). */
  embedded?: { dir: string; created: boolean; startMs: number };
}

export const migrationsFolder = resolve(import.meta.dir, "../../drizzle");
const MIGRATION_LOCK = 7_340_001;

/** A PostgreSQL server: a `postgres://` URL, or postgres.js options (the embedded server's Unix socket). */
export type Connection = string | ConnectionOptions;

let pools = 0;

export function openPostgres(connection: Connection, options: { max?: number; idleTimeoutSeconds?: number } = {}): Database {
  const connect = (extra: postgres.Options<Record<string, never>>) =>
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
 * same DATA_DIR.
 */
export async function openEmbedded(dataDir: string, options: { max?: number; onUnexpectedExit?: EmbeddedOptions["onUnexpectedExit"] } = {}): Promise<Database> {
  mkdirSync(dataDir, { recursive: true });
  const releaseLock = await lockDirectory(dataDir);
  let server: EmbeddedPostgres | undefined;
  try {
    server = await startEmbeddedPostgres(join(dataDir, "postgres"), { onUnexpectedExit: options.onUnexpectedExit });
    const database = openPostgres(server.connection(), { max: options.max ?? EMBEDDED_POOL, idleTimeoutSeconds: EMBEDDED_IDLE_SECONDS });
    const running = server;
    return {
      ...database,
      embedded: { dir: running.dir, created: running.created, startMs: running.startMs },
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
export async function attachEmbedded(dataDir: string): Promise<{ connection: ConnectionOptions; startedHere: boolean; close(): Promise<void> } | null> {
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

/** Directories this process has locked: a lock file naming our own pid may also be a stale one (pid 1 in a container). */
const lockedHere = new Set<string>();

/** DATA_DIR is locked by another live process (a server, or a tool such as `backup create`). */
class DirectoryInUse extends Error {
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
  const content = `${`${process.pid} ${processStartTime(process.pid) ?? ""}`.trim()}\n`;
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
