/** The checks of an archive's manifest and of its entries against it. */
import { readMigrationFiles } from "drizzle-orm/migrator";
import { z } from "zod";
import { migrationsFolder } from "../../db/client.ts";
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  BackupError,
  DATA_DIR_FILES,
  DEFAULT_ROOT_PREFIX,
  type Manifest,
  OBJECT_LIST,
  type ObjectList,
  READABLE_FORMAT_VERSIONS,
} from "./format.ts";

const count = z.number().int().min(0);
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);
const identifier = z.string().regex(/^[a-z_][a-z0-9_]*$/);
/** A path as an operator may have configured it: text without NUL or other control characters. */
const configuredPath = z
  .string()
  .min(1)
  .max(4096)
  .regex(/^[^\u0000-\u001f]+$/);

/** The manifest's shape: every field the restore reads, typed and bounded (a crafted manifest is refused whole). */
const ManifestShape = z.object({
  format: z.literal(BACKUP_FORMAT),
  format_version: z.number(),
  app_version: z.string().max(100),
  database: z.object({
    migrations: z.array(z.object({ tag: z.string().max(200).nullable(), hash: z.string().max(200), created_at: z.number() })).min(1),
    tables: z.array(z.object({ name: identifier, file: z.string(), columns: z.array(identifier).min(1), rows: count, bytes: count, sha256 })),
    sequences: z.array(z.object({ table: identifier, column: identifier, sequence: z.string().max(300), last_value: z.number().int().nullable() })),
    standalone_sequences: z
      .array(z.object({ sequence: identifier, last_value: z.number().int().nullable() }))
      .max(100)
      .optional(),
    database_id: z
      .string()
      .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      .nullable()
      .optional(),
  }),
  webhooks: z
    .object({
      sealed_with: z.array(z.string().regex(/^[0-9a-f]{8}$/)).max(100),
      key_file: z
        .string()
        .regex(/^[0-9a-f]{8}$/)
        .nullable(),
    })
    .optional(),
  storage: z.object({
    roots: z.array(z.object({ prefix: z.string(), config_root: configuredPath.nullable(), strategy_ids: z.array(count) })),
    s3_strategy_ids: z.array(count),
  }),
  files: z.array(z.object({ name: z.enum(DATA_DIR_FILES), bytes: count, sha256 })).max(DATA_DIR_FILES.length),
});

const ObjectListShape = z.object({
  count,
  bytes: count,
  objects: z.array(z.object({ name: z.string(), bytes: count, sha256 })),
  dropped_images: z.array(z.object({ id: count, key: z.string(), missing: z.array(z.string()) })),
  s3_images: count,
});

const problems = (error: z.ZodError) => error.issues.slice(0, 10).map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);

/** The manifest's shape, format and schema level, against this build's. */
export function checkManifest(value: unknown): Manifest {
  const m = value as Manifest;
  if (m?.format !== BACKUP_FORMAT) throw new BackupError(`not a backup of this service (format ${JSON.stringify(m?.format)})`);
  if (!READABLE_FORMAT_VERSIONS.includes(m.format_version)) {
    throw new BackupError(
      `the archive's format version is ${m.format_version}; this build reads versions ${READABLE_FORMAT_VERSIONS.join(" and ")} (it writes ${BACKUP_FORMAT_VERSION}): restore it with the version that made it (${m.app_version})`,
    );
  }
  const shape = ManifestShape.safeParse(value);
  if (!shape.success) throw new BackupError("the archive's manifest is malformed: nothing was restored", problems(shape.error));
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
  if (new Set(m.files.map((f) => f.name)).size !== m.files.length) throw new BackupError("the manifest names one of DATA_DIR's files twice");
  const names = new Set<string>();
  for (const t of m.database.tables) {
    if (t.file !== `db/${t.name}.copy` || names.has(t.name)) throw new BackupError(`the manifest names an unexpected table: ${t.name}`);
    names.add(t.name);
  }
  const prefixes = new Set<string>();
  for (const root of m.storage.roots) {
    const expected = root.config_root === null ? root.prefix === DEFAULT_ROOT_PREFIX : /^roots\/\d+$/.test(root.prefix);
    if (!expected || prefixes.has(root.prefix)) throw new BackupError(`the manifest names an unexpected root: ${root.prefix}`);
    prefixes.add(root.prefix);
  }
  return m;
}

/** The object list's shape (it comes last in the archive and says which images to drop). */
export function checkObjectList(value: unknown): ObjectList {
  const shape = ObjectListShape.safeParse(value);
  if (!shape.success) throw new BackupError(`the archive's ${OBJECT_LIST} is malformed: nothing was restored`, problems(shape.error));
  return value as ObjectList;
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
    else if (got.bytes !== want.bytes || got.sha256 !== want.sha256)
      problems.push(`${name}: content differs from the manifest (sha256 ${got.sha256}, expected ${want.sha256})`);
  }
  for (const name of entries.keys()) if (!expected.has(name)) problems.push(`${name}: not in the manifest`);
  if (objects.count !== objects.objects.length || objects.bytes !== objects.objects.reduce((n, o) => n + o.bytes, 0)) {
    problems.push(`${OBJECT_LIST}: its totals disagree with its list`);
  }
  if (problems.length > 0) {
    throw new BackupError(
      `the archive is damaged: ${problems.length} ${problems.length === 1 ? "entry fails" : "entries fail"} verification; nothing was restored`,
      problems.slice(0, 20),
    );
  }
}
