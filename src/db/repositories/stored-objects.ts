import { and, asc, gt, inArray, or } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { images } from "../schema.ts";

/** The objects a record names: its image and, when it has one, its thumbnail. */
export interface RecordedObjects {
  id: number;
  key: string;
  strategyId: number;
  path: string;
  thumbnailPath: string | null;
}

const recordedObjects = { id: images.id, key: images.key, strategyId: images.strategyId, path: images.path, thumbnailPath: images.thumbnailPath };

/** The records that name one of `paths` (as image or thumbnail) on one of `strategyIds`, for each lookup. */
export async function findRecordsNaming(db: Executor, lookups: { strategyIds: number[]; paths: string[] }[]): Promise<RecordedObjects[]> {
  const conditions = lookups
    .filter((l) => l.strategyIds.length > 0 && l.paths.length > 0)
    .map((l) => and(inArray(images.strategyId, l.strategyIds), or(inArray(images.path, l.paths), inArray(images.thumbnailPath, l.paths))));
  if (conditions.length === 0) return [];
  return db.select(recordedObjects).from(images).where(or(...conditions));
}

/** A page of the records stored on `strategyIds`, by id after `afterId`. */
export async function listRecordsOn(db: Executor, strategyIds: number[], afterId: number, limit: number): Promise<RecordedObjects[]> {
  return db
    .select(recordedObjects)
    .from(images)
    .where(and(inArray(images.strategyId, strategyIds), gt(images.id, afterId)))
    .orderBy(asc(images.id))
    .limit(limit);
}

/** Which of `ids` still have a record. */
export async function existingRecordIds(db: Executor, ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const rows = await db.select({ id: images.id }).from(images).where(inArray(images.id, ids));
  return new Set(rows.map((r) => r.id));
}
