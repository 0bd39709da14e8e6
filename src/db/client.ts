import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import * as schema from "./schema.ts";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
/** What a repository function runs on: the pool, or a transaction already open. */
export type Executor = Db | Tx;

export interface Database {
  db: Db;
  driver: "postgres" | "pglite";
  /** Applies drizzle/ migrations; idempotent and safe when several instances start at once. */
  migrate(): Promise<void>;
  close(): Promise<void>;
  /** PGlite only: the whole data directory, to clone a prepared database quickly (tests). */
  dumpDataDir?: () => Promise<Blob>;
}

export const migrationsFolder = resolve(import.meta.dir, "../../drizzle");
const MIGRATION_LOCK = 7_340_001;

export function openPostgres(url: string, options: { max?: number } = {}): Database {
  const client = postgres(url, { max: options.max ?? 10, onnotice: () => {} });
  const db: Db = drizzlePostgres(client, { schema });
  return {
    db,
    driver: "postgres",
    async migrate() {
      // one connection, so the advisory lock and the migration share a session
      const single = postgres(url, { max: 1, onnotice: () => {} });
      try {
        await single`select pg_advisory_lock(${MIGRATION_LOCK})`;
        await migratePostgres(drizzlePostgres(single, { schema }), { migrationsFolder });
      } finally {
        await single.end({ timeout: 5 });
      }
    },
    close: () => client.end({ timeout: 5 }),
  };
}

/**
 * The embedded database. PGlite is a single connection inside this process: two processes opening the
 * same directory would silently lose writes, so a lock file guards the directory.
 */
export async function openPglite(dataDir: string | undefined, options: { loadDataDir?: Blob } = {}): Promise<Database> {
  let releaseLock = () => {};
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true });
    releaseLock = lockDirectory(dataDir);
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

function lockDirectory(dir: string): () => void {
  const lockPath = join(dir, "server.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(lockPath, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      const pid = Number(readFileSync(lockPath, "utf8"));
      if (pid && pid !== process.pid && isAlive(pid)) {
        throw new Error(
          `${resolve(dir)} is in use by process ${pid}. The embedded database allows one server per DATA_DIR; ` +
            "stop it, or set DATABASE_URL to run several instances on PostgreSQL.",
        );
      }
      if (existsSync(lockPath)) rmSync(lockPath, { force: true }); // stale lock of a dead process
    }
  }
  throw new Error(`could not lock ${dir}`);
}

function isAlive(pid: number) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
