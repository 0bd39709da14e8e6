import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db, Executor } from "../client.ts";
import { groups, imageVariants, pendingRemovals, users, type VariantFormat } from "../schema.ts";

export type VariantRow = typeof imageVariants.$inferSelect;

/** The stored variant of an image at (width, format), or null. */
export async function findVariant(db: Executor, imageId: number, width: number, format: VariantFormat): Promise<VariantRow | null> {
  const [row] = await db
    .select()
    .from(imageVariants)
    .where(and(eq(imageVariants.imageId, imageId), eq(imageVariants.width, width), eq(imageVariants.format, format)))
    .limit(1);
  return row ?? null;
}

/** The paths of an image's variants (the delete queues their removal; the row goes with the image by cascade). */
export async function variantsOf(db: Executor, imageId: number): Promise<{ path: string; width: number; format: VariantFormat }[]> {
  return db
    .select({ path: imageVariants.path, width: imageVariants.width, format: imageVariants.format })
    .from(imageVariants)
    .where(eq(imageVariants.imageId, imageId))
    .orderBy(imageVariants.id);
}

/** Drops the row of a variant whose object is gone (it is made again on its next request). */
export async function forgetVariant(db: Executor, id: number) {
  await db.delete(imageVariants).where(eq(imageVariants.id, id));
}

type VariantRecordOutcome = { recorded: VariantRow } | { refused: "exists" | "image_gone" | "lease_lapsed" };

class LeaseLapsed extends Error {}

/**
 * Records a variant written at `path` and takes back its pending removals (`leaseIds`, queued before the write) in one
 * transaction, as an upload's record step does: recorded, the object is the row's; refused, the caller gives its
 * object up (another instance recorded the same variant first, the image was deleted meanwhile, or the lease lapsed
 * and a removal worker took the object).
 */
export async function recordVariant(
  db: Db,
  variant: { imageId: number; width: number; format: VariantFormat; path: string; size: number },
  leaseIds: number[],
): Promise<VariantRecordOutcome> {
  try {
    return await db.transaction(async (tx) => {
      const [row] = await tx.insert(imageVariants).values(variant).onConflictDoNothing().returning();
      if (!row) return { refused: "exists" as const };
      if (leaseIds.length > 0) {
        const taken = await tx
          .delete(pendingRemovals)
          .where(and(inArray(pendingRemovals.id, leaseIds), eq(pendingRemovals.reason, "upload")))
          .returning({ id: pendingRemovals.id });
        if (taken.length !== leaseIds.length) throw new LeaseLapsed();
      }
      return { recorded: row };
    });
  } catch (e) {
    if (e instanceof LeaseLapsed) return { refused: "lease_lapsed" };
    const cause = (e as { cause?: { code?: string } }).cause ?? (e as { code?: string });
    if (cause.code === "23503") return { refused: "image_gone" }; // foreign key: the image was deleted meanwhile
    throw e;
  }
}

/** The bounds of the group an image's owner is in now (the guest group for a guest's image), as at upload. */
interface VariantBounds {
  maxPixels: number;
  maxFileSizeKb: number;
}

export async function boundsForImage(db: Executor, userId: number | null): Promise<VariantBounds | null> {
  const groupId =
    userId === null
      ? sql`(select ${groups.id} from ${groups} where ${groups.isGuest} limit 1)`
      : sql`(select ${users.groupId} from ${users} where ${users.id} = ${userId})`;
  const [row] = await db.select({ maxPixels: groups.maxPixels, maxFileSizeKb: groups.maxFileSizeKb }).from(groups).where(eq(groups.id, groupId)).limit(1);
  return row ?? null;
}
