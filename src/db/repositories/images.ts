import { and, asc, desc, eq, isNull, lte, notInArray, or, sql } from "drizzle-orm";
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
/** Which of an account's images a list shows: all of them, one album's, or those in no album. */
export type AlbumFilter = { album: number } | { album: null } | undefined;

const ownerAndAlbum = (ownerId: number, filter: AlbumFilter) =>
  filter === undefined
    ? eq(images.userId, ownerId)
    : filter.album === null
      ? and(eq(images.userId, ownerId), isNull(images.albumId))
      : and(eq(images.userId, ownerId), eq(images.albumId, filter.album));

export async function listImagesForOwner(db: Executor, ownerId: number, limit: number, offset: number, filter?: AlbumFilter) {
  return db
    .select({ image: images, strategy: strategies })
    .from(images)
    .innerJoin(strategies, eq(strategies.id, images.strategyId))
    .where(ownerAndAlbum(ownerId, filter))
    .orderBy(desc(images.createdAt), desc(images.id))
    .limit(limit)
    .offset(offset);
}

/** How many of the account's images a filtered list holds (the unfiltered count is the account's counter). */
export async function countImagesForOwner(db: Executor, ownerId: number, filter: NonNullable<AlbumFilter>): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(images).where(ownerAndAlbum(ownerId, filter));
  return row?.n ?? 0;
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
): Promise<ImageRow> {
  const { limits } = charge;
  const at = (d: Date | null | undefined) => (d ? d.toISOString() : null);
  const call = pendingIds
    ? sql`record_leased_upload(${`{${pendingIds.map((id) => Math.trunc(id)).join(",")}}`}::bigint[], `
    : sql`record_upload(`;
  let result;
  try {
    result = await db.execute(sql`select ${call}
      ${image.userId ?? null}::integer, ${charge.defaultCapacityKb}::integer, ${image.strategyId}::integer, ${image.size}::bigint,
      ${charge.subject}::text, ${at(image.createdAt)}::timestamptz,
      ${limits.perMinute}::integer, ${limits.perHour}::integer, ${limits.perDay}::integer, ${limits.perWeek}::integer, ${limits.perMonth}::integer,
      ${image.key}::text, ${image.albumId ?? null}::integer, ${image.path}::text, ${image.thumbnailPath ?? null}::text, ${image.name}::text,
      ${image.originName}::text, ${image.mimetype}::text, ${image.extension}::text, ${image.width}::integer, ${image.height}::integer,
      ${image.md5}::text, ${image.sha1}::text, ${image.isPublic ?? true}::boolean, ${at(image.expiredAt)}::timestamptz, ${image.uploaderIp ?? ""}::text
    )::text as id`);
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
  };
}
