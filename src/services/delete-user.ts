import { eq } from "drizzle-orm";
import type { Deps } from "../deps.ts";
import { deleteSessionsOfUser } from "../db/repositories/sessions.ts";
import { images, users } from "../db/schema.ts";
import { removeImage } from "./delete.ts";
import { emitUserDisabled } from "./events.ts";
import { revokeAllTokensOf } from "./tokens.ts";
import { finishRemovals } from "./removals.ts";
import { servicesOf } from "./index.ts";

/** Images removed per transaction while an account is deleted. */
const BATCH = 200;

/**
 * Deletes an account and every image of it, with the guarantees of the API's delete for each image (services/delete.ts:
 * the record, its quota and its objects' removal queued in one transaction, the objects removed after the commit, or by
 * the removal workers when the storage fails). First the account is disabled, its tokens revoked and its sessions
 * ended, so that no new upload can arrive; then its images go in batches; then, under the account's row lock and with
 * no image left, the account itself (its albums, tokens and sessions with it). A crash halfway leaves a disabled
 * account with fewer images: deleting it again finishes the job. Null when there is no such account.
 */
export async function deleteUserAndImages(deps: Deps, userId: number): Promise<{ images: number } | null> {
  const { db } = deps;
  const found = await db.transaction(async (tx) => {
    const [row] = await tx.update(users).set({ enabled: false }).where(eq(users.id, userId)).returning({ id: users.id, username: users.username });
    if (!row) return false;
    await emitUserDisabled(tx, row, "deleted", deps.clock());
    await revokeAllTokensOf(tx, userId, deps.clock());
    await deleteSessionsOfUser(tx, userId);
    return true;
  });
  if (!found) return null;
  servicesOf(deps).lookups.clear();
  let removed = 0;
  for (;;) {
    const { queued, count } = await db.transaction(async (tx) => {
      const batch = await tx.select().from(images).where(eq(images.userId, userId)).limit(BATCH).for("update");
      const ids: number[] = [];
      for (const image of batch) ids.push(...(await removeImage(deps, tx, image)));
      return { queued: ids, count: batch.length };
    });
    removed += count;
    await finishRemovals(deps, queued);
    if (count > 0) continue;
    const gone = await db.transaction(async (tx) => {
      await tx.select({ id: users.id }).from(users).where(eq(users.id, userId)).for("update");
      const [left] = await tx.select({ id: images.id }).from(images).where(eq(images.userId, userId)).limit(1);
      if (left) return false; // an upload that was already past its checks recorded one: another round
      await tx.delete(users).where(eq(users.id, userId));
      return true;
    });
    if (gone) break;
  }
  servicesOf(deps).lookups.clear();
  return { images: removed };
}
