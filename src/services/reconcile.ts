import type { Sql } from "postgres";
import type { Db } from "../db/client.ts";
import { existingRecordIds, findRecordsNaming, listRecordsOn } from "../db/repositories/stored-objects.ts";
import { listStrategies, type Strategy } from "../db/repositories/strategies.ts";
import type { Deps } from "../deps.ts";
import { defaultLogger, type Logger, withLogger } from "../observability/log.ts";
import { metricsFor } from "../observability/metrics.ts";
import type { Storage, StoredObject } from "../storage/index.ts";

/**
 * How old an object without a record must be before it counts as an orphan. An upload writes its objects
 * before its record commits, so a young object without a record may be an upload in flight. From its first
 * object's write to its commit an upload does no more than write the thumbnail and run one short transaction
 * (the body was read and decoded before, under their own deadlines): seconds at worst. An hour is far above
 * that, and above any clock skew between this server and the storage's clock (mtime, S3 LastModified).
 */
export const RECONCILE_GRACE_SECONDS = 3600;

/** Entries kept in each list of a report; the counts are always complete. */
export const REPORT_LIST_LIMIT = 100;
const BATCH = 500;
/** The PostgreSQL advisory lock a run holds (beside db/client.ts's migration lock, 7_340_001). */
export const RECONCILE_LOCK = 7_340_002;

/**
 * The names storeAndRecord gives objects (`YYYY/MM/DD/<random>.<ext>`, `thumbnails/YYYY/MM/DD/<random>.webp`)
 * and LocalStorage.put its temporary files (`<object>.<pid>.<uuid>.part`), and readiness probes
 * (`.probe/ready-<uuid>.txt`). Anything else in a storage was not written by this service and is never removed.
 */
const OBJECT_NAME = /^(?:thumbnails\/)?\d{4}\/\d{2}\/\d{2}\/[\w-]{16,}\.[a-z0-9]{2,5}$/;
const TEMPORARY_NAME =
  /^(?:(?:thumbnails\/)?\d{4}\/\d{2}\/\d{2}\/[\w-]{16,}\.[a-z0-9]{2,5}|\.probe\/ready-[0-9a-f-]{36}\.txt)\.\d+\.[0-9a-f-]{36}\.part$/;
/** GET /health/ready's probe objects: removed as soon as written; one left by a failed removal is a temporary file. */
const PROBE_NAME = /^\.probe\/ready-[0-9a-f-]{36}\.txt$/;

export const readinessProbeName = () => `.probe/ready-${crypto.randomUUID()}.txt`;

export interface ReconcileOptions {
  /** Report without removing anything. */
  dryRun?: boolean;
  graceSeconds?: number;
  /** Stops the run between batches (server shutdown); the report then holds what was done. */
  signal?: AbortSignal;
}

/** One storage location and what reconciling it found; strategies sharing a location are reconciled together. */
export interface LocationReport {
  strategies: { id: number; name: string }[];
  driver: Strategy["driver"];
  objectsScanned: number;
  /** Younger than the grace period: not judged yet. */
  recentObjects: number;
  /** Named unlike anything this service writes: never removed. */
  unrecognisedObjects: number;
  orphansFound: number;
  orphansRemoved: number;
  orphans: string[];
  partsFound: number;
  partsRemoved: number;
  recordsMissingObject: number;
  missingObjects: { key: string; path: string }[];
  errors: string[];
}

export interface ReconcileReport {
  dryRun: boolean;
  /** Another reconciliation was running (here or on another instance): nothing was scanned. */
  skipped: boolean;
  graceSeconds: number;
  startedAt: Date;
  durationMs: number;
  locations: LocationReport[];
}

interface Location {
  storage: Storage;
  strategies: Strategy[];
}

/**
 * Compares every storage location's objects with the records of the strategies stored there. Objects no record
 * names, older than the grace period, are removed, and so are abandoned temporary files; records whose object is
 * missing are reported, never deleted.
 */
export async function reconcileStorage(deps: Deps, options: ReconcileOptions = {}): Promise<ReconcileReport> {
  const startedAt = deps.clock();
  const report: ReconcileReport = {
    dryRun: options.dryRun ?? false,
    skipped: false,
    graceSeconds: options.graceSeconds ?? RECONCILE_GRACE_SECONDS,
    startedAt,
    durationMs: 0,
    locations: [],
  };
  const cutoff = new Date(startedAt.getTime() - report.graceSeconds * 1000);
  const ran = await exclusively(deps.db, async () => {
    const { locations, broken } = locate(deps, await listStrategies(deps.db));
    report.locations.push(...broken);
    // a strategy whose location is unknown may share any other's: then nothing is removed
    const run = { dryRun: report.dryRun || broken.length > 0, cutoff, signal: options.signal };
    for (const location of locations) {
      if (options.signal?.aborted) break;
      const overlapping = locations.filter((l) => overlaps(l.storage, location.storage));
      report.locations.push(await reconcileLocation(deps, location, overlapping, run));
    }
  });
  report.skipped = !ran;
  report.durationMs = deps.clock().getTime() - startedAt.getTime();
  metricsFor(deps).reconcilerOrphans.inc(report.locations.reduce((n, l) => n + l.orphansFound, 0));
  return report;
}

/** The strategies grouped by storage location; a strategy whose configuration builds no storage is reported alone. */
function locate(deps: Deps, strategies: Strategy[]) {
  const locations = new Map<string, Location>();
  const broken: LocationReport[] = [];
  for (const strategy of strategies) {
    let storage: Storage;
    try {
      storage = deps.storage.for(strategy);
    } catch (e) {
      const error = `unreadable configuration, so nothing was removed anywhere: ${(e as Error).message}`;
      broken.push({ ...emptyReport([strategy]), errors: [error] });
      continue;
    }
    const id = `${storage.location.space}\0${storage.location.prefix}`;
    const location = locations.get(id) ?? { storage, strategies: [] };
    location.strategies.push(strategy);
    locations.set(id, location);
  }
  return { locations: [...locations.values()], broken };
}

/** Equal or nested locations: an object listed in one may be named by a record of the other. */
const overlaps = (a: Storage, b: Storage) =>
  a.location.space === b.location.space && (a.location.prefix.startsWith(b.location.prefix) || b.location.prefix.startsWith(a.location.prefix));

const emptyReport = (strategies: Strategy[]): LocationReport => ({
  strategies: strategies.map((s) => ({ id: s.id, name: s.name })),
  driver: strategies[0]!.driver,
  objectsScanned: 0,
  recentObjects: 0,
  unrecognisedObjects: 0,
  orphansFound: 0,
  orphansRemoved: 0,
  orphans: [],
  partsFound: 0,
  partsRemoved: 0,
  recordsMissingObject: 0,
  missingObjects: [],
  errors: [],
});

const note = <T>(list: T[], entry: T) => {
  if (list.length < REPORT_LIST_LIMIT) list.push(entry);
};

interface Run {
  dryRun: boolean;
  cutoff: Date;
  signal?: AbortSignal;
}

async function reconcileLocation(deps: Deps, location: Location, overlapping: Location[], run: Run): Promise<LocationReport> {
  const { storage } = location;
  const report = emptyReport(location.strategies);
  const listed = new PathSet();
  const remove = async (path: string) => {
    if (run.dryRun) return false;
    try {
      await storage.delete(path);
      return true;
    } catch (e) {
      note(report.errors, `remove ${path}: ${(e as Error).message}`);
      return false;
    }
  };
  let batch: StoredObject[] = [];
  const judgeBatch = async () => {
    const owned = await ownedKeys(deps, storage, batch, overlapping);
    for (const object of batch) {
      if (owned.has(storage.location.prefix + object.path)) continue;
      report.orphansFound++;
      note(report.orphans, object.path);
      if (await remove(object.path)) report.orphansRemoved++;
    }
    batch = [];
  };

  try {
    for await (const object of storage.list()) {
      if (run.signal?.aborted) return report;
      if (object.temporary) {
        if (object.modifiedAt >= run.cutoff) continue; // a write in progress
        if (!TEMPORARY_NAME.test(object.path)) {
          report.unrecognisedObjects++;
          continue;
        }
        report.partsFound++;
        if (await remove(object.path)) report.partsRemoved++;
        continue;
      }
      if (PROBE_NAME.test(object.path)) {
        if (object.modifiedAt >= run.cutoff) continue; // a probe in progress
        report.partsFound++;
        if (await remove(object.path)) report.partsRemoved++;
        continue;
      }
      report.objectsScanned++;
      listed.add(object.path);
      if (!OBJECT_NAME.test(object.path)) report.unrecognisedObjects++;
      else if (object.modifiedAt >= run.cutoff) report.recentObjects++;
      else batch.push(object);
      if (batch.length >= BATCH) await judgeBatch();
    }
    await judgeBatch();
  } catch (e) {
    // an incomplete listing cannot tell which records miss their object
    note(report.errors, (e as Error).message);
    return report;
  }
  await findMissingObjects(deps, location, listed, report, run);
  return report;
}

/**
 * The full keys (location prefix + path) of the batch's objects that a record names, on any strategy of an
 * overlapping location: an object under a nested location belongs to the records of both.
 */
async function ownedKeys(deps: Deps, storage: Storage, batch: StoredObject[], overlapping: Location[]): Promise<Set<string>> {
  if (batch.length === 0) return new Set();
  const fullKeys = batch.map((o) => storage.location.prefix + o.path);
  const lookups = overlapping.map((l) => {
    const prefix = l.storage.location.prefix;
    return { strategyIds: l.strategies.map((s) => s.id), paths: fullKeys.filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length)) };
  });
  const prefixOf = new Map(overlapping.flatMap((l) => l.strategies.map((s) => [s.id, l.storage.location.prefix] as const)));
  const owned = new Set<string>();
  for (const record of await findRecordsNaming(deps.db, lookups)) {
    const prefix = prefixOf.get(record.strategyId)!;
    owned.add(prefix + record.path);
    if (record.thumbnailPath) owned.add(prefix + record.thumbnailPath);
  }
  return owned;
}

/**
 * Records of the location's strategies whose object or thumbnail the listing did not show. Each is confirmed
 * before it is reported: the object may have been stored after the listing passed its name, or the record
 * deleted meanwhile.
 */
async function findMissingObjects(deps: Deps, location: Location, listed: PathSet, report: LocationReport, run: Run) {
  const strategyIds = location.strategies.map((s) => s.id);
  listed.seal();
  for (let afterId = 0; !run.signal?.aborted; ) {
    const page = await listRecordsOn(deps.db, strategyIds, afterId, 1000);
    if (page.length === 0) return;
    afterId = page.at(-1)!.id;
    const unlisted = page.flatMap((r) =>
      [r.path, r.thumbnailPath].filter((p): p is string => p !== null && !listed.has(p)).map((path) => ({ id: r.id, key: r.key, path })),
    );
    const missing: typeof unlisted = [];
    for (const suspect of unlisted) {
      try {
        if (!(await location.storage.exists(suspect.path))) missing.push(suspect);
      } catch (e) {
        note(report.errors, `check ${suspect.path}: ${(e as Error).message}`);
      }
    }
    const stillRecorded = await existingRecordIds(deps.db, missing.map((m) => m.id));
    for (const m of missing.filter((m) => stillRecorded.has(m.id))) {
      report.recordsMissingObject++;
      note(report.missingObjects, { key: m.key, path: m.path });
    }
  }
}

/**
 * The listed paths as 64-bit hashes, 8 bytes each, so a listing of millions of objects stays small. A collision
 * can only hide one missing object from one report.
 */
class PathSet {
  private hashes = new BigUint64Array(1024);
  private size = 0;

  add(path: string) {
    if (this.size === this.hashes.length) {
      const grown = new BigUint64Array(this.hashes.length * 2);
      grown.set(this.hashes);
      this.hashes = grown;
    }
    this.hashes[this.size++] = Bun.hash.wyhash(path);
  }

  /** Call once, after the last add. */
  seal() {
    this.hashes = this.hashes.subarray(0, this.size).sort();
  }

  has(path: string) {
    const hash = Bun.hash.wyhash(path);
    for (let low = 0, high = this.hashes.length - 1; low <= high; ) {
      const mid = (low + high) >>> 1;
      const value = this.hashes[mid]!;
      if (value === hash) return true;
      if (value < hash) low = mid + 1;
      else high = mid - 1;
    }
    return false;
  }
}

const running = new WeakSet<Db>();
const isPostgresJs = (client: unknown): client is Sql => typeof client === "function" && "reserve" in client;

/**
 * Runs `fn` unless a reconciliation is already running, in this process or on another instance; false when it
 * did not run. Across instances a PostgreSQL session lock decides, held on one reserved connection for the run:
 * it dies with its holder. The embedded database belongs to one process (a lock file guards it), so there the
 * in-process check is enough. Were two runs to overlap anyway, removing an orphan twice is harmless: removing an
 * absent object is not an error, and an orphan has no record to disturb.
 */
async function exclusively(db: Db, fn: () => Promise<void>): Promise<boolean> {
  if (running.has(db)) return false;
  running.add(db);
  try {
    const client: unknown = Reflect.get(db, "$client");
    if (!isPostgresJs(client)) {
      await fn();
      return true;
    }
    const session = await client.reserve();
    try {
      const [row] = await session<{ locked: boolean }[]>`select pg_try_advisory_lock(${RECONCILE_LOCK}) as locked`;
      if (!row?.locked) return false;
      try {
        await fn();
      } finally {
        // a broken session has released its lock with it
        await session`select pg_advisory_unlock(${RECONCILE_LOCK})`.catch(() => {});
      }
      return true;
    } finally {
      session.release();
    }
  } finally {
    running.delete(db);
  }
}

/** Runs at start (in the background) and then every `intervalMs`; stop() ends a run in progress between batches. */
export function startReconciler(deps: Deps, intervalMs: number) {
  const abort = new AbortController();
  let current: Promise<void> | null = null;
  const log = (deps.log ?? defaultLogger()).child({ job: "reconciler" });
  const run = () => {
    current ??= withLogger(log, () => reconcileStorage(deps, { signal: abort.signal }))
      .then(
        (report) => logReport(log, report),
        (e) => log.error({ err: e }, "reconcile failed"),
      )
      .finally(() => {
        current = null;
      });
  };
  run();
  const timer = setInterval(run, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      abort.abort();
      await current;
    },
  };
}

function logReport(log: Logger, report: ReconcileReport) {
  for (const l of report.locations) {
    if (l.orphansFound + l.partsFound + l.recordsMissingObject + l.errors.length === 0) continue;
    const strategies = l.strategies.map((s) => `#${s.id} ${s.name}`).join(", ");
    log[l.errors.length || l.recordsMissingObject ? "warn" : "info"](
      {
        strategies: l.strategies.map((s) => s.id),
        orphans_found: l.orphansFound,
        orphans_removed: l.orphansRemoved,
        parts_found: l.partsFound,
        parts_removed: l.partsRemoved,
        records_missing_object: l.recordsMissingObject,
        errors: l.errors.slice(0, 5),
      },
      `${strategies}: ${l.orphansRemoved}/${l.orphansFound} orphans and ${l.partsRemoved}/${l.partsFound} temporary files removed, ` +
        `${l.recordsMissingObject} records miss their object${l.errors.length ? `, ${l.errors.length} errors` : ""}`,
    );
  }
}
