/**
 * `import lsky`: brings a Lsky Pro 2.x site in (services/import/lsky/run.ts does the work). It works on the
 * databases and files directly, beside a running server or a stopped one: Lsky's database is read through Bun's
 * built-in SQL client (source.ts), ours is the server's own — DATABASE_URL, or DATA_DIR's embedded PostgreSQL (the
 * running server's, or started here for the import's duration) — brought to this build's migrations first, as a
 * server's start does. See docs/decisions/lsky-import.md.
 */
import { resolve } from "node:path";
import { attachEmbedded, type Database, openEmbedded, openPostgres } from "../../../db/client.ts";
import { seedDatabase } from "../../../db/seed.ts";
import { StorageRegistry } from "../../../storage/index.ts";
import { installQueue } from "../../../webhooks/queue.ts";
import { type ImportOptions, type ImportReport, runImport } from "./run.ts";
import { isTimeZone, LskySource, SourceError } from "./source.ts";

export type { ImportReport, Progress, Refusal } from "./run.ts";
export { SourceError as LskyImportError } from "./source.ts";

export interface LskyImportRequest extends ImportOptions {
  /** The Lsky Pro database: mysql://…, postgres://… or sqlite:///path. */
  database: string;
  /** Ours: DATABASE_URL, or the embedded database in DATA_DIR. */
  databaseUrl?: string;
  dataDir: string;
  baseUrl: string;
}

/** Ours, as the server opens it (without starting the server): migrated to this build and seeded. */
async function openOurs(request: LskyImportRequest): Promise<Database> {
  let database: Database;
  if (request.databaseUrl) database = openPostgres(request.databaseUrl, { max: 2 });
  else {
    const attached = await attachEmbedded(request.dataDir);
    if (attached) {
      const opened = openPostgres(attached.connection, { max: 2 });
      database = {
        ...opened,
        async close() {
          try {
            await opened.close();
          } finally {
            await attached.close();
          }
        },
      };
    } else database = await openEmbedded(request.dataDir, { max: 2 });
  }
  try {
    await database.migrate(installQueue);
    await seedDatabase(database.db);
  } catch (e) {
    await database.close();
    throw new SourceError(`cannot prepare this server's database: ${(e as Error).message}`);
  }
  return database;
}

export async function importFromLsky(request: LskyImportRequest): Promise<ImportReport> {
  if (!isTimeZone(request.timeZone))
    throw new SourceError(`--timezone: ${JSON.stringify(request.timeZone)} is not a time zone (Asia/Shanghai, UTC, Europe/Berlin…)`);
  const source = await LskySource.open(request.database);
  try {
    const ours = await openOurs(request);
    try {
      const storage = new StorageRegistry({ dataDir: resolve(request.dataDir), baseUrl: request.baseUrl });
      return await runImport(source, { db: ours.db, storage, baseUrl: request.baseUrl, clock: () => new Date() }, request);
    } finally {
      await ours.close();
    }
  } finally {
    await source.close();
  }
}
