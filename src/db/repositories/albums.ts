import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { albums, images, users } from "../schema.ts";
import type { Album } from "./users.ts";

/** Albums an account may hold: every list of them is bounded, and the upload page can offer all of them. */
export const ALBUMS_PER_ACCOUNT = 500;
/** Images one move may name (the grid's largest page is 100). */
export const MOVE_MAX = 100;

export interface AlbumWithCount {
  id: number;
  name: string;
  images: number;
  createdAt: Date;
}

/** The account's albums by name (all of them: at most ALBUMS_PER_ACCOUNT), each with its number of images. */
export async function listAlbumsWithCounts(db: Executor, ownerId: number): Promise<AlbumWithCount[]> {
  return db
    .select({
      id: albums.id,
      name: albums.name,
      createdAt: albums.createdAt,
      // kept by triggers on images (drizzle/0013): counting 100,000 images on every view cost the database 7 ms
      images: albums.imageNum,
    })
    .from(albums)
    .where(eq(albums.userId, ownerId))
    .orderBy(asc(albums.name), asc(albums.id))
    .limit(ALBUMS_PER_ACCOUNT);
}

type AlbumRefusal = "limit" | "missing";

/**
 * Creates an album under the account's cap, in one transaction with the owner's album counter: the owner's row is
 * locked first, so concurrent creations cannot both take the last place.
 */
export async function createOwnAlbum(db: Executor, ownerId: number, name: string): Promise<Album | AlbumRefusal> {
  return db.transaction(async (tx) => {
    const [owner] = await tx.select({ albumNum: users.albumNum }).from(users).where(eq(users.id, ownerId)).for("update");
    if (!owner) return "missing";
    if (owner.albumNum >= ALBUMS_PER_ACCOUNT) return "limit";
    const [album] = await tx.insert(albums).values({ userId: ownerId, name }).returning();
    await tx
      .update(users)
      .set({ albumNum: sql`${users.albumNum} + 1` })
      .where(eq(users.id, ownerId));
    return album!;
  });
}

/** Renames the owner's album; null when it is not theirs (or gone). */
export async function renameOwnAlbum(db: Executor, ownerId: number, albumId: number, name: string): Promise<Album | null> {
  const [row] = await db
    .update(albums)
    .set({ name })
    .where(and(eq(albums.id, albumId), eq(albums.userId, ownerId)))
    .returning();
  return row ?? null;
}

/**
 * Deletes the owner's album; its images stay, in no album (the foreign key's ON DELETE SET NULL), and the album
 * counter goes down in the same transaction. False when it is not theirs (or already gone).
 */
export async function deleteOwnAlbum(db: Executor, ownerId: number, albumId: number): Promise<boolean> {
  return db.transaction(async (tx) => {
    const deleted = await tx
      .delete(albums)
      .where(and(eq(albums.id, albumId), eq(albums.userId, ownerId)))
      .returning({ id: albums.id });
    if (deleted.length === 0) return false;
    await tx
      .update(users)
      .set({ albumNum: sql`greatest(${users.albumNum} - 1, 0)` })
      .where(eq(users.id, ownerId));
    return true;
  });
}

/**
 * Moves the owner's images named by key into the owner's album `albumId`, or out of any album (null). The albums
 * involved are locked for the move, so a concurrent delete of the album waits instead of breaking the move.
 * Keys of other accounts' images, or of none, are ignored. The number of images moved; "missing" when the album is not
 * the owner's.
 */
export async function moveOwnImages(db: Executor, ownerId: number, keys: string[], albumId: number | null): Promise<number | "missing"> {
  return db.transaction(async (tx) => {
    const named = keys.slice(0, MOVE_MAX);
    // the albums the move counts in (its target, and those the images leave), locked in id order before the images'
    // triggers update their counts: two moves across the same albums wait for each other instead of deadlocking
    const locked = await tx
      .select({ id: albums.id })
      .from(albums)
      .where(
        and(
          eq(albums.userId, ownerId),
          sql`(${albums.id} = ${albumId ?? -1} or ${albums.id} in (select "album_id" from "images" where "images"."user_id" = ${ownerId} and "images"."key" in ${named.length ? named : [""]}))`,
        ),
      )
      .orderBy(asc(albums.id))
      .for("update");
    if (albumId !== null && !locked.some((a) => a.id === albumId)) return "missing";
    if (keys.length === 0) return 0;
    const moved = await tx
      .update(images)
      .set({ albumId })
      .where(and(eq(images.userId, ownerId), inArray(images.key, named)))
      .returning({ id: images.id });
    return moved.length;
  });
}
