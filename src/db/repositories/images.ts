import { and, asc, desc, eq, lte, notInArray, or, sql } from "drizzle-orm";
import type { Executor, Tx } from "../client.ts";
import { images, strategies, users } from "../schema.ts";

export type ImageRow = typeof images.$inferSelect;
export type NewImage = typeof images.$inferInsert;

/** The image with this key (or stored file name) if the owner owns it; a foreign image looks missing. */
export async function findImageForOwner(db: Executor, keyOrName: string, ownerId: number, lock = false) {
  const q = db
    .select()
    .from(images)
    .where(and(or(eq(images.key, keyOrName), eq(images.name, keyOrName)), eq(images.userId, ownerId)))
    .limit(1);
  const [row] = await (lock ? q.for("update") : q);
  return row ?? null;
}

/** A page of the owner's images with their strategies, newest first; ties broken by id so pages never overlap. */
export async function listImagesForOwner(db: Executor, ownerId: number, limit: number, offset: number) {
  return db
    .select({ image: images, strategy: strategies })
    .from(images)
    .innerJoin(strategies, eq(strategies.id, images.strategyId))
    .where(eq(images.userId, ownerId))
    .orderBy(desc(images.createdAt), desc(images.id))
    .limit(limit)
    .offset(offset);
}

/** The image whose object or thumbnail is stored at `path`, with its strategy. */
export async function findImageByStoredPath(db: Executor, path: string) {
  const [row] = await db
    .select({ image: images, strategy: strategies })
    .from(images)
    .innerJoin(strategies, eq(strategies.id, images.strategyId))
    .where(or(eq(images.path, path), eq(images.thumbnailPath, path)))
    .limit(1);
  return row ?? null;
}

/** Locks one expired image that no other sweeper holds, skipping the ids this sweep already failed on. */
export async function lockNextExpiredImage(tx: Tx, now: Date, skipIds: number[]) {
  const [row] = await tx
    .select()
    .from(images)
    .where(skipIds.length ? and(lte(images.expiredAt, now), notInArray(images.id, skipIds)) : lte(images.expiredAt, now))
    .orderBy(asc(images.expiredAt))
    .limit(1)
    .for("update", { skipLocked: true });
  return row ?? null;
}

/** Deletes the record and gives its bytes back to the strategy and the owner, in the caller's transaction. */
export async function deleteImageAndRelease(tx: Tx, image: ImageRow) {
  await tx.delete(images).where(eq(images.id, image.id));
  if (image.userId !== null) {
    await tx
      .update(users)
      .set({
        usedBytes: sql`greatest(${users.usedBytes} - ${image.size}, 0)`,
        imageNum: sql`greatest(${users.imageNum} - 1, 0)`,
      })
      .where(eq(users.id, image.userId));
  }
  // the shared strategy row last: held only until commit
  await tx
    .update(strategies)
    .set({ usedBytes: sql`greatest(${strategies.usedBytes} - ${image.size}, 0)` })
    .where(eq(strategies.id, image.strategyId));
}

/** Charges the strategy's quota; false when it would pass the quota. */
export async function chargeStrategy(tx: Tx, strategyId: number, bytes: number): Promise<boolean> {
  const rows = await tx
    .update(strategies)
    .set({ usedBytes: sql`${strategies.usedBytes} + ${bytes}` })
    .where(
      and(
        eq(strategies.id, strategyId),
        sql`(${strategies.quotaKb} is null or ${strategies.usedBytes} + ${bytes} <= ${strategies.quotaKb} * 1024)`,
      ),
    )
    .returning({ id: strategies.id });
  return rows.length > 0;
}

/** Charges the owner's capacity and counts the image; false when it would pass the capacity. */
export async function chargeUser(tx: Tx, userId: number, bytes: number, defaultCapacityKb: number): Promise<boolean> {
  const rows = await tx
    .update(users)
    .set({ usedBytes: sql`${users.usedBytes} + ${bytes}`, imageNum: sql`${users.imageNum} + 1` })
    .where(
      and(
        eq(users.id, userId),
        sql`${users.usedBytes} + ${bytes} <= coalesce(${users.capacityKb}, ${defaultCapacityKb}) * 1024`,
      ),
    )
    .returning({ id: users.id });
  return rows.length > 0;
}

export async function insertImage(tx: Tx, values: NewImage): Promise<ImageRow> {
  const [row] = await tx.insert(images).values(values).returning();
  return row!;
}
