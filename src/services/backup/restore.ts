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
import { startEmbeddedPostgres } from "../../db/embedded/index.ts";
import { LocationError, realLocation } from "../../storage/location.ts";
import { parseKey, secretBox } from "../../webhooks/secret-box.ts";
import { BackupError, DERIVED_TABLES, fsyncDirectory, type Manifest, type RestoreSummary } from "./format.ts";
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
  /** WEBHOOK_SECRET_KEY as the restored server will read it: it then seals and opens with it, not with the archived key file. */
  webhookSecretKey?: string;
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
    const { manifest, objects, entries, directories } = await extractArchive(file, inspected, (_name, entry) => {
      if (entry.kind === "table") return { target: join(work, `${entry.table}.copy`), mode: 0o600 };
      if (entry.kind === "file") return { target: join(main.path, entry.name), mode: 0o600 };
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
      warnings: webhookKeyWarnings(manifest, options.webhookSecretKey),
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

/**
 * Whether the restored server can open the archived webhook secrets: it will use WEBHOOK_SECRET_KEY when set, else the
 * restored DATA_DIR/webhook-secret-key. A mismatch is said, not refused: nothing is lost (the key file is restored
 * either way, and the server reads the environment when it starts), and the remedy is a variable to set or unset.
 */
function webhookKeyWarnings(manifest: Manifest, environmentKey: string | undefined): string[] {
  const sealed = manifest.webhooks?.sealed_with ?? [];
  if (sealed.length === 0) return [];
  const file = manifest.webhooks?.key_file ?? null;
  let environment: string | null = null;
  if (environmentKey) {
    try {
      environment = secretBox(parseKey(environmentKey, "WEBHOOK_SECRET_KEY")).keyId;
    } catch {}
  }
  const used = environmentKey ? environment : file;
  const warnings: string[] = [];
  for (const id of sealed) {
    if (id === used) continue;
    if (id === file) {
      warnings.push(
        `The webhook secrets are sealed with key ${id}, restored in DATA_DIR/webhook-secret-key, but WEBHOOK_SECRET_KEY is set (key ${environment ?? "unreadable"}) and a server uses it first: ` +
          "start the server without WEBHOOK_SECRET_KEY (or with the key of the site that was backed up), or every delivery fails.",
      );
    } else {
      warnings.push(
        `Webhook secrets are sealed with key ${id}, which the archive does not hold (the site set WEBHOOK_SECRET_KEY): ` +
          "start the server with that site's WEBHOOK_SECRET_KEY, or rotate each endpoint's secret.",
      );
    }
  }
  return warnings;
}
