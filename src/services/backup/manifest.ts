/** The checks of an archive's manifest and of its entries against it. */
import { readMigrationFiles } from "drizzle-orm/migrator";
import { migrationsFolder } from "../../db/client.ts";
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, BackupError, DEFAULT_ROOT_PREFIX, type Manifest, OBJECT_LIST, type ObjectList } from "./format.ts";

/** The manifest's format and schema level, against this build's. */
export function checkManifest(value: unknown): Manifest {
  const m = value as Manifest;
  if (m?.format !== BACKUP_FORMAT) throw new BackupError(`not a backup of this service (format ${JSON.stringify(m?.format)})`);
  if (m.format_version !== BACKUP_FORMAT_VERSION) {
    throw new BackupError(`the archive's format version is ${m.format_version}; this build reads version ${BACKUP_FORMAT_VERSION}: restore it with the version that made it (${m.app_version})`);
  }
  const known = readMigrationFiles({ migrationsFolder });
  for (const [i, migration] of m.database.migrations.entries()) {
    const ours = known[i];
    if (!ours || ours.folderMillis !== migration.created_at || ours.hash !== migration.hash) {
      throw new BackupError(
        `the archive's database schema (migration ${migration.tag ?? migration.created_at}) is not one this build knows: it comes from a newer or different version (${m.app_version})`,
        ["Restore it with that version (or newer), then upgrade."],
      );
    }
  }
  for (const t of m.database.tables) {
    if (!/^[a-z_][a-z0-9_]*$/.test(t.name) || t.file !== `db/${t.name}.copy`) throw new BackupError(`the manifest names an unexpected table: ${t.name}`);
  }
  for (const root of m.storage.roots) {
    if (root.prefix !== DEFAULT_ROOT_PREFIX && !/^roots\/\d+$/.test(root.prefix)) throw new BackupError(`the manifest names an unexpected root: ${root.prefix}`);
  }
  return m;
}

/** Every entry the manifests name is there, with its size and sha256, and nothing else is. */
export function verify(manifest: Manifest, objects: ObjectList, entries: Map<string, { bytes: number; sha256: string }>) {
  const expected = new Map<string, { bytes: number; sha256: string }>();
  for (const t of manifest.database.tables) expected.set(t.file, t);
  for (const f of manifest.files) expected.set(f.name, f);
  for (const o of objects.objects) expected.set(o.name, o);
  const problems: string[] = [];
  for (const [name, want] of expected) {
    const got = entries.get(name);
    if (!got) problems.push(`${name}: missing`);
    else if (got.bytes !== want.bytes || got.sha256 !== want.sha256) problems.push(`${name}: content differs from the manifest (sha256 ${got.sha256}, expected ${want.sha256})`);
  }
  for (const name of entries.keys()) if (!expected.has(name)) problems.push(`${name}: not in the manifest`);
  if (objects.count !== objects.objects.length || objects.bytes !== objects.objects.reduce((n, o) => n + o.bytes, 0)) {
    problems.push(`${OBJECT_LIST}: its totals disagree with its list`);
  }
  if (problems.length > 0) {
    throw new BackupError(`the archive is damaged: ${problems.length} ${problems.length === 1 ? "entry fails" : "entries fail"} verification; nothing was restored`, problems.slice(0, 20));
  }
}
