/**
 * The reconciler: every storage location compared with the records of the strategies stored there (this file: the
 * run, its lock and its schedule; location.ts: one location; ownership.ts: whose storage it is; names.ts: what the
 * service writes; report.ts: what a run reports).
 */
import type { Sql } from "postgres";
import type { Db } from "../../db/client.ts";
import { ensureDatabaseId } from "../../db/repositories/database-identity.ts";
import { listStrategies, type Strategy } from "../../db/repositories/strategies.ts";
import type { Deps } from "../../deps.ts";
import { defaultLogger, withLogger } from "../../observability/log.ts";
import { recordRun } from "../last-runs.ts";
import type { LocationIdentity, Storage } from "../../storage/index.ts";
import { describeIdentity, relate } from "../../storage/location.ts";
import { MARKER, writeMarker, writeUnknownMarker } from "../../storage/marker.ts";
import { servicesOf } from "../index.ts";
import { RECONCILE_GRACE_SECONDS, RECONCILE_LOCK } from "./names.ts";
import {
  emptyReport,
  type Location,
  type LocationReport,
  logReport,
  type Overlap,
  type ReconcileOptions,
  type ReconcileReport,
  type Run,
  summarise,
} from "./report.ts";
import { type Ownership, ownership } from "./ownership.ts";
import { reconcileLocation } from "./location.ts";

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
          report.locations.push({
            ...emptyReport(location.strategies),
            where: describeIdentity(location.identity),
            errors: [`cannot write ${MARKER}: ${(e as Error).message}`],
          });
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
  recordRun(deps, "reconciler", {
    at: startedAt,
    durationMs: report.durationMs,
    ok: report.locations.every((l) => l.errors.length === 0),
    summary: summarise(report),
  });
  return report;
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

export { QUARANTINE_DAYS, QUARANTINE_PREFIX, quarantinePath, readinessProbeName, RECONCILE_GRACE_SECONDS, RECONCILE_LOCK, REPORT_LIST_LIMIT } from "./names.ts";
export type { LocationReport, ReconcileOptions, ReconcileReport } from "./report.ts";
