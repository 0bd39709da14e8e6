import { and, asc, desc, eq, ilike, inArray, isNull, lte, notInArray, or, type Placeholder, type SQL, sql } from "drizzle-orm";
import { prepared } from "./prepared.ts";
import type { Executor, Tx } from "../client.ts";
import { albums, images, type MetadataRemoved, strategies, users } from "../schema.ts";

export type ImageRow = typeof images.$inferSelect;
type NewImage = typeof images.$inferInsert;

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

/** Which of an account's images a list shows: all of them, one album's, or those in no album. */
export type AlbumFilter = { album: number } | { album: null } | undefined;

/**
 * Which of an account's images a list shows (the user center's Images page; the API lists them all): an album's or
 * those in no album (`album`), those whose original name holds `q` (any case), the public or the private ones. An
 * AlbumFilter is one.
 */
export type ImageFilter = { album?: number | null; q?: string; visibility?: "public" | "private" } | undefined;

/** The orders of a list, each served by an index (see images in schema.ts); ties broken by id so pages never overlap. */
export const IMAGE_SORTS = ["newest", "oldest", "largest"] as const;
export type ImageSort = (typeof IMAGE_SORTS)[number];

/** Whether a filter narrows the list at all (the unfiltered total is the account's counter). */
export const isFiltered = (filter: ImageFilter) => filter !== undefined && (filter.album !== undefined || !!filter.q || filter.visibility !== undefined);

/** `q` as a LIKE pattern that matches it anywhere, its wildcards (`%`, `_`) and the escape (`\`) taken literally. */
export const containsPattern = (q: string) => `%${q.replace(/[\\%_]/g, "\\$&")}%`;

/** A value of a list's statement: the value itself, or the placeholder a prepared statement fills in. */
type Arg<T> = T | Placeholder;

function ownerWhere(ownerId: Arg<number>, filter: ImageFilter, values: { album?: Arg<number>; pattern?: Arg<string>; isPublic?: Arg<boolean> } = {}) {
  const conditions = [eq(images.userId, ownerId)];
  if (filter?.album === null) conditions.push(isNull(images.albumId));
  else if (filter?.album !== undefined) conditions.push(eq(images.albumId, values.album ?? filter.album));
  if (filter?.q) conditions.push(ilike(images.originName, values.pattern ?? containsPattern(filter.q)));
  if (filter?.visibility) conditions.push(eq(images.isPublic, values.isPublic ?? filter.visibility === "public"));
  return and(...conditions);
}

/**
 * The orders, in the order of their index scanned forward or backward: images_owner_created_idx (user_id, created_at,
 * id), images_owner_size_idx (user_id, size, id), and for one album images_album_created_idx (album_id, created_at, id).
 */
const orders = {
  newest: [desc(images.createdAt), desc(images.id)],
  oldest: [asc(images.createdAt), asc(images.id)],
  largest: [desc(images.size), desc(images.id)],
} satisfies Record<ImageSort, unknown[]>;

/** A filter's shape: what its prepared statement depends on (which conditions there are, not their values). */
const shapeOf = (filter: ImageFilter) =>
  `${filter?.album === null ? "none" : filter?.album !== undefined ? "album" : "all"}:${filter?.q ? "q" : ""}:${filter?.visibility ? "v" : ""}`;

const placeholders = { album: sql.placeholder("album"), pattern: sql.placeholder("pattern"), isPublic: sql.placeholder("isPublic") };
const valuesOf = (ownerId: number, filter: ImageFilter) => ({
  owner: ownerId,
  album: typeof filter?.album === "number" ? filter.album : undefined,
  pattern: filter?.q ? containsPattern(filter.q) : undefined,
  isPublic: filter?.visibility ? filter.visibility === "public" : undefined,
});

/** A page of the owner's images with their strategies, newest first by default; ties broken by id so pages never overlap. */
export async function listImagesForOwner(db: Executor, ownerId: number, limit: number, offset: number, filter?: ImageFilter, sort: ImageSort = "newest") {
  const statement = prepared(
    db,
    `images:list:${sort}:${shapeOf(filter)}`,
    (name) => imageListQuery(db, sql.placeholder("owner"), sql.placeholder("limit"), sql.placeholder("offset"), filter, sort, placeholders).prepare(name),
    { planEachRun: !!filter?.q },
  );
  return statement.execute({ ...valuesOf(ownerId, filter), limit, offset });
}

/** listImagesForOwner's statement, unsent (its plan is tested: test/web/images.test.ts). */
export function imageListQuery(
  db: Executor,
  ownerId: Arg<number>,
  limit: Arg<number>,
  offset: Arg<number>,
  filter?: ImageFilter,
  sort: ImageSort = "newest",
  values?: Parameters<typeof ownerWhere>[2],
) {
  return db
    .select({ image: images, strategy: strategies })
    .from(images)
    .innerJoin(strategies, eq(strategies.id, images.strategyId))
    .where(ownerWhere(ownerId, filter, values))
    .orderBy(...orders[sort])
    .limit(limit)
    .offset(offset);
}

/** How many of the account's images a filtered list holds, in one statement (the unfiltered count is the account's counter). */
/**
 * How many of the owner's images match, counting at most `upTo` of them when given: a filtered list of an account with
 * 100,000 images need not read them all to say "more than 1,000".
 */
export async function countImagesForOwner(db: Executor, ownerId: number, filter: NonNullable<ImageFilter>, upTo?: number): Promise<number> {
  if (upTo === undefined) {
    const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(images).where(ownerWhere(ownerId, filter));
    return row?.n ?? 0;
  }
  const statement = prepared(
    db,
    `images:count:${shapeOf(filter)}`,
    (name) => {
      const matching = db
        .select({ one: sql`1` })
        .from(images)
        .where(ownerWhere(sql.placeholder("owner"), filter, placeholders))
        .limit(sql.placeholder("upTo"))
        .as("matching");
      return db.select({ n: sql<number>`count(*)::int` }).from(matching).prepare(name);
    },
    { planEachRun: !!filter.q },
  );
  const [row] = await statement.execute({ ...valuesOf(ownerId, filter), upTo });
  return row?.n ?? 0;
}

/** The owner's image with this key, its strategy and its album's name; null when missing or another account's. */
export async function findImageDetailsForOwner(db: Executor, key: string, ownerId: number) {
  const [row] = await db
    .select({ image: images, strategy: strategies, album: { id: albums.id, name: albums.name } })
    .from(images)
    .innerJoin(strategies, eq(strategies.id, images.strategyId))
    .leftJoin(albums, eq(albums.id, images.albumId))
    .where(and(eq(images.key, key), eq(images.userId, ownerId)))
    .limit(1);
  if (!row) return null;
  return { image: row.image, strategy: row.strategy, album: row.album?.id == null ? null : { id: row.album.id, name: row.album.name } };
}

/** The keys and original names of the owner's images among `keys` (others' and unknown keys are left out), newest first. */
export async function findOwnImagesByKeys(db: Executor, ownerId: number, keys: string[]) {
  if (keys.length === 0) return [];
  return db
    .select({ key: images.key, originName: images.originName })
    .from(images)
    .where(and(eq(images.userId, ownerId), inArray(images.key, keys)))
    .orderBy(desc(images.createdAt), desc(images.id));
}

/** Makes the owner's images among `keys` public or private in one UPDATE; others' keys are ignored. How many were set. */
export async function setOwnImagesPublic(db: Executor, ownerId: number, keys: string[], isPublic: boolean): Promise<number> {
  if (keys.length === 0) return 0;
  const updated = await db
    .update(images)
    .set({ isPublic })
    .where(and(eq(images.userId, ownerId), inArray(images.key, keys)))
    .returning({ id: images.id });
  return updated.length;
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

/** Limits of the uploading group that the record step re-checks under its lock (null = no limit). */
export interface FrequencyLimits {
  perMinute: number | null;
  perHour: number | null;
  perDay: number | null;
  perWeek: number | null;
  perMonth: number | null;
}

/**
 * Why the record step refused: the subject's frequency, the owner's capacity or the strategy's quota; or the
 * upload's planned objects were given up to the removal workers (its lease lapsed) before it could record them.
 */
export class RecordRefused extends Error {
  constructor(
    readonly reason: "frequency" | "capacity" | "quota" | "lease",
    message: string,
  ) {
    super(message);
  }
}

const refusals = { IHFRQ: "frequency", IHCAP: "capacity", IHQTA: "quota", IHLSE: "lease" } as const;

/**
 * Records an accepted upload in one round trip (the record_upload function of drizzle/0002): re-checks the
 * frequency, charges capacity, inserts the image, logs the upload and charges the quota, all or nothing.
 * Returns the new record. With `pendingIds` (the upload's planned objects queued as pending removals, its lease),
 * record_leased_upload of drizzle/0004 first deletes those rows in the same transaction: all of them, or IHLSE and
 * nothing is recorded.
 */
export async function recordAcceptedUpload(
  db: Executor,
  image: Omit<NewImage, "id" | "createdAt"> & { createdAt: Date },
  charge: { subject: string; defaultCapacityKb: number; limits: FrequencyLimits },
  pendingIds?: number[],
  /** A statement evaluated in the same one (the caller's event): it commits with the record or not at all. */
  alongside?: SQL,
): Promise<ImageRow> {
  const { limits } = charge;
  const at = (d: Date | null | undefined) => (d ? d.toISOString() : null);
  const call = pendingIds ? sql`record_leased_upload(${`{${pendingIds.map((id) => Math.trunc(id)).join(",")}}`}::bigint[], ` : sql`record_upload(`;
  let result;
  try {
    result = await db.execute(sql`select ${call}
      ${image.userId ?? null}::integer, ${charge.defaultCapacityKb}::integer, ${image.strategyId}::integer, ${image.size}::bigint,
      ${charge.subject}::text, ${at(image.createdAt)}::timestamptz,
      ${limits.perMinute}::integer, ${limits.perHour}::integer, ${limits.perDay}::integer, ${limits.perWeek}::integer, ${limits.perMonth}::integer,
      ${image.key}::text, ${image.albumId ?? null}::integer, ${image.path}::text, ${image.thumbnailPath ?? null}::text, ${image.name}::text,
      ${image.originName}::text, ${image.mimetype}::text, ${image.extension}::text, ${image.width}::integer, ${image.height}::integer,
      ${image.md5}::text, ${image.sha1}::text, ${image.isPublic ?? true}::boolean, ${at(image.expiredAt)}::timestamptz, ${image.uploaderIp ?? ""}::text
    )::text as id${alongside ? sql`, ${alongside} as alongside` : sql``}`);
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause ?? (e as { code?: string; message?: string });
    const reason = cause.code ? refusals[cause.code as keyof typeof refusals] : undefined;
    if (reason) throw new RecordRefused(reason, cause.message ?? reason);
    throw e;
  }
  const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as { id: string }[];
  return {
    ...image,
    id: Number(rows[0]!.id),
    userId: image.userId ?? null,
    albumId: image.albumId ?? null,
    thumbnailPath: image.thumbnailPath ?? null,
    isPublic: image.isPublic ?? true,
    expiredAt: image.expiredAt ?? null,
    uploaderIp: image.uploaderIp ?? "",
    metadataRemoved: image.metadataRemoved ?? { removed: [] },
  };
}

/** What the metadata policy removed from a recorded upload (the record function leaves the column's default: nothing). */
export async function recordMetadataRemoved(db: Executor, id: number, value: MetadataRemoved): Promise<void> {
  await db.update(images).set({ metadataRemoved: value }).where(eq(images.id, id));
}
