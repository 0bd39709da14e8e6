/**
 * Backups of the embedded deployment: DATA_DIR's PostgreSQL and the objects of its local strategies, as one tar
 * archive (gzip when the file name ends in `.gz` or `.tgz`). On DATABASE_URL deployments the pg_dump
 * recipe of docs/backups.md applies instead.
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
 * Archive layout, in this order: `manifest.json` (format, schema level, tables with their columns, row counts and
 * sha256, sequences, strategies' roots), `db/<table>.copy` (COPY text format), `admin-token` and `webhook-secret-key` (when
 * DATA_DIR has them), `uploads/<path>` (objects of strategies using the default root DATA_DIR/uploads), `roots/<n>/<path>`
 * (objects of local strategies with a root of their own), and last `objects.json` (every object's size and
 * sha256, the images left out). Objects of S3 strategies are not in the archive: their records are, and the
 * bucket is backed up with the provider's tools.
 *
 * Atomicity. The archive is written to FILE.tmp, fsynced and renamed. A restore builds everything (database
 * cluster, objects) in a staging directory beside DATA_DIR (`DATA_DIR.restoring-…`), verifies every sha256 and
 * row count, and renames it into place only when complete; any failure removes the staging directory. When
 * DATA_DIR is a mount point (an empty volume), the staging directory is inside it and its entries are renamed
 * into place at the end, the database last.
 */
export { createBackup, type CreateOptions } from "./create.ts";
export {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  BackupError,
  type BackupSummary,
  type Manifest,
  type ObjectList,
  type RestoreSummary,
  type TableEntry,
} from "./format.ts";
export { type MoveOptions, type MoveSummary, moveDatabase } from "./move.ts";
export { type RestoreOptions, restoreBackup } from "./restore.ts";
