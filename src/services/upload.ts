import type { Deps } from "../deps.ts";
import { chargeStrategy, chargeUser, insertImage, type ImageRow } from "../db/repositories/images.ts";
import { listUsableStrategies, type Strategy } from "../db/repositories/strategies.ts";
import { findAlbumForOwner } from "../db/repositories/users.ts";
import { AppError, badRequest } from "../errors.ts";
import type { Caller } from "../http/types.ts";
import { formats, isSupportedExtension, mimeAliases } from "../images/formats.ts";
import { decodeAndThumbnail, inspectImage } from "../images/inspect.ts";
import { StorageError } from "../storage/index.ts";
import { toImageResource } from "./image-resource.ts";
import { acquireUploadSlot, checkFrequency, recordUpload } from "./limits.ts";
import { capacityKbOf } from "./profile.ts";
import { reviewContent } from "./review.ts";
import { randomToken } from "./secrets.ts";

export interface UploadInput {
  caller: Caller;
  ip: string;
  file: { filename: string; contentType: string; bytes: Uint8Array };
  strategyId?: number;
  albumId?: number;
  isPublic: boolean;
  expiredAt?: Date;
}

class QuotaExhausted extends AppError {
  constructor(strategy: Strategy) {
    super("bad_request", `The storage strategy "${strategy.name}" has not enough quota left.`);
  }
}

const kb = (bytes: number) => Math.round((bytes / 1024) * 100) / 100;

/** Who the frequency and concurrency limits count against: the account, or the guest's address. */
export const subjectOf = (caller: Caller, ip: string) => (caller.kind === "user" ? `user:${caller.user.id}` : `ip:${ip}`);

export function extensionOf(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? "";
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : "";
}

/**
 * Contract 4.3. Every check runs before anything is stored; then the object and its thumbnail are
 * stored, and one transaction re-checks frequency, charges quota and capacity and inserts the record.
 * Storing fails → nothing recorded or charged. The transaction fails → the stored objects are removed.
 */
export async function uploadImage(deps: Deps, input: UploadInput) {
  const { caller, file } = input;
  const group = caller.group;
  const now = deps.clock();
  const size = file.bytes.byteLength;
  const originName = (file.filename.split(/[\\/]/).pop() ?? "").slice(0, 255) || "image";

  // 1. format: extension allowed, declared type and content agree with it
  const extension = extensionOf(originName);
  if (!extension) throw badRequest("The file name has no extension.");
  if (!isSupportedExtension(extension) || !group.allowedExtensions.includes(extension)) {
    throw badRequest(`Unsupported format .${extension}: allowed are ${group.allowedExtensions.map((e) => `.${e}`).join(", ")}.`);
  }
  const mimetype = formats[extension];
  const declared = mimeAliases[file.contentType] ?? file.contentType;
  if (declared && declared !== "application/octet-stream" && declared !== mimetype) {
    throw badRequest(`The declared type ${file.contentType} does not match the .${extension} extension.`);
  }
  // 2. size
  if (size === 0) throw new AppError("validation", "The file is empty.", { file: ["The file is empty."] });
  if (size > group.maxFileSizeKb * 1024) {
    throw badRequest(`The file is ${kb(size)} KB; the limit is ${group.maxFileSizeKb} KB.`);
  }
  const inspection = await inspectImage(file.bytes);
  if (!inspection || inspection.sniffedMime !== mimetype) {
    throw badRequest(`The file content is not a valid ${extension.toUpperCase()} image.`);
  }
  if (inspection.width * inspection.height > group.maxPixels) {
    throw badRequest(`The image has ${inspection.width}×${inspection.height} pixels; the limit is ${group.maxPixels} pixels.`);
  }

  // 8. guests, albums, permission
  if (caller.kind === "guest") {
    if (input.albumId !== undefined) throw badRequest("Guests cannot upload into an album.");
    if (!input.isPublic) throw badRequest("Guests cannot upload private images.");
  } else if (input.albumId !== undefined && !(await findAlbumForOwner(deps.db, input.albumId, caller.user.id))) {
    throw badRequest("The album does not exist or is not yours.");
  }
  // 7. retention
  if (input.expiredAt) {
    if (input.expiredAt.getTime() <= now.getTime()) {
      throw new AppError("validation", "The expired_at must be in the future.", { expired_at: ["The expired_at must be in the future."] });
    }
    const ceiling = group.retentionMaxSeconds;
    if (ceiling !== null && input.expiredAt.getTime() > now.getTime() + ceiling * 1000) {
      throw badRequest(`The expired_at is beyond the retention ceiling of ${ceiling} seconds for your group.`);
    }
  }
  // 6. strategy permission and quota (re-checked atomically below)
  let strategy = await selectStrategy(deps, group.id, input.strategyId, size);
  // 3. capacity (re-checked atomically below)
  if (caller.kind === "user" && caller.user.usedBytes + size > capacityKbOf(caller.user, group) * 1024) {
    throw badRequest("Insufficient capacity.");
  }
  // 4. frequency (re-checked under a lock below)
  const subject = subjectOf(caller, input.ip);
  await checkFrequency(deps.db, group, subject, now, false);

  // 5. concurrency: a slot is held from here until the answer
  const release = await acquireUploadSlot(deps.db, group, subject, now);
  try {
    // 9. content review
    await reviewContent(group, {
      bytes: file.bytes,
      mimetype,
      originName,
      uploader: caller.kind === "user" ? caller.user.username : `guest@${input.ip}`,
    });

    const thumbnail = await decodeAndThumbnail(file.bytes, inspection, group.maxPixels).catch(() => {
      throw badRequest(`The file content is not a valid ${extension.toUpperCase()} image.`);
    });
    const md5 = new Bun.CryptoHasher("md5").update(file.bytes).digest("hex");
    const sha1 = new Bun.CryptoHasher("sha1").update(file.bytes).digest("hex");

    const date = `${now.getUTCFullYear()}/${String(now.getUTCMonth() + 1).padStart(2, "0")}/${String(now.getUTCDate()).padStart(2, "0")}`;
    const stem = randomToken(15); // 120 bits
    const name = `${stem}.${extension}`;
    const path = `${date}/${name}`;
    const thumbnailPath = thumbnail ? `thumbnails/${date}/${stem}.webp` : null;

    /** Stores the objects on `target`, then records and charges in one transaction; undoes the store on failure. */
    const storeAndRecord = async (target: Strategy): Promise<ImageRow> => {
      const storage = deps.storage.for(target);
      const stored: string[] = [];
      const removeStored = () => Promise.allSettled(stored.map((p) => storage.delete(p)));
      try {
        await storage.put(path, file.bytes, mimetype);
        stored.push(path);
        if (thumbnailPath) {
          await storage.put(thumbnailPath, thumbnail!, "image/webp");
          stored.push(thumbnailPath);
        }
      } catch (e) {
        await removeStored();
        if (e instanceof StorageError) console.error(`upload: ${e.message}`);
        throw e instanceof StorageError ? new AppError("internal", "The storage service failed; nothing was stored.") : e;
      }
      try {
        return await deps.db.transaction(async (tx) => {
          await checkFrequency(tx, group, subject, now, true);
          if (caller.kind === "user" && !(await chargeUser(tx, caller.user.id, size, group.defaultCapacityKb))) {
            throw badRequest("Insufficient capacity.");
          }
          const row = await insertImage(tx, {
            key: randomToken(12),
            userId: caller.kind === "user" ? caller.user.id : null,
            albumId: input.albumId ?? null,
            strategyId: target.id,
            path,
            thumbnailPath,
            name,
            originName,
            size,
            mimetype,
            extension,
            width: inspection.width,
            height: inspection.height,
            md5,
            sha1,
            isPublic: input.isPublic,
            expiredAt: input.expiredAt ?? null,
            uploaderIp: input.ip,
            createdAt: now,
          });
          await recordUpload(tx, subject, now);
          // the strategy row is shared by every uploader: lock it last, so it is held only until commit
          if (!(await chargeStrategy(tx, target.id, size))) throw new QuotaExhausted(target);
          return row;
        });
      } catch (e) {
        await removeStored();
        throw e;
      }
    };

    // A concurrent upload may take the quota the selection saw. With strategy_id that is a refusal (rule 3);
    // without it, the next strategy in group order is tried, as rule 1 says.
    const tried: number[] = [];
    for (;;) {
      try {
        const image = await storeAndRecord(strategy);
        return toImageResource(image, strategy, deps.storage, deps.config.baseUrl);
      } catch (e) {
        if (!(e instanceof QuotaExhausted) || input.strategyId !== undefined) throw e;
        tried.push(strategy.id);
        strategy = await selectStrategy(deps, group.id, undefined, size, tried);
      }
    }
  } finally {
    await release();
  }
}

/**
 * Contract 4.2: with `strategy_id`, that strategy or a refusal (no fallback); without it, the first
 * strategy in group order whose remaining quota fits the file — so one that regains quota is preferred again.
 */
async function selectStrategy(
  deps: Deps,
  groupId: number,
  strategyId: number | undefined,
  size: number,
  exclude: number[] = [],
): Promise<Strategy> {
  const usable = (await listUsableStrategies(deps.db, groupId)).filter((s) => !exclude.includes(s.id));
  const fits = (s: Strategy) => s.quotaKb === null || s.usedBytes + size <= s.quotaKb * 1024;
  if (strategyId !== undefined) {
    const chosen = usable.find((s) => s.id === strategyId);
    if (!chosen) throw badRequest("The storage strategy is not available to your user group.");
    if (!fits(chosen)) throw badRequest(`The storage strategy "${chosen.name}" has not enough quota left.`);
    return chosen;
  }
  if (usable.length === 0 && exclude.length === 0) throw badRequest("Your user group has no storage strategy.");
  const first = usable.find(fits);
  if (!first) throw badRequest("No storage strategy of your user group has enough quota left.");
  return first;
}
