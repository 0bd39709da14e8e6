/** Reconciling one storage location: orphans to the quarantine, temporary files removed, missing objects found. */
import { existingRecordIds, listRecordsOn } from "../../db/repositories/stored-objects.ts";
import type { Deps } from "../../deps.ts";
import type { Storage, StoredObject } from "../../storage/index.ts";
import { describeIdentity } from "../../storage/location.ts";
import { isMarkerPath } from "../../storage/marker.ts";
import { BATCH, DAY_MS, OBJECT_NAME, PROBE_NAME, QUARANTINE_DAYS, QUARANTINE_PREFIX, QUARANTINED, quarantinePath, TEMPORARY_NAME } from "./names.ts";
import { emptyReport, type Location, type LocationReport, note, type Overlap, type Run } from "./report.ts";
import { ownedPaths } from "./ownership.ts";

export async function reconcileLocation(deps: Deps, location: Location, overlapping: Overlap[], run: Run): Promise<LocationReport> {
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
    const stillRecorded = await existingRecordIds(
      deps.db,
      missing.map((m) => m.id),
    );
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
