import type { Sql } from "postgres";
import type { Db } from "../db/client.ts";
import { ensureDatabaseId } from "../db/repositories/database-identity.ts";
import { existingRecordIds, findRecordsNaming, findVariantsNaming, listRecordsOn } from "../db/repositories/stored-objects.ts";
import { listStrategies, type Strategy } from "../db/repositories/strategies.ts";
import type { Deps } from "../deps.ts";
import { defaultLogger, type Logger, withLogger } from "../observability/log.ts";
import { recordRun } from "./last-runs.ts";
import type { LocationIdentity, Relation, Storage, StoredObject } from "../storage/index.ts";
import { describeIdentity, relate, translatePath } from "../storage/location.ts";
import { isMarkerPath, MARKER, readMarker, writeMarker, writeUnknownMarker } from "../storage/marker.ts";
import { servicesOf } from "./index.ts";

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
const QUARANTINED = /^\.quarantine\/(\d{4}-\d{2}-\d{2})\/(.+)$/;
const DAY_MS = 86_400_000;

/** Where an orphan found on `at` goes. */
export const quarantinePath = (path: string, at: Date) => `${QUARANTINE_PREFIX}${at.toISOString().slice(0, 10)}/${path}`;

/** Entries kept in each list of a report; the counts are always complete. */
export const REPORT_LIST_LIMIT = 100;
const BATCH = 500;
/** The PostgreSQL advisory lock a run holds (beside db/client.ts's migration lock, 7_340_001). */
export const RECONCILE_LOCK = 7_340_002;

/**
 * The names storeAndRecord gives objects (`YYYY/MM/DD/<random>.<ext>`, `thumbnails/YYYY/MM/DD/<random>.webp`),
 * the variants service its variants (`variants/YYYY/MM/DD/<random>_<width>_<random>.<ext>`) and LocalStorage.put its temporary files (`<object>.<pid>.<uuid>.part`), and readiness probes
 * (`.probe/ready-<uuid>.txt`). Anything else in a storage was not written by this service and is never removed.
 */
const OBJECT_NAME = /^(?:thumbnails\/|variants\/)?\d{4}\/\d{2}\/\d{2}\/[\w-]{16,}\.[a-z0-9]{2,5}$/;
const TEMPORARY_NAME =
  /^(?:(?:thumbnails\/|variants\/)?\d{4}\/\d{2}\/\d{2}\/[\w-]{16,}\.[a-z0-9]{2,5}|\.probe\/ready-[0-9a-f-]{36}\.txt)\.\d+\.[0-9a-f-]{36}\.part$/;
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
  /** Where the location really is (real path, or normalised endpoint, bucket and prefix); absent when unknown. */
  where?: string;
  driver: Strategy["driver"];
  objectsScanned: number;
  /** Younger than the grace period: not judged yet. */
  recentObjects: number;
  /** Named unlike anything this service writes: never removed. */
  unrecognisedObjects: number;
  orphansFound: number;
  /** Moved to the quarantine (see QUARANTINE_DAYS), not deleted. */
  orphansRemoved: number;
  orphans: string[];
  /** Objects found in the quarantine and kept (quarantined less than QUARANTINE_DAYS + 1 days ago). */
  quarantinedObjects: number;
  /** Objects of the quarantine past QUARANTINE_DAYS, deleted by this run. */
  quarantinePurged: number;
  /** Objects a record names that were found in the quarantine and moved back. */
  restoredFromQuarantine: number;
  partsFound: number;
  partsRemoved: number;
  recordsMissingObject: number;
  missingObjects: { key: string; path: string }[];
  errors: string[];
}

export interface ReconcileReport {
  dryRun: boolean;
  /**
   * Why nothing was moved or deleted anywhere although the run was not a dry run: a storage belongs to another
   * database (its marker says so, or its objects do). Each such location's `errors` says which and what to do.
   */
  refused?: string;
  /** Another reconciliation was running (here or on another instance): nothing was scanned. */
  skipped: boolean;
  graceSeconds: number;
  startedAt: Date;
  durationMs: number;
  locations: LocationReport[];
}

interface Location {
  storage: Storage;
  identity: LocationIdentity;
  strategies: Strategy[];
}

/** Another location that sees some of this one's objects, and how it stands to it. */
interface Overlap {
  location: Location;
  relation: Relation;
}

/**
 * Compares every storage location's objects with the records of the strategies stored there. Objects no record
 * names, older than the grace period, are moved to the quarantine (see QUARANTINE_DAYS); abandoned temporary files
 * are removed; records whose object is missing are reported, never deleted.
 *
 * Guarantees. Locations are compared by what they are (storage/location.ts: real path and device/inode, or the
 * normalised endpoint, bucket and prefix), so strategies reaching one place through a symlink, a bind mount or a
 * respelled endpoint are reconciled as one, and nested ones see each other's records. Before an object is moved,
 * no image record of ANY strategy may name it: neither at its path as seen from any related location, nor (a
 * second net that holds even if two locations are related in a way no identity shows, such as a DNS alias) by
 * its name alone (`YYYY/MM/DD/<random>.<ext>` with or without `thumbnails/`: names carry 16+ random characters,
 * so a record elsewhere with the same name is that object seen through an alias). The quarantine, readiness
 * probes and names this service does not write are never orphans. A strategy whose location cannot be known
 * suspends every move and removal of the run.
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
    const all = await listStrategies(deps.db);
    const { locations, broken } = await locate(deps, all);
    report.locations.push(...broken);
    const base: Run = { dryRun: report.dryRun || broken.length > 0, cutoff, now: startedAt, allStrategyIds: all.map((s) => s.id), signal: options.signal };
    const related = (location: Location): Overlap[] =>
      locations
        .map((other) => ({ location: other, relation: other === location ? ({ kind: "same" } as const) : relate(location.identity, other.identity) }))
        .filter((o) => o.relation.kind !== "apart");

    // whose storage each location is: nothing moves anywhere while one of them belongs to another database
    let databaseId: string | null = null;
    let identityError: string | null = null;
    try {
      databaseId = await ensureDatabaseId(deps.db);
    } catch (e) {
      identityError = `this database has no identity and none could be written (${(e as Error).message}), so no storage can be checked against it: nothing was moved or deleted anywhere`;
    }
    const owners = new Map<Location, Ownership | { kind: "error"; error: string }>();
    for (const location of locations) {
      if (options.signal?.aborted) break;
      owners.set(location, identityError ? { kind: "refused", error: identityError } : await ownership(deps, location, related(location), databaseId!, base));
    }
    const refused = [...owners.values()].filter((o) => o.kind === "refused");
    if (refused.length > 0) {
      report.refused = refused.length === 1 ? refused[0]!.error : `${refused.length} storage locations belong to a different database`;
      const log = deps.log ?? defaultLogger();
      for (const [location, o] of owners) {
        if (o.kind !== "refused") continue;
        log.error(
          { job: "reconciler", strategies: location.strategies.map((s) => s.id), location: describeIdentity(location.identity), database: databaseId },
          `Reconciler refused to move anything: ${location.strategies.map((s) => `#${s.id} ${s.name}`).join(", ")}: ${o.error}`,
        );
      }
    }
    if (!report.dryRun) {
      for (const [location, o] of owners) {
        if (o.kind !== "refused" || !o.remember) continue;
        await writeUnknownMarker(location.storage, databaseId!, startedAt).catch((e) => {
          o.error += ` (its ${MARKER} could not be written: ${(e as Error).message})`;
        });
      }
    }
    const run: Run = { ...base, dryRun: base.dryRun || refused.length > 0 };
    for (const location of locations) {
      if (options.signal?.aborted) break;
      const owner = owners.get(location);
      if (!owner) break;
      if (owner.kind === "refused" || owner.kind === "error") {
        report.locations.push({ ...emptyReport(location.strategies), where: describeIdentity(location.identity), errors: [owner.error] });
        continue;
      }
      if (owner.kind === "adopt" && !run.dryRun) {
        try {
          await writeMarker(location.storage, databaseId!);
        } catch (e) {
          report.locations.push({ ...emptyReport(location.strategies), where: describeIdentity(location.identity), errors: [`cannot write ${MARKER}: ${(e as Error).message}`] });
          continue;
        }
      }
      // a location not yet known to be this database's (unmarked, only young unknown objects) is reported, not changed
      const own = owner.kind === "undecided" ? { ...run, dryRun: true } : run;
      report.locations.push(await reconcileLocation(deps, location, related(location), own));
    }
  });
  report.skipped = !ran;
  report.durationMs = deps.clock().getTime() - startedAt.getTime();
  servicesOf(deps).metrics.reconcilerOrphans.inc(report.locations.reduce((n, l) => n + l.orphansFound, 0));
  recordRun(deps, "reconciler", { at: startedAt, durationMs: report.durationMs, ok: report.locations.every((l) => l.errors.length === 0), summary: summarise(report) });
  return report;
}

/** One line for the admin overview. */
function summarise(report: ReconcileReport): string {
  if (report.skipped) return "skipped: another reconciliation was running";
  if (report.refused) return `refused to move anything: ${report.refused}`;
  const sum = (f: (l: LocationReport) => number) => report.locations.reduce((n, l) => n + f(l), 0);
  const orphans = sum((l) => l.orphansFound);
  const words = [
    `${report.locations.length} locations`,
    `${sum((l) => l.objectsScanned)} objects scanned`,
    `${orphans} orphans${report.dryRun ? " found (dry run)" : ` found, ${sum((l) => l.orphansRemoved)} quarantined`}`,
    `${sum((l) => l.recordsMissingObject)} records missing an object`,
  ];
  const errors = sum((l) => l.errors.length);
  if (errors) words.push(`${errors} storage errors`);
  return words.join(", ");
}

/**
 * The strategies grouped by what their location is (not how it is written); a strategy whose configuration builds
 * no storage, or whose location cannot be known (a dangling symlink in a root's path), is reported alone.
 */
async function locate(deps: Deps, strategies: Strategy[]) {
  const locations: Location[] = [];
  const broken: LocationReport[] = [];
  for (const strategy of strategies) {
    let storage: Storage;
    let identity: LocationIdentity;
    try {
      storage = deps.storage.for(strategy);
    } catch (e) {
      const error = `unreadable configuration, so nothing was removed anywhere: ${(e as Error).message}`;
      broken.push({ ...emptyReport([strategy]), errors: [error] });
      continue;
    }
    try {
      identity = await storage.identify();
    } catch (e) {
      const error = `location unknown, so nothing was removed anywhere: ${(e as Error).message}`;
      broken.push({ ...emptyReport([strategy]), errors: [error] });
      continue;
    }
    const same = locations.find((l) => relate(l.identity, identity).kind === "same");
    if (same) same.strategies.push(strategy);
    else locations.push({ storage, identity, strategies: [strategy] });
  }
  return { locations, broken };
}

const emptyReport = (strategies: Strategy[]): LocationReport => ({
  strategies: strategies.map((s) => ({ id: s.id, name: s.name })),
  driver: strategies[0]!.driver,
  objectsScanned: 0,
  recentObjects: 0,
  unrecognisedObjects: 0,
  orphansFound: 0,
  orphansRemoved: 0,
  orphans: [],
  quarantinedObjects: 0,
  quarantinePurged: 0,
  restoredFromQuarantine: 0,
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
  /** Objects modified after this are not judged. */
  cutoff: Date;
  /** The run's clock: names the quarantine's day and ages it. */
  now: Date;
  allStrategyIds: number[];
  signal?: AbortSignal;
}

async function reconcileLocation(deps: Deps, location: Location, overlapping: Overlap[], run: Run): Promise<LocationReport> {
  const { storage } = location;
  const report: LocationReport = { ...emptyReport(location.strategies), where: describeIdentity(location.identity) };
  const listed = new PathSet();
  /** The quarantine's days seen in the listing (a handful: one per day of the last QUARANTINE_DAYS + 1). */
  const quarantineDays = new Set<string>();
  const purgeBefore = run.now.getTime() - (QUARANTINE_DAYS + 1) * DAY_MS;
  const quarantine = async (path: string) => {
    if (run.dryRun) return false;
    try {
      return await storage.move(path, quarantinePath(path, run.now));
    } catch (e) {
      note(report.errors, `quarantine ${path}: ${(e as Error).message}`);
      return false;
    }
  };
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
    const owned = await ownedPaths(deps, batch, overlapping, run.allStrategyIds);
    for (const object of batch) {
      if (owned.has(object.path)) continue;
      report.orphansFound++;
      note(report.orphans, object.path);
      if (await quarantine(object.path)) report.orphansRemoved++;
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
      if (object.path.startsWith(QUARANTINE_PREFIX)) {
        // never an orphan: kept its time, then purged; a name the quarantine does not make is left alone
        const day = QUARANTINED.exec(object.path)?.[1];
        const dayStart = day ? Date.parse(`${day}T00:00:00Z`) : Number.NaN;
        if (Number.isNaN(dayStart)) {
          report.unrecognisedObjects++;
          continue;
        }
        quarantineDays.add(day!);
        if (dayStart < purgeBefore && (await remove(object.path))) report.quarantinePurged++;
        else report.quarantinedObjects++;
        continue;
      }
      if (isMarkerPath(object.path)) continue; // the storage's marker (storage/marker.ts), never an object
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
  await findMissingObjects(deps, location, listed, quarantineDays, report, run);
  return report;
}

/** Whose storage a location is, as far as this database can tell (see `ownership`). */
type Ownership =
  | { kind: "ours" }
  /** No marker, and nothing in it says it is another database's: marked as this database's, then reconciled. */
  | { kind: "adopt" }
  /** No marker, and the only objects no record names are young (uploads in flight?): reported, nothing changed. */
  | { kind: "undecided" }
  /**
   * Another database's, or unknowable: nothing is moved or deleted anywhere in this run. `remember`: an unmarked
   * storage judged by its objects gets the `unknown` marker (unless a dry run), so that the refusal holds when this
   * database's own uploads later outnumber the foreign objects there.
   */
  | { kind: "refused"; error: string; remember?: boolean };

/**
 * Whether the location's objects answer to this database's records (docs/decisions/storage-database-marker.md):
 *  - its marker names this database: yes;
 *  - its marker names another one, or nothing readable: no;
 *  - no marker (a storage from before markers, or never used): the objects decide. Every object named as this
 *    service names them that no record of this database names, once past the grace period, is evidence against it:
 *    when there is none, the storage is this database's (or empty) and is marked; when the database names none of
 *    the storage's objects, or the unknown ones outnumber those it names and some are older than every one it
 *    names, they were not written by it (a DATA_DIR or a bucket pointed at a new database) — refused, never moved,
 *    and the refusal is remembered (the `unknown` marker), so it holds when that database's own uploads later
 *    outnumber them; otherwise they are its own leftovers (what the reconciler exists for), and the storage is
 *    marked as its own;
 *  - its marker says `unknown` (such a refusal): no, until an operator names the database.
 * A storage that cannot be read is an error of its location alone, as a failed listing always was.
 */
async function ownership(deps: Deps, location: Location, overlapping: Overlap[], databaseId: string, run: Run): Promise<Ownership | { kind: "error"; error: string }> {
  const where = describeIdentity(location.identity);
  const claim = `write the line "image-host-database: ${databaseId}" into ${MARKER} at the root of ${where}`;
  let marker;
  try {
    marker = await readMarker(location.storage);
  } catch (e) {
    return { kind: "error", error: `cannot read its ${MARKER} (${(e as Error).message}): nothing was moved or deleted there` };
  }
  if (marker.kind === "names") {
    if (marker.id === databaseId) return { kind: "ours" };
    return {
      kind: "refused",
      error:
        `this storage belongs to a different database: its ${MARKER} names database ${marker.id}, and this server's database is ${databaseId}. ` +
        "Nothing was moved or deleted anywhere. If this database is that one moved or restored without its identity, or its objects are to be this database's " +
        `from now on, ${claim}; otherwise give this strategy a storage of its own (see docs/backups.md).`,
    };
  }
  if (marker.kind === "unknown") {
    return {
      kind: "refused",
      error:
        `its ${MARKER} says its objects belong to an unknown database (a reconciler found objects there that its records did not name): nothing was moved or deleted anywhere. ` +
        `If they are this database's, ${claim}; to serve them from a new database, copy their records into it first (bun run cli database move; see docs/backups.md).`,
    };
  }
  if (marker.kind === "unreadable") {
    return {
      kind: "refused",
      error: `its ${MARKER} names no database (${JSON.stringify(marker.text.slice(0, 80))}): nothing was moved or deleted anywhere. If this storage is this database's, ${claim}.`,
    };
  }

  let named = 0;
  let oldestNamed = Number.POSITIVE_INFINITY;
  let unnamedOld = 0;
  let oldestUnnamed = Number.POSITIVE_INFINITY;
  let unnamedYoung = 0;
  let batch: StoredObject[] = [];
  const judge = async () => {
    const owned = await ownedPaths(deps, batch, overlapping, run.allStrategyIds);
    for (const object of batch) {
      const at = object.modifiedAt.getTime();
      if (owned.has(object.path)) {
        named++;
        oldestNamed = Math.min(oldestNamed, at);
      } else if (object.modifiedAt >= run.cutoff) unnamedYoung++;
      else {
        unnamedOld++;
        oldestUnnamed = Math.min(oldestUnnamed, at);
      }
    }
    batch = [];
  };
  try {
    for await (const object of location.storage.list()) {
      if (run.signal?.aborted) return { kind: "undecided" };
      if (object.temporary || object.path.startsWith(QUARANTINE_PREFIX) || !OBJECT_NAME.test(object.path)) continue;
      batch.push(object);
      if (batch.length >= BATCH) await judge();
    }
    await judge();
  } catch (e) {
    return { kind: "error", error: `cannot list it to learn whose objects it holds (${(e as Error).message}): nothing was moved or deleted there` };
  }
  if (unnamedOld === 0) return unnamedYoung === 0 ? { kind: "adopt" } : { kind: "undecided" };
  const tail =
    "they look like a different database's (the same DATA_DIR or bucket used with a new DATABASE_URL?). Nothing was moved or deleted anywhere. " +
    "To serve them from a new database, copy the records they belong to into it (bun run cli database move; see docs/backups.md); " +
    `if they really are this database's own leftovers, ${claim}.`;
  if (named === 0) {
    return { kind: "refused", remember: true, error: `this storage has no ${MARKER} and holds ${unnamedOld} objects that no record of this database names, and none that one does: ${tail}` };
  }
  if (oldestUnnamed < oldestNamed && unnamedOld > named) {
    return {
      kind: "refused",
      remember: true,
      error:
        `this storage has no ${MARKER} and holds ${unnamedOld} objects that no record of this database names, more than the ${named} it names, some older ` +
        `(from ${new Date(oldestUnnamed).toISOString()}) than every object it names (the oldest from ${new Date(oldestNamed).toISOString()}): ${tail}`,
    };
  }
  return { kind: "adopt" };
}

/**
 * The paths of the batch's objects (all named as this service names objects) that some record names:
 *  - on a strategy of a related location (the same place, or one nested in or around it), at the object's path as
 *    seen from there: an object under a nested location belongs to the records of both;
 *  - on ANY strategy, by the object's name alone (`YYYY/MM/DD/<random>.<ext>`, with or without `thumbnails/`),
 *    whatever its location: a second net for aliases no identity shows.
 */
async function ownedPaths(deps: Deps, batch: StoredObject[], overlapping: Overlap[], allStrategyIds: number[]): Promise<Set<string>> {
  if (batch.length === 0) return new Set();
  const owned = new Set<string>();
  // per related location: the batch's paths as that location sees them, back to the batch's path
  const views = overlapping.map((o) => {
    const back = new Map<string, string>();
    for (const object of batch) {
      const there = translatePath(object.path, o.relation);
      if (there !== null) back.set(there, object.path);
    }
    return { strategyIds: new Set(o.location.strategies.map((s) => s.id)), back };
  });
  const byName = new Map<string, string[]>();
  for (const object of batch) {
    const name = object.path.replace(/^thumbnails\//, "");
    for (const candidate of [name, `thumbnails/${name}`]) byName.set(candidate, [...(byName.get(candidate) ?? []), object.path]);
  }
  const lookups = [
    ...views.map((v) => ({ strategyIds: [...v.strategyIds], paths: [...v.back.keys()] })),
    { strategyIds: allStrategyIds, paths: [...byName.keys()] },
  ];
  for (const record of await findRecordsNaming(deps.db, lookups)) {
    for (const named of [record.path, record.thumbnailPath]) {
      if (named === null) continue;
      for (const v of views) if (v.strategyIds.has(record.strategyId) && v.back.has(named)) owned.add(v.back.get(named)!);
      for (const path of byName.get(named) ?? []) owned.add(path);
    }
  }
  // variants (issue 17 §3) are named by their rows: as seen from a related location, or by their own path anywhere
  const variantLookups = [
    ...views.map((v) => ({ strategyIds: [...v.strategyIds], paths: [...v.back.keys()].filter((p) => p.startsWith("variants/")) })),
    { strategyIds: allStrategyIds, paths: batch.map((o) => o.path).filter((p) => p.startsWith("variants/")) },
  ];
  for (const variant of await findVariantsNaming(deps.db, variantLookups)) {
    for (const v of views) if (v.strategyIds.has(variant.strategyId) && v.back.has(variant.path)) owned.add(v.back.get(variant.path)!);
    if (batch.some((o) => o.path === variant.path)) owned.add(variant.path);
  }
  return owned;
}

/**
 * Records of the location's strategies whose object or thumbnail the listing did not show. Each is confirmed
 * before it is reported: the object may have been stored after the listing passed its name, or the record
 * deleted meanwhile.
 */
async function findMissingObjects(deps: Deps, location: Location, listed: PathSet, quarantineDays: Set<string>, report: LocationReport, run: Run) {
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
      if (await restoreFromQuarantine(location.storage, m.path, quarantineDays, report, run)) continue;
      report.recordsMissingObject++;
      note(report.missingObjects, { key: m.key, path: m.path });
    }
  }
}

/** A recorded object found in the quarantine goes back where its record names it (newest quarantined copy first). */
async function restoreFromQuarantine(storage: Storage, path: string, days: Set<string>, report: LocationReport, run: Run): Promise<boolean> {
  if (run.dryRun) return false;
  for (const day of [...days].sort().reverse()) {
    try {
      if (await storage.move(`${QUARANTINE_PREFIX}${day}/${path}`, path)) {
        report.restoredFromQuarantine++;
        return true;
      }
    } catch (e) {
      note(report.errors, `restore ${path} from the quarantine: ${(e as Error).message}`);
      return false;
    }
  }
  return false;
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
 * in-process check is enough. Were two runs to overlap anyway, quarantining an orphan twice is harmless: moving
 * an absent object is a no-op, and an orphan has no record to disturb.
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
    if (l.orphansFound + l.partsFound + l.recordsMissingObject + l.errors.length + l.quarantinePurged + l.restoredFromQuarantine === 0) continue;
    const strategies = l.strategies.map((s) => `#${s.id} ${s.name}`).join(", ");
    log[l.errors.length || l.recordsMissingObject ? "warn" : "info"](
      {
        strategies: l.strategies.map((s) => s.id),
        location: l.where,
        orphans_found: l.orphansFound,
        orphans_quarantined: l.orphansRemoved,
        quarantined_objects: l.quarantinedObjects,
        quarantine_purged: l.quarantinePurged,
        restored_from_quarantine: l.restoredFromQuarantine,
        parts_found: l.partsFound,
        parts_removed: l.partsRemoved,
        records_missing_object: l.recordsMissingObject,
        errors: l.errors.slice(0, 5),
      },
      `${strategies}: ${l.orphansRemoved}/${l.orphansFound} orphans moved to the quarantine, ${l.partsRemoved}/${l.partsFound} temporary files removed, ` +
        `${l.quarantinePurged} quarantined objects past ${QUARANTINE_DAYS} days purged, ${l.restoredFromQuarantine} restored from the quarantine, ` +
        `${l.recordsMissingObject} records miss their object${l.errors.length ? `, ${l.errors.length} errors` : ""}`,
    );
  }
}
