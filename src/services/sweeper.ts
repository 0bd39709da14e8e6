import type { Deps } from "../deps.ts";
import { lockNextExpiredImage } from "../db/repositories/images.ts";
import { deleteExpiredTemporaryTokens } from "../db/repositories/tokens.ts";
import { removeImage } from "./delete.ts";
import { pruneLimits } from "./limits.ts";
import { defaultLogger, logFor, withLogger } from "../observability/log.ts";
import { metricsFor } from "../observability/metrics.ts";

/**
 * Removes images past expired_at (objects, record, quota), one transaction each. Rows are taken with
 * FOR UPDATE SKIP LOCKED, so several instances sweeping at once never remove the same image twice.
 * Returns how many were removed.
 */
export async function sweepExpired(deps: Deps, max = 500): Promise<number> {
  const now = deps.clock();
  let removed = 0;
  const failed: number[] = []; // storage trouble: left for the next round, not retried in this one
  while (removed < max) {
    let current: number | null = null;
    const outcome = await deps.db
      .transaction(async (tx) => {
        const image = await lockNextExpiredImage(tx, now, failed);
        if (!image) return "done" as const;
        current = image.id;
        await removeImage(deps, tx, image);
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
    removed++;
  }
  if (removed > 0) {
    metricsFor(deps).sweeperRemoved.inc(removed);
    logFor(deps).info({ removed }, `removed ${removed} expired images`);
  }
  await pruneLimits(deps.db, now);
  await deleteExpiredTemporaryTokens(deps.db, new Date(now.getTime() - 86_400_000));
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
