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
 * Variants are derived data: neither their rows (DERIVED_TABLES) nor their objects are archived, so
 * the archive is as small as the originals make it, and a restored server makes each variant again on its first
 * request (under the same cold budget and decode queue as ever).
 */
import { existsSync } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { attachEmbedded } from "../../db/client.ts";
import { ensureDatabaseId } from "../../db/repositories/database-identity.ts";
import * as schema from "../../db/schema.ts";
import { parseKey, secretBox } from "../../webhooks/secret-box.ts";
import { syncPath } from "../../storage/local.ts";
import { BackupError, type BackupSummary, fsyncDirectory, isGzipName, type Manifest } from "./format.ts";
import { readSnapshot } from "./snapshot.ts";
import { writeArchive } from "./archive.ts";

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
    throw new BackupError(`${dataDir} holds no embedded database (no ${join(dataDir, "postgres")}): nothing to back up`);
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

export function fingerprint(text: string, where: string): string | null {
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
function webhookKeyReport(
  manifest: Manifest,
  environmentKey: string | undefined,
): { state: "archived" | "environment" | "missing" | "none"; warnings: string[] } {
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
