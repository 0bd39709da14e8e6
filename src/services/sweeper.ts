import type { Deps } from "../deps.ts";
import { lockNextExpiredImage } from "../db/repositories/images.ts";
import { removeImage } from "./delete.ts";
import { finishRemovals } from "./removals.ts";
import { pruneLimits } from "./limits.ts";
import { pruneSessions } from "./sessions.ts";
import { pruneDeadTokens } from "./tokens.ts";
import { pruneDeliveries } from "./webhooks.ts";
import { defaultLogger, logFor, withLogger } from "../observability/log.ts";
import { recordRun } from "./last-runs.ts";
import { servicesOf } from "./index.ts";

/**
 * Removes images past expired_at (record, quota, capacity; objects queued as pending removals), one transaction
 * each, then removes the objects (finishRemovals). Rows are taken with FOR UPDATE SKIP LOCKED, so several instances
 * sweeping at once never remove the same image twice. A storage failure no longer keeps the record: the image is
 * gone for its owner and the removal workers retry its objects (services/removals.ts). Returns how many were removed.
 */
export async function sweepExpired(deps: Deps, max = 500): Promise<number> {
  const started = deps.clock();
  try {
    const removed = await sweep(deps, max);
    recordRun(deps, "sweeper", { at: started, durationMs: deps.clock().getTime() - started.getTime(), ok: true, summary: `${removed} expired images removed` });
    return removed;
  } catch (e) {
    recordRun(deps, "sweeper", { at: started, durationMs: deps.clock().getTime() - started.getTime(), ok: false, summary: `failed: ${(e as Error).message}` });
    throw e;
  }
}

async function sweep(deps: Deps, max: number): Promise<number> {
  const now = deps.clock();
  let removed = 0;
  const failed: number[] = []; // database trouble with one image: left for the next round, not retried in this one
  while (removed < max) {
    let current: number | null = null;
    let queued: number[] = [];
    const outcome = await deps.db
      .transaction(async (tx) => {
        const image = await lockNextExpiredImage(tx, now, failed);
        if (!image) return "done" as const;
        current = image.id;
        queued = await removeImage(deps, tx, image, "expiry");
        return "removed" as const;
      })
      .catch((e) => {
        logFor(deps).error({ err: e, image_id: current }, "could not remove an expired image; left for the next round");
        return "failed" as const;
      });
    if (outcome === "done") break;
    if (outcome === "failed") {
      if (current === null) break; // the database itself failed
      failed.push(current);
      continue;
    }
    await finishRemovals(deps, queued); // killed before this: the rows are due, any instance's worker removes the objects
    removed++;
  }
  if (removed > 0) {
    servicesOf(deps).metrics.sweeperRemoved.inc(removed);
    logFor(deps).info({ removed }, `removed ${removed} expired images`);
  }
  await pruneLimits(deps.db, now);
  await pruneDeadTokens(deps.db, now);
  await pruneSessions(deps.db, now);
  await pruneDeliveries(deps.db, now);
  return removed;
}

export function startSweeper(deps: Deps, intervalMs: number) {
  const log = (deps.log ?? defaultLogger()).child({ job: "sweeper" });
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = withLogger(log, () => sweepExpired(deps)).catch((e) => log.error({ err: e }, "sweep failed"));
  }, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
