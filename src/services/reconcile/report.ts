/** What a reconciliation reports, per location and in all, and how it is summarised and logged. */
import type { Strategy } from "../../db/repositories/strategies.ts";
import type { Logger } from "../../observability/log.ts";
import type { LocationIdentity, Relation, Storage } from "../../storage/index.ts";
import { QUARANTINE_DAYS, REPORT_LIST_LIMIT } from "./names.ts";

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

export interface Location {
  storage: Storage;
  identity: LocationIdentity;
  strategies: Strategy[];
}

/** Another location that sees some of this one's objects, and how it stands to it. */
export interface Overlap {
  location: Location;
  relation: Relation;
}

/** One line for the admin overview. */
export function summarise(report: ReconcileReport): string {
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

export const emptyReport = (strategies: Strategy[]): LocationReport => ({
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

export const note = <T>(list: T[], entry: T) => {
  if (list.length < REPORT_LIST_LIMIT) list.push(entry);
};

export interface Run {
  dryRun: boolean;
  /** Objects modified after this are not judged. */
  cutoff: Date;
  /** The run's clock: names the quarantine's day and ages it. */
  now: Date;
  allStrategyIds: number[];
  signal?: AbortSignal;
}

export function logReport(log: Logger, report: ReconcileReport) {
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
