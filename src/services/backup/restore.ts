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
import { LocationError, realLocation } from "../../storage/location.ts";
import { ADMIN_TOKEN, BackupError, DERIVED_TABLES, fsyncDirectory, type RestoreSummary } from "./format.ts";
import { extractArchive, inspectArchive } from "./extract.ts";
import { loadDatabase } from "./load.ts";
import { verify } from "./manifest.ts";
import { planRoots } from "./roots.ts";
import { assertEmpty, type Staged, stageDirectory } from "./staging.ts";

export interface RestoreOptions {
  dataDir: string;
  file: string;
  /** Directories outside DATA_DIR the operator confirms the archive's local roots may be restored to (roots.ts). */
  allowRoots?: string[];
}

/**
 * Restores an archive into an empty or absent DATA_DIR. First, writing nothing: reads the whole archive, checking
 * the manifest and every entry's name and sha256, and checks every root the manifest names against the rule of
 * roots.ts (under DATA_DIR or a confirmed --allow-root, never the database directory); any refusal ends the
 * restore there. Then makes a new cluster at the archive's schema level, copies the rows in, removes the images
 * the backup left out, applies this build's newer migrations and writes the objects (reading the archive again
 * and verifying it again). Built in staging directories and moved into place only when complete: a failure leaves
 * DATA_DIR and the roots as they were.
 */
export async function restoreBackup(options: RestoreOptions): Promise<RestoreSummary> {
  const t0 = performance.now();
  const dataDir = resolve(options.dataDir);
  const file = resolve(options.file);
  if (!existsSync(file)) throw new BackupError(`${file} does not exist`);
  let dataReal: string;
  try {
    dataReal = (await realLocation(dataDir)).real;
  } catch (e) {
    if (e instanceof LocationError) throw new BackupError(`DATA_DIR ${e.message}`);
    throw e;
  }
  await assertEmpty(dataReal, "DATA_DIR");

  // nothing is written before this point
  const inspected = await inspectArchive(file);
  verify(inspected.manifest, inspected.objects, inspected.entries);
  const plan = await planRoots(inspected.manifest, dataReal, options.allowRoots ?? []);
  for (const dir of plan.outside) await assertEmpty(dir, "the root of local strategies");

  const main = await stageDirectory(dataReal);
  const others = new Map<string, Staged>(); // roots outside DATA_DIR, by real path
  const work = join(main.path, ".restore");
  let server: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  try {
    for (const dir of plan.outside) others.set(dir, await stageDirectory(dir, { inside: true }));
    await mkdir(work, { recursive: true, mode: 0o700 });
    const { manifest, objects, entries, directories } = await extractArchive(file, inspected, (name, entry) => {
      if (entry.kind === "table") return { target: join(work, `${entry.table}.copy`), mode: 0o600 };
      if (entry.kind === "admin-token") return { target: join(main.path, ADMIN_TOKEN), mode: 0o600 };
      const root = plan.roots.get(entry.prefix)!;
      const base = root.base === null ? main.path : others.get(root.base)!.path;
      return { target: join(base, root.relative, ...entry.path.split("/")), mode: 0o644 };
    });
    verify(manifest, objects, entries);

    server = await startEmbeddedPostgres(join(main.path, "postgres"));
    const migratedFrom = await loadDatabase(server.connection(), manifest, objects, work);
    await server.stop();
    server = undefined;

    await rm(work, { recursive: true, force: true });
    for (const dir of directories) if (!dir.startsWith(work)) await fsyncDirectory(dir);
    for (const staged of others.values()) await staged.commit();
    await main.commit();
    return {
      file,
      data_dir: dataDir,
      tables: manifest.database.tables.length,
      records: manifest.database.tables.reduce((n, t) => n + (DERIVED_TABLES.has(t.name) ? 0 : t.rows), 0) - objects.dropped_images.length,
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
