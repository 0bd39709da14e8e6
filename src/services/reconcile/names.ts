/** The names the reconciler knows: the quarantine, this service's objects, temporary files and probes. */

/**
 * How old an object without a record must be before it counts as an orphan. An upload writes its objects
 * before its record commits, so a young object without a record may be an upload in flight. From its first
 * object's write to its commit an upload does no more than write the thumbnail and run one short transaction
 * (the body was read and decoded before, under their own deadlines): seconds at worst. An hour is far above
 * that, and above any clock skew between this server and the storage's clock (mtime, S3 LastModified).
 */
export const RECONCILE_GRACE_SECONDS = 3600;

/**
 * Orphans are not deleted: they are moved to `.quarantine/<UTC date>/<path>` on the same storage (a rename on a
 * local root, copy-then-delete on S3), kept there at least QUARANTINE_DAYS days (purged once the clock has passed
 * the quarantine day's start by QUARANTINE_DAYS + 1 days), then deleted by a later run. A mistake is undone by
 * moving the object back (`.quarantine/2026-01-02/2026/01/01/x.png` → `2026/01/01/x.png`); a run that finds a
 * record whose object is missing and sees that object in the quarantine moves it back itself. Temporary files
 * (`*.part`) and readiness probes are deleted outright: no record ever names them.
 */
export const QUARANTINE_PREFIX = ".quarantine/";
export const QUARANTINE_DAYS = 7;
export const QUARANTINED = /^\.quarantine\/(\d{4}-\d{2}-\d{2})\/(.+)$/;
export const DAY_MS = 86_400_000;

/** Where an orphan found on `at` goes. */
export const quarantinePath = (path: string, at: Date) => `${QUARANTINE_PREFIX}${at.toISOString().slice(0, 10)}/${path}`;

/** Entries kept in each list of a report; the counts are always complete. */
export const REPORT_LIST_LIMIT = 100;
export const BATCH = 500;
/** The PostgreSQL advisory lock a run holds (beside db/client.ts's migration lock, 7_340_001). */
export const RECONCILE_LOCK = 7_340_002;

/**
 * The names storeAndRecord gives objects (`YYYY/MM/DD/<random>.<ext>`, `thumbnails/YYYY/MM/DD/<random>.webp`),
 * the variants service its variants (`variants/YYYY/MM/DD/<random>_<width>_<random>.<ext>`) and LocalStorage.put its temporary files (`<object>.<pid>.<uuid>.part`), and readiness probes
 * (`.probe/ready-<uuid>.txt`). Anything else in a storage was not written by this service and is never removed.
 */
export const OBJECT_NAME = /^(?:thumbnails\/|variants\/)?\d{4}\/\d{2}\/\d{2}\/[\w-]{16,}\.[a-z0-9]{2,5}$/;
export const TEMPORARY_NAME =
  /^(?:(?:thumbnails\/|variants\/)?\d{4}\/\d{2}\/\d{2}\/[\w-]{16,}\.[a-z0-9]{2,5}|\.probe\/ready-[0-9a-f-]{36}\.txt)\.\d+\.[0-9a-f-]{36}\.part$/;
/** GET /health/ready's probe objects: removed as soon as written; one left by a failed removal is a temporary file. */
export const PROBE_NAME = /^\.probe\/ready-[0-9a-f-]{36}\.txt$/;

export const readinessProbeName = () => `.probe/ready-${crypto.randomUUID()}.txt`;
