import type { Deps } from "../deps.ts";
import type { Tx } from "../db/client.ts";
import {
  anyRemovalDue,
  deleteRemovals,
  extendRemovals,
  type LockedRemoval,
  lockRemovals,
  pathsNamedByRecords,
  postponeRemoval,
  queueRemovalsLazily,
} from "../db/repositories/stored-objects.ts";
import type { Storage } from "../storage/index.ts";
import { defaultLogger, logFor, withLogger } from "../observability/log.ts";
import { LEASE_SECONDS } from "./limits.ts";

/**
 * Pending removals (the `pending_removals` table): how objects leave a storage without a crash ever leaving a
 * record without its object, or an object without a record for longer than seconds.
 *
 * - A delete (API, user center, expiry sweep) deletes the record, releases its charges and queues its objects, due
 *   at once, in ONE transaction; after the commit it removes the objects itself (finishRemovals) before answering.
 * - An upload queues its planned paths, due when its lease lapses (LEASE_SECONDS, renewed while it lives), BEFORE
 *   writing any object; the transaction that records the image deletes those rows (record_leased_upload).
 * - Every instance runs a small worker (startRemovals) that takes due rows with FOR UPDATE SKIP LOCKED, removes the
 *   objects and deletes the rows; a storage failure postpones the row by min(2^attempts, 300) s. It runs at start,
 *   so a restarted instance finishes what it (or anyone) left.
 *
 * Failures, step by step:
 * - Delete, before its commit (process, database): nothing happened; the image is listed and served as before.
 * - Delete, after its commit, before the objects are removed (process killed, database gone, storage refusing):
 *   the image is gone from the listing and the account's charge is released; the row is due at once, so any live
 *   instance's worker removes the objects within about a second (backoff while the storage refuses). An instance
 *   that has never served the image answers 404 at once (no record); one that kept the record's facts serves the
 *   file until it is removed — that window is the worker's delay, seconds.
 * - Worker, killed mid-removal: its transaction aborts with its connection, the rows are due again at once, and
 *   another worker redoes them; removing an absent object is not an error.
 * - Upload, killed before its rows are queued: nothing was written. After: its objects (and the write's temporary
 *   `.part` file) are removed by a worker once the lease lapses, within LEASE_SECONDS + a poll.
 * - Upload, storage or record step failing (refusal, database error): the upload removes its objects itself, but
 *   only those whose rows still exist — an error after a commit that did happen has deleted the rows with it, so a
 *   recorded image's objects are never removed. When that cleanup fails too, the rows lapse to the workers.
 * - Upload frozen past its lease (renewals failing): a worker may take its rows and remove its objects; the record
 *   step then finds fewer rows than it planned (IHLSE) and records nothing: the upload fails, nothing is charged.
 * - Before removing, a worker checks that no image record names the path (on any strategy, as paths are unique):
 *   if one does (which the invariants above exclude), it drops the row and keeps the object, loudly.
 */

/** How often each instance's worker looks for due removals. */
const REMOVAL_POLL_MS = 1_000;
/** Rows one worker transaction takes. */
const BATCH = 50;
/** The longest wait between two tries of a removal the storage keeps refusing. */
const MAX_RETRY_SECONDS = 300;
/** The wait after the (attempts + 1)-th failure: 1 s, 2 s, 4 s … 300 s. */
export const retryDelaySeconds = (attempts: number) => Math.min(2 ** attempts, MAX_RETRY_SECONDS);

interface RemovalOutcome {
  removed: number;
  failed: number;
}

/**
 * Removes the locked rows' objects and deletes the rows of those removed; a failure postpones its row. `sweepTemporaries`:
 * for an upload's rows taken from a dead holder, also the temporary files of its writes (`<path>.<pid>.<uuid>.part`).
 */
async function removeLocked(deps: Deps, tx: Tx, locked: LockedRemoval[], sweepTemporaries: boolean): Promise<RemovalOutcome> {
  const outcome = { removed: 0, failed: 0 };
  if (locked.length === 0) return outcome;
  const named = await pathsNamedByRecords(
    tx,
    locked.map((l) => l.removal.path),
  );
  const done: number[] = [];
  for (const { removal, strategy } of locked) {
    if (named.has(removal.path)) {
      logFor(deps).error(
        { path: removal.path, strategy_id: strategy.id, reason: removal.reason },
        "pending removal: an image record names this object; the object is kept and the removal dropped",
      );
      done.push(removal.id);
      continue;
    }
    try {
      const storage = deps.storage.for(strategy);
      await storage.delete(removal.path);
      if (sweepTemporaries && removal.reason === "upload") await removeTemporaries(storage, removal.path);
      done.push(removal.id);
      outcome.removed++;
    } catch (e) {
      outcome.failed++;
      const wait = retryDelaySeconds(removal.attempts);
      logFor(deps).error(
        { err: e, path: removal.path, strategy_id: strategy.id, attempts: removal.attempts + 1, retry_in_seconds: wait },
        "pending removal: the storage failed; retrying later",
      );
      await postponeRemoval(tx, removal.id, wait, (e as Error).message ?? String(e));
    }
  }
  await deleteRemovals(tx, done);
  return outcome;
}

/** A dead write's temporary files beside the object (LocalStorage.put's `<path>.<pid>.<uuid>.part`). */
async function removeTemporaries(storage: Storage, path: string) {
  for await (const object of storage.list(`${path}.`)) {
    if (object.temporary && object.path.startsWith(`${path}.`)) await storage.delete(object.path);
  }
}

/**
 * Finishes the removals `ids` now, after the commit that queued them: waits for a worker that holds one of them (so
 * when this returns, each object is removed, or its row postponed after a storage failure). Never throws: false when
 * something is left for the workers (logged).
 */
export async function finishRemovals(deps: Deps, ids: number[]): Promise<boolean> {
  if (ids.length === 0) return true;
  try {
    const outcome = await deps.db.transaction(async (tx) => removeLocked(deps, tx, await lockRemovals(tx, { ids }), false));
    return outcome.failed === 0;
  } catch (e) {
    logFor(deps).error({ err: e, removals: ids.length }, "pending removal: could not finish now; left to the removal workers");
    return false;
  }
}

/** One pass of a worker: due removals, a batch per transaction, until none is due (or `maxBatches`). */
export async function runDueRemovals(deps: Deps, maxBatches = 20): Promise<RemovalOutcome> {
  const total = { removed: 0, failed: 0 };
  for (let batch = 0; batch < maxBatches; batch++) {
    if (!(await anyRemovalDue(deps.db))) break;
    const outcome = await deps.db.transaction(async (tx) => {
      const locked = await lockRemovals(tx, { due: true, limit: BATCH });
      return locked.length === 0 ? null : removeLocked(deps, tx, locked, true);
    });
    if (!outcome) break; // the due rows are all held by other workers
    total.removed += outcome.removed;
    total.failed += outcome.failed;
  }
  if (total.removed > 0) logFor(deps).info({ removed: total.removed }, `removed ${total.removed} objects of deleted images or dead uploads`);
  return total;
}

/** The worker every instance runs: a pass at start (what a crash left), then every `intervalMs`; passes never overlap. */
export function startRemovals(deps: Deps, intervalMs = REMOVAL_POLL_MS) {
  const log = (deps.log ?? defaultLogger()).child({ job: "removals" });
  let running: Promise<unknown> | null = null;
  const pass = () => {
    running ??= withLogger(log, () => runDueRemovals(deps))
      .catch((e) => log.error({ err: e }, "pending removals: the pass failed; retrying at the next"))
      .finally(() => {
        running = null;
      });
  };
  pass();
  const timer = setInterval(pass, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

/** An upload's planned objects, held as pending removals under its lease. */
interface UploadObjectsLease {
  ids: number[];
  /** Stops renewing (the upload is over, recorded or not). */
  stop(): void;
  /** The upload failed: removes its objects now, those whose rows still exist; otherwise they lapse to the workers. */
  giveUp(): Promise<void>;
}

/**
 * Queues `paths` on the strategy as an upload's pending removals, due when its lease lapses (LEASE_SECONDS, the
 * upload slot's lease), and renews them while the upload lives. Call before writing the first object.
 */
export async function leaseUploadObjects(deps: Deps, strategyId: number, paths: string[]): Promise<UploadObjectsLease> {
  const ids = await queueRemovalsLazily(deps.db, strategyId, paths, "upload", LEASE_SECONDS);
  // a missed renewal only shortens the lease: the record step then finds its rows gone and records nothing
  const renewal = setInterval(() => void extendRemovals(deps.db, ids, LEASE_SECONDS).catch(() => {}), (LEASE_SECONDS * 1000) / 3);
  const stop = () => clearInterval(renewal);
  return {
    ids,
    stop,
    async giveUp() {
      stop();
      await finishRemovals(deps, ids);
    },
  };
}
