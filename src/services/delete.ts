import type { Deps } from "../deps.ts";
import { deleteImageAndRelease, findImageForOwner, type ImageRow } from "../db/repositories/images.ts";
import { getStrategy } from "../db/repositories/strategies.ts";
import type { Tx } from "../db/client.ts";
import { AppError, notFound } from "../errors.ts";
import { StorageError } from "../storage/index.ts";
import { lookupCacheFor } from "./lookup-cache.ts";
import { logFor } from "../observability/log.ts";

/**
 * Removes the stored object and thumbnail while the record is locked, then the record, releasing quota
 * and capacity, in one transaction. A storage failure rolls everything back: the record stays.
 */
export async function removeImage(deps: Deps, tx: Tx, image: ImageRow) {
  const strategy = await getStrategy(tx, image.strategyId);
  if (strategy) {
    const storage = deps.storage.for(strategy);
    try {
      await storage.delete(image.path);
      if (image.thumbnailPath) await storage.delete(image.thumbnailPath);
    } catch (e) {
      if (e instanceof StorageError) {
        logFor(deps).error({ err: e, image: image.key, strategy_id: strategy.id }, "delete: the storage failed; the image was kept");
        throw new AppError("internal", "The storage service failed; the image was not deleted.");
      }
      throw e;
    }
  }
  await deleteImageAndRelease(tx, image);
}

/** Contract 4.5: by key or stored file name; missing and foreign images are the same 404. */
export async function deleteImage(deps: Deps, ownerId: number, keyOrName: string) {
  await deps.db.transaction(async (tx) => {
    const image = await findImageForOwner(tx, keyOrName, ownerId, true);
    if (!image) throw notFound("Image not found.");
    await removeImage(deps, tx, image);
  });
  // the freed quota: the next automatic upload here prefers that strategy again at once (contract 4.2, rule 2)
  lookupCacheFor(deps).forget("strategies:");
}
