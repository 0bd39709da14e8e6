import { and, asc, eq, gt, inArray, lte, or, sql } from "drizzle-orm";
import type { Db, Executor, Tx } from "../client.ts";
import { images, imageVariants, pendingRemovals, type RemovalReason, strategies } from "../schema.ts";

/** The objects a record names: its image and, when it has one, its thumbnail. */
interface RecordedObjects {
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
  return db
    .select(recordedObjects)
    .from(images)
    .where(or(...conditions));
}

/** The variant objects among `paths` on one of `strategyIds` (their image's strategy), for each lookup. */
export async function findVariantsNaming(db: Executor, lookups: { strategyIds: number[]; paths: string[] }[]): Promise<{ strategyId: number; path: string }[]> {
  const conditions = lookups
    .filter((l) => l.strategyIds.length > 0 && l.paths.length > 0)
    .map((l) => and(inArray(images.strategyId, l.strategyIds), inArray(imageVariants.path, l.paths)));
  if (conditions.length === 0) return [];
  return db
    .select({ strategyId: images.strategyId, path: imageVariants.path })
    .from(imageVariants)
    .innerJoin(images, eq(images.id, imageVariants.imageId))
    .where(or(...conditions));
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

type PendingRemoval = typeof pendingRemovals.$inferSelect;

/** The database's clock `seconds` from now: due times are compared on one clock, whichever instance wrote them. */
const fromNow = (seconds: number) => sql`now() + make_interval(secs => ${seconds}::double precision)`;

/**
 * Queues the removal of `paths` on a strategy, due `dueInSeconds` from now (0: at once, to any worker). Returns the
 * rows' ids, in the order of `paths`.
 */
export async function queueRemovals(db: Executor, strategyId: number, paths: string[], reason: RemovalReason, dueInSeconds = 0): Promise<number[]> {
  if (paths.length === 0) return [];
  const rows = await db
    .insert(pendingRemovals)
    .values(paths.map((path) => ({ strategyId, path, reason, dueAt: fromNow(dueInSeconds) })))
    .returning({ id: pendingRemovals.id });
  return rows.map((r) => r.id);
}

/**
 * queueRemovals in a transaction of its own that does not wait for its WAL to reach the disk (synchronous_commit
 * off): a crash of this process cannot lose it (the database has it), only a crash of the database server within
 * its WAL writer's delay can — and then the reconciler still finds the objects. For an upload's planned objects,
 * where a flush would cost every upload a disk write before its own.
 */
export async function queueRemovalsLazily(db: Db, strategyId: number, paths: string[], reason: RemovalReason, dueInSeconds = 0) {
  if (paths.length === 0) return [];
  // one statement, one round trip: the setting is local to the statement's own transaction, and applies to its commit
  const result = await db.execute(sql`
    with lazy as (select set_config('synchronous_commit', 'off', true))
    insert into ${pendingRemovals} (strategy_id, path, reason, due_at)
    select ${strategyId}::integer, p.path, ${reason}::text, ${fromNow(dueInSeconds)}
    from lazy, json_array_elements_text(${JSON.stringify(paths)}::json) with ordinality as p(path, n)
    order by p.n
    returning id`);
  const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as { id: string | number }[];
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b); // bigserial: ascending in insertion order, which follows `paths`
}

/** Pushes the due time of rows still held (an upload in flight renewing its lease). */
export async function extendRemovals(db: Executor, ids: number[], dueInSeconds: number) {
  if (ids.length === 0) return;
  await db
    .update(pendingRemovals)
    .set({ dueAt: fromNow(dueInSeconds) })
    .where(inArray(pendingRemovals.id, ids));
}

/** A pending removal with the strategy whose storage holds the object. */
export interface LockedRemoval {
  removal: PendingRemoval;
  strategy: typeof strategies.$inferSelect;
}

/**
 * Locks pending removals for the caller's transaction, oldest due first. `due`: up to `limit` rows already due,
 * skipping those another worker holds (SKIP LOCKED: two workers never take the same row). `ids`: exactly those rows
 * that still exist, waiting for a worker that holds one — when it commits the row is gone and is not returned.
 */
export async function lockRemovals(tx: Tx, which: { due: true; limit: number } | { ids: number[] }): Promise<LockedRemoval[]> {
  const q = tx
    .select({ removal: pendingRemovals, strategy: strategies })
    .from(pendingRemovals)
    .innerJoin(strategies, eq(strategies.id, pendingRemovals.strategyId));
  if ("ids" in which) {
    if (which.ids.length === 0) return [];
    return q.where(inArray(pendingRemovals.id, which.ids)).orderBy(asc(pendingRemovals.id)).for("update", { of: pendingRemovals });
  }
  return q
    .where(lte(pendingRemovals.dueAt, sql`now()`))
    .orderBy(asc(pendingRemovals.dueAt))
    .limit(which.limit)
    .for("update", { of: pendingRemovals, skipLocked: true });
}

/** Whether any removal is due: a cheap look before a worker opens a transaction. */
export async function anyRemovalDue(db: Executor): Promise<boolean> {
  const rows = await db.select({ id: pendingRemovals.id }).from(pendingRemovals).where(lte(pendingRemovals.dueAt, sql`now()`)).limit(1);
  return rows.length > 0;
}

/** The paths among `paths` that some image record names, as object, thumbnail or variant, on any strategy. */
export async function pathsNamedByRecords(db: Executor, paths: string[]): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  const rows = await db
    .select({ path: images.path, thumbnailPath: images.thumbnailPath })
    .from(images)
    .where(or(inArray(images.path, paths), inArray(images.thumbnailPath, paths)));
  const variants = await db.select({ path: imageVariants.path }).from(imageVariants).where(inArray(imageVariants.path, paths));
  const wanted = new Set(paths);
  return new Set([...rows.flatMap((r) => [r.path, r.thumbnailPath]), ...variants.map((v) => v.path)].filter((p): p is string => p !== null && wanted.has(p)));
}

export async function deleteRemovals(db: Executor, ids: number[]) {
  if (ids.length === 0) return;
  await db.delete(pendingRemovals).where(inArray(pendingRemovals.id, ids));
}

/** A failed try: counted, and the row waits `retryInSeconds` before any worker takes it again. */
export async function postponeRemoval(db: Executor, id: number, retryInSeconds: number, error: string) {
  await db
    .update(pendingRemovals)
    .set({ attempts: sql`${pendingRemovals.attempts} + 1`, dueAt: fromNow(retryInSeconds), lastError: error.slice(0, 500) })
    .where(eq(pendingRemovals.id, id));
}
