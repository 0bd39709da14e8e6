/** The administrators' view of every image: a filtered page of all of them, users' and guests'. */
import { and, desc, eq, gte, isNull, lt, lte, or, type SQL, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { images, strategies, users } from "../schema.ts";

/** What the list shows; every field narrows it. */
export interface AdminImageFilter {
  /** A user's id, or null for guests' images. */
  owner?: number | null;
  strategyId?: number;
  /** created_at ≥ this. */
  from?: Date;
  /** created_at < this. */
  before?: Date;
  minBytes?: number;
  maxBytes?: number;
  visibility?: "public" | "private";
}

function filterWhere(filter: AdminImageFilter): SQL | undefined {
  const conditions: SQL[] = [];
  if (filter.owner === null) conditions.push(isNull(images.userId));
  else if (filter.owner !== undefined) conditions.push(eq(images.userId, filter.owner));
  if (filter.strategyId !== undefined) conditions.push(eq(images.strategyId, filter.strategyId));
  if (filter.from) conditions.push(gte(images.createdAt, filter.from));
  if (filter.before) conditions.push(lt(images.createdAt, filter.before));
  if (filter.minBytes !== undefined) conditions.push(gte(images.size, filter.minBytes));
  if (filter.maxBytes !== undefined) conditions.push(lte(images.size, filter.maxBytes));
  if (filter.visibility) conditions.push(eq(images.isPublic, filter.visibility === "public"));
  return conditions.length ? and(...conditions) : undefined;
}

/**
 * A page of every image, newest first (ties by id, so pages never overlap), with its strategy and owner. With an owner
 * (a user or the guests) the order and the date range are those of images_owner_created_idx (user_id, created_at, id)
 * scanned backwards: the page is read from the index, no sort (test/web/admin-pages-data.test.ts checks the plans). Across
 * owners no index has created_at first: the rows that pass the filters are read and the page picked by a top-N sort,
 * which keeps LIMIT + OFFSET rows in memory (per_page ≤ 100).
 */
export function adminImageListQuery(db: Executor, filter: AdminImageFilter, limit: number, offset: number) {
  return (
    db
      .select({ image: images, strategy: strategies, user: { id: users.id, username: users.username } })
      .from(images)
      .innerJoin(strategies, eq(strategies.id, images.strategyId))
      .leftJoin(users, eq(users.id, images.userId))
      .where(filterWhere(filter))
      // with an owner, user_id leads the order too (one value: the same order), so that `user_id is null`, which the
      // planner does not take for a constant as it does `user_id = 3`, is also read in the index's order
      .orderBy(...(filter.owner === undefined ? [] : [sql`${images.userId} desc nulls first`]), desc(images.createdAt), desc(images.id))
      .limit(limit)
      .offset(offset)
  );
}

/** How many images the filter lets through, in one statement. */
export async function countAdminImages(db: Executor, filter: AdminImageFilter): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(images).where(filterWhere(filter));
  return row?.n ?? 0;
}

/** Any image by key or stored file name (an owner's or a guest's): its key and owner. */
export async function findImageByKeyOrName(
  db: Executor,
  keyOrName: string,
): Promise<{ key: string; userId: number | null; originName: string; username: string | null } | null> {
  const [found] = await db
    .select({ key: images.key, userId: images.userId, originName: images.originName, username: users.username })
    .from(images)
    .leftJoin(users, eq(users.id, images.userId))
    .where(or(eq(images.key, keyOrName), eq(images.name, keyOrName)))
    .limit(1);
  return found ?? null;
}

/** A guest's image, locked for its delete (run it in the deleting transaction). */
export async function lockGuestImage(tx: Executor, key: string) {
  const [image] = await tx
    .select()
    .from(images)
    .where(and(eq(images.key, key), isNull(images.userId)))
    .limit(1)
    .for("update");
  return image ?? null;
}
