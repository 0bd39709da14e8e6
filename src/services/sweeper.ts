import type { Deps } from "../deps.ts";
import { lockNextExpiredImage } from "../db/repositories/images.ts";
import { deleteExpiredTemporaryTokens } from "../db/repositories/tokens.ts";
import { removeImage } from "./delete.ts";
import { pruneLimits } from "./limits.ts";

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
        console.error(`sweeper: ${(e as Error).message}`);
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
  await pruneLimits(deps.db, now);
  await deleteExpiredTemporaryTokens(deps.db, new Date(now.getTime() - 86_400_000));
  return removed;
}

export function startSweeper(deps: Deps, intervalMs: number) {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = sweepExpired(deps).catch((e) => console.error(`sweeper: ${(e as Error).message}`));
  }, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
