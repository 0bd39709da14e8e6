/**
 * `backup restore`.
 *
 * Atomicity. The archive is written to FILE.tmp, fsynced and renamed. A restore builds everything (database
 * cluster, objects) in a staging directory beside DATA_DIR (`DATA_DIR.restoring-…`), verifies every sha256 and
 * row count, and renames it into place only when complete; any failure removes the staging directory. When
 * DATA_DIR is a mount point (an empty volume), the staging directory is inside it and its entries are renamed
 * into place at the end, the database last.
 */
import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { startEmbeddedPostgres } from "../../db/embedded.ts";
import { BackupError, fsyncDirectory, type RestoreSummary } from "./format.ts";
import { extract } from "./extract.ts";
import { loadDatabase } from "./load.ts";
import { verify } from "./manifest.ts";
import { assertEmpty, type Staged, stageDirectory } from "./staging.ts";

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
