import type { Deps } from "../deps.ts";
import { deleteImageAndRelease, findImageForOwner, type ImageRow } from "../db/repositories/images.ts";
import { findImageByKeyOrName, lockGuestImage } from "../db/repositories/admin-images.ts";
import { queueRemovals } from "../db/repositories/stored-objects.ts";
import { variantsOf } from "../db/repositories/variants.ts";
import { getStrategy } from "../db/repositories/strategies.ts";
import { emitEvent, imageEventData } from "../webhooks/events.ts";
import type { RemovalReason } from "../db/schema.ts";
import type { Tx } from "../db/client.ts";
import { AppError, notFound } from "../errors.ts";
import { finishRemovals } from "./removals.ts";
import { servicesOf } from "./index.ts";

/**
 * In the caller's transaction: deletes the record, releases quota and capacity, and queues the removal of its object,
 * thumbnail and variants (pending_removals, due at once). All of it commits together or not at all, so an image is either
 * listed, charged and whole, or gone from the account with its objects bound to be removed. Nothing touches the
 * storage here: call finishRemovals with the returned ids after the commit (see services/removals.ts).
 */
export async function removeImage(
  deps: Pick<Deps, "storage" | "config" | "clock">,
  tx: Tx,
  image: ImageRow,
  reason: Exclude<RemovalReason, "upload"> = "delete",
): Promise<number[]> {
  const paths = image.thumbnailPath ? [image.path, image.thumbnailPath] : [image.path];
  // its variants: their rows go with the image (cascade), their objects with its own. The image row is
  // locked (FOR UPDATE) by every caller, so a variant being recorded now waits for this commit and then finds the
  // image gone: it gives its object up itself.
  const variants = await variantsOf(tx, image.id);
  paths.push(...variants.map((v) => v.path));
  const queued = await queueRemovals(tx, image.strategyId, paths, reason);
  await deleteImageAndRelease(tx, image);
  // the event commits with the deletion; it lists every address that served the image (a CDN purges them)
  const strategy = await getStrategy(tx, image.strategyId);
  if (strategy) {
    await emitEvent(tx, {
      type: reason === "expiry" ? "image.expired" : "image.deleted",
      ownerId: image.userId,
      subject: `image:${image.key}`,
      at: deps.clock(),
      data: imageEventData(image, strategy, deps.storage, deps.config.baseUrl, variants),
    });
  }
  return queued;
}

/**
 * Contract 4.5: by key or stored file name; missing and foreign images are the same 404.
 *
 * Failures: the process or the database failing before the commit leaves the image as it was (the client got no
 * answer, or a 500). After the commit the image is deleted as the account sees it, and the objects are removed
 * before the answer; when the storage refuses (or the process dies first) the removal is retried by every
 * instance's removal worker until it succeeds, and the delete still answers 200: the record is gone.
 */
export async function deleteImage(deps: Deps, ownerId: number, keyOrName: string) {
  const queued = await deps.db.transaction(async (tx) => {
    const image = await findImageForOwner(tx, keyOrName, ownerId, true);
    if (!image) throw notFound("Image not found.");
    return removeImage(deps, tx, image);
  });
  // the freed quota: the next automatic upload here prefers that strategy again at once (contract 4.2, rule 2)
  servicesOf(deps).lookups.forget("strategies:");
  // the object server checks the file on every request: once it is gone, no instance serves the image
  await finishRemovals(deps, queued);
}

/** What deleteAnyImage deleted: the image's key, its original file name and its owner's username (null: a guest). */
export interface DeletedImage {
  key: string;
  originName: string;
  owner: string | null;
}

/**
 * Deletes any image by key (or stored file name) with the guarantees of DELETE /api/v1/images/{key}: an owner's through
 * deleteImage itself; a guest's by the same steps (record, quota and the objects' removal queued in one transaction
 * under the row's lock, the objects removed after the commit or by the removal workers). Null when there is none.
 */
export async function deleteAnyImage(deps: Deps, keyOrName: string): Promise<DeletedImage | null> {
  const found = await findImageByKeyOrName(deps.db, keyOrName);
  if (!found) return null;
  const deleted = { key: found.key, originName: found.originName, owner: found.userId === null ? null : (found.username ?? null) };
  if (found.userId !== null) {
    try {
      await deleteImage(deps, found.userId, found.key);
      return deleted;
    } catch (e) {
      if (e instanceof AppError && e.code === "not_found") return null; // deleted meanwhile
      throw e;
    }
  }
  const queued = await deps.db.transaction(async (tx) => {
    const image = await lockGuestImage(tx, found.key);
    return image ? removeImage(deps, tx, image) : null;
  });
  if (queued === null) return null;
  servicesOf(deps).lookups.forget("strategies:");
  await finishRemovals(deps, queued);
  return deleted;
}
