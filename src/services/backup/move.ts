/**
 * `database move`: from the embedded database to your own PostgreSQL, keeping DATA_DIR. DATA_DIR's embedded database
 * (server stopped) is copied into an empty database at DATABASE_URL the way a restore loads an archive (load.ts:
 * migrations to the source's level, every table by COPY in one transaction, sequences, then this build's newer
 * migrations), variants' rows included — their objects stay where they are. The copy keeps the database's identity,
 * so the storages' markers (storage/marker.ts) name it: the same DATA_DIR, served by the new database, has nothing
 * quarantined. The embedded database then gets a new identity: a server started on it again (by mistake) finds
 * the storage is the moved database's and moves nothing. Only text through COPY: any PostgreSQL from 15 on will
 * do, whatever version the embedded one is (a pg_dump of it would need a pg_dump of its version or newer).
 */
import { randomBytes } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { resolve } from "node:path";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { attachEmbedded } from "../../db/client.ts";
import { ensureDatabaseId, setDatabaseId } from "../../db/repositories/database-identity.ts";
import { listStrategies } from "../../db/repositories/strategies.ts";
import * as schema from "../../db/schema.ts";
import { StorageRegistry } from "../../storage/index.ts";
import { readMarker, writeMarker } from "../../storage/marker.ts";
import { readSnapshot } from "./snapshot.ts";
import { BackupError } from "./format.ts";
import { loadDatabase } from "./load.ts";

export interface MoveOptions {
  dataDir: string;
  /** The PostgreSQL to move to (DATABASE_URL): an empty database. */
  target: string;
}

export interface MoveSummary {
  data_dir: string;
  /** The target as `host:port/database` (never its user or password). */
  target: string;
  tables: number;
  records: number;
  /** The identity the moved database keeps (its storages' markers name it). */
  database_id: string;
  /** Storages that had no marker and were given one naming the moved database. */
  marked: number;
  /** What could not be done and needs a hand (a storage that could not be marked). */
  warnings: string[];
  duration_ms: number;
}

/** The target as `host:port/database`, for messages. */
function describeTarget(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}${u.port ? `:${u.port}` : ""}${u.pathname}`;
  } catch {
    return "DATABASE_URL";
  }
}

export async function moveDatabase(options: MoveOptions): Promise<MoveSummary> {
  const t0 = performance.now();
  const dataDir = resolve(options.dataDir);
  const shown = describeTarget(options.target);

  // the target first: refused before DATA_DIR's database is started
  const target = postgres(options.target, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    const [found] = await target<{ tables: number; drizzle: boolean; queue: boolean }[]>`
      select (select count(*)::int from pg_tables where schemaname = 'public') as tables,
             to_regnamespace('drizzle') is not null as drizzle, to_regnamespace('graphile_worker') is not null as queue`;
    if (found!.tables > 0 || found!.drizzle || found!.queue) {
      throw new BackupError(
        `the database at ${shown} is not empty (${found!.tables} tables in public${found!.drizzle ? ", migrations applied" : ""}): move into an empty database`,
        ["Create one for the image host (createdb -O imghost imghost) and set DATABASE_URL to it."],
      );
    }
  } catch (e) {
    if (e instanceof BackupError) throw e;
    throw new BackupError(`cannot use the database at ${shown}: ${(e as Error).message}`);
  } finally {
    await target.end({ timeout: 5 });
  }

  const attached = await attachEmbedded(dataDir).catch((e: Error) => {
    throw new BackupError(`cannot open the embedded database of ${dataDir}: ${e.message}`);
  });
  if (!attached) throw new BackupError(`${dataDir} holds no embedded database (no ${resolve(dataDir, "postgres")}): nothing to move`);
  if (!attached.startedHere) {
    await attached.close();
    throw new BackupError(`a server is running on ${dataDir}: stop it first (what it changes after the copy would not be moved)`);
  }
  const spool = `${dataDir}.moving-${randomBytes(4).toString("hex")}`;
  const source = postgres({ ...attached.connection, max: 1, onnotice: () => {} });
  try {
    const sourceDb = drizzle(source, { schema });
    const databaseId = await ensureDatabaseId(sourceDb);
    await mkdir(spool, { mode: 0o700 });
    const manifest = await source.begin("isolation level repeatable read read only", (tx) => readSnapshot(tx, dataDir, spool, true, true));

    // every storage of the database names it (a storage from before markers would otherwise be judged by its objects)
    const warnings: string[] = [];
    let marked = 0;
    const registry = new StorageRegistry({ dataDir, baseUrl: "http://localhost" });
    for (const strategy of await listStrategies(sourceDb)) {
      try {
        const storage = registry.for(strategy);
        const marker = await readMarker(storage);
        if (marker.kind === "absent") {
          await writeMarker(storage, databaseId);
          marked++;
        }
      } catch (e) {
        warnings.push(
          `strategy #${strategy.id} ${strategy.name}: its storage could not be marked (${(e as Error).message}); the reconciler judges it by its objects`,
        );
      }
    }

    try {
      await loadDatabase(options.target, manifest, { count: 0, bytes: 0, objects: [], dropped_images: [], s3_images: 0 }, spool, { withDerived: true });
    } catch (e) {
      throw new BackupError(`the copy into ${shown} failed: ${(e as Error).message}`, [
        "Nothing changed in DATA_DIR. Empty that database (dropdb, createdb) before trying again.",
      ]);
    }
    // the embedded database is not the moved one any more: started again, it moves nothing from the storages
    await setDatabaseId(sourceDb, crypto.randomUUID());
    return {
      data_dir: dataDir,
      target: shown,
      tables: manifest.database.tables.length,
      records: manifest.database.tables.reduce((n, t) => n + t.rows, 0),
      database_id: databaseId,
      marked,
      warnings,
      duration_ms: Math.round(performance.now() - t0),
    };
  } catch (e) {
    if (e instanceof BackupError) throw e;
    throw new BackupError(`move failed: ${(e as Error).message}`);
  } finally {
    await rm(spool, { recursive: true, force: true });
    await source.end({ timeout: 5 });
    await attached.close();
  }
}
