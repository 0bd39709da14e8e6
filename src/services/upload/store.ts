/** The objects of an accepted upload: made (the file under a fresh name, its thumbnail), stored, and recorded with its event. */
import type { Deps } from "../../deps.ts";
import { eventStatement, imageEventData } from "../../webhooks/events.ts";
import type { Group } from "../../db/repositories/groups.ts";
import type { MetadataRemoved } from "../../db/schema.ts";
import { type ImageRow, RecordRefused, recordAcceptedUpload, recordMetadataRemoved } from "../../db/repositories/images.ts";
import type { Strategy } from "../../db/repositories/strategies.ts";
import { AppError, badRequest } from "../../errors.ts";
import type { Extension } from "../../images/formats.ts";
import { DecodeOverBudget } from "../../images/decoder.ts";
import { decodeAndThumbnail, type Inspection, isSmall } from "../../images/inspect.ts";
import { applyMetadataPolicy, MetadataRefused } from "../../images/metadata/policy.ts";
import { planProcessing } from "../../images/process.ts";
import { decoders, imageWork } from "../work-queue.ts";
import { StorageError } from "../../storage/index.ts";
import { frequencyLimitsOf } from "../limits.ts";
import { leaseUploadObjects } from "../removals.ts";
import { randomToken } from "../secrets.ts";
import { type Logger, logFor } from "../../observability/log.ts";
import { type UploadInput, type StoredImage, type Upload, RecordRefusal, QuotaExhausted } from "./input.ts";
import { refuseMetadata, stripsInProcess, notAValidImage, checkStoragePermission } from "./checks.ts";

/** The objects to store: the file under a fresh unguessable name, and its thumbnail when it needs one. */
interface Objects {
  /** The upload as it is stored: its bytes, size, format after the group's metadata policy and processing (what is hashed, charged and served). */
  upload: Upload;
  /** Its dimensions as stored. */
  width: number;
  height: number;
  name: string;
  path: string;
  thumbnail: { path: string; bytes: Uint8Array } | null;
  md5: string;
  sha1: string;
  /** What the group's metadata policy removed (the image page says it). */
  metadataRemoved: MetadataRemoved;
}

/**
 * What is stored of an accepted upload, and its thumbnail. First the group's metadata policy: lossless
 * surgery, verified, after every check (decided on the upload as sent) and before anything is hashed or stored, so the
 * same input always gives the same stored bytes; in-process for a small file, otherwise in the decode process as
 * part of the job that decodes it (one decode), under its budget. A file it refuses is a 400. Then, when the group processes uploads and this one needs it,
 * one job decodes it (which proves it whole), processes it and makes the thumbnail of the result; should that job
 * fail or overrun its budget, the upload is judged and stored as it is, by the usual decode. Otherwise that one decode
 * proves the image whole and yields the thumbnail (a WebP re-encode by sharp, which writes no EXIF or XMP). Decoding
 * an image larger than the thumbnail box waits its turn in the fair queue, so one caller's images cannot starve
 * another's; an image that is its own thumbnail is cheap and goes straight through.
 */
export async function prepareObjects(sent: Upload, inspection: Inspection, group: Group, now: Date, subject: string, log: Logger): Promise<Objects> {
  // the metadata policy: in-process for a small file (its worst case is a few ms), otherwise in the decode process
  // with the decode, under its budget (docs/decisions/metadata-surgery-placement.md); a refusal is a 400
  let policy = group.metadata;
  let upload: Upload = sent;
  const metadataRemoved: MetadataRemoved = { removed: [] };
  const withStripped = (bytes: Uint8Array | null | undefined, removed: string[]) => {
    if (removed.length > 0) Object.assign(metadataRemoved, { policy, removed });
    policy = "keep"; // applied
    if (bytes) upload = { ...upload, bytes, size: bytes.byteLength };
  };
  if (policy !== "keep" && stripsInProcess(sent.size, inspection)) {
    const stripped = (() => {
      try {
        return applyMetadataPolicy(sent.bytes, sent.mimetype, policy);
      } catch (e) {
        return refuseMetadata(e);
      }
    })();
    withStripped(stripped.changed ? stripped.bytes : null, stripped.removed);
  }
  let size = { width: inspection.width, height: inspection.height };
  let thumbnail: Uint8Array | null | undefined;
  const plan = planProcessing(group, { ...upload, ...size, pages: inspection.pages }, true);
  if (plan) {
    const processed = await imageWork
      .run(subject, () => decoders.process(upload.bytes, { plan, maxPixels: group.maxPixels, policy, mimetype: upload.mimetype }))
      .catch((e: Error) => {
        if (e instanceof AppError) throw e; // the fair queue's refusal (busy)
        if (e instanceof MetadataRefused) refuseMetadata(e);
        log.warn({ err: e.message, steps: plan.steps, format: plan.format }, "upload: processing failed; the upload is stored as it is");
        return null;
      });
    if (processed?.metadata) withStripped(processed.metadata.bytes, processed.metadata.removed);
    if (processed && !(plan.onlyIfSmaller && processed.bytes.byteLength >= upload.size)) {
      upload = {
        ...upload,
        bytes: processed.bytes,
        size: processed.bytes.byteLength,
        mimetype: processed.mimetype,
        extension: processed.extension as Extension,
      };
      size = { width: processed.width, height: processed.height };
      thumbnail = processed.thumbnail;
    }
  }
  if (thumbnail === undefined) {
    const refuse = (e: Error): never => {
      if (e instanceof DecodeOverBudget) throw badRequest(`The image takes more than ${e.seconds} seconds to decode.`);
      if (e instanceof MetadataRefused) refuseMetadata(e);
      throw notAValidImage(upload);
    };
    const job = { size: inspection, mimetype: upload.mimetype, maxPixels: group.maxPixels, policy };
    if (isSmall(inspection) && policy === "keep") {
      thumbnail = await decodeAndThumbnail(upload.bytes, inspection, upload.mimetype, group.maxPixels).catch(refuse);
    } else {
      const prepared = await imageWork.run(subject, () => decoders.prepare(upload.bytes, job).catch(refuse));
      if (prepared.metadata) withStripped(prepared.metadata.bytes, prepared.metadata.removed);
      thumbnail = prepared.thumbnail;
    }
  }
  const date = `${now.getUTCFullYear()}/${String(now.getUTCMonth() + 1).padStart(2, "0")}/${String(now.getUTCDate()).padStart(2, "0")}`;
  const stem = randomToken(15); // 120 bits
  const name = `${stem}.${upload.extension}`;
  return {
    upload,
    ...size,
    name,
    path: `${date}/${name}`,
    thumbnail: thumbnail ? { path: `thumbnails/${date}/${stem}.webp`, bytes: thumbnail } : null,
    md5: new Bun.CryptoHasher("md5").update(upload.bytes).digest("hex"),
    sha1: new Bun.CryptoHasher("sha1").update(upload.bytes).digest("hex"),
    metadataRemoved,
  };
}

/**
 * A concurrent upload may take the quota the selection saw. With strategy_id that is a refusal (rule 3);
 * without it, the next strategy in group order is tried, as rule 1 says.
 */
export async function storeWithFallback(deps: Deps, input: UploadInput, subject: string, now: Date, objects: Objects, first: Strategy): Promise<StoredImage> {
  const tried: number[] = [];
  for (let strategy = first; ; ) {
    try {
      return { image: await storeAndRecord(deps, input, subject, now, objects, strategy), strategy };
    } catch (e) {
      if (!(e instanceof QuotaExhausted) || input.strategyId !== undefined) throw e;
      tried.push(strategy.id);
      strategy = await checkStoragePermission(deps, input.caller.group, undefined, objects.upload.size, tried);
    }
  }
}

/**
 * Stores the objects on `strategy`, then records and charges in one transaction; undoes the store on failure.
 *
 * Before the first byte is written, the planned paths are queued as pending removals held by this upload's lease
 * (services/removals.ts): renewed while it lives, deleted by the transaction that records the image. What each
 * failure leaves:
 * - the database refuses the queueing: nothing written, the upload fails;
 * - the storage fails: the objects written are removed now (or, storage still failing, retried by the workers);
 * - the record step refuses or fails: the same, for the rows still there — after an error whose commit did happen
 *   the rows are gone with it and the recorded objects stay;
 * - the process dies anywhere: the rows lapse within LEASE_SECONDS and any instance's worker removes the objects
 *   and the write's temporary file; the reconciler's hour is no longer what bounds them.
 */
async function storeAndRecord(deps: Deps, input: UploadInput, subject: string, now: Date, objects: Objects, strategy: Strategy): Promise<ImageRow> {
  const { caller } = input;
  const { upload, thumbnail } = objects;
  const storage = deps.storage.for(strategy);
  const lease = await leaseUploadObjects(deps, strategy.id, thumbnail ? [objects.path, thumbnail.path] : [objects.path]);
  try {
    try {
      await storage.put(objects.path, upload.bytes, upload.mimetype);
      if (thumbnail) await storage.put(thumbnail.path, thumbnail.bytes, "image/webp");
    } catch (e) {
      await lease.giveUp();
      if (!(e instanceof StorageError)) throw e;
      logFor(deps).error({ err: e, strategy_id: strategy.id }, "upload: the storage failed; the objects written were removed");
      throw new AppError("internal", "The storage service failed; nothing was stored.");
    }
    try {
      const row = {
        key: randomToken(12),
        userId: caller.kind === "user" ? caller.user.id : null,
        albumId: input.albumId ?? null,
        strategyId: strategy.id,
        path: objects.path,
        thumbnailPath: thumbnail?.path ?? null,
        name: objects.name,
        originName: upload.originName,
        size: upload.size,
        mimetype: upload.mimetype,
        extension: upload.extension,
        width: objects.width,
        height: objects.height,
        md5: objects.md5,
        sha1: objects.sha1,
        isPublic: input.isPublic,
        expiredAt: input.expiredAt ?? null,
        uploaderIp: input.ip,
        metadataRemoved: objects.metadataRemoved,
        createdAt: now,
      };
      // the event commits with the record, in its one statement: never sent for an upload that did not happen
      const event = eventStatement({
        type: "image.uploaded",
        ownerId: row.userId,
        subject: `image:${row.key}`,
        at: now,
        data: imageEventData({ ...row, id: 0 }, strategy, deps.storage, deps.config.baseUrl),
      });
      const recorded = await recordAcceptedUpload(
        deps.db,
        row,
        { subject, defaultCapacityKb: caller.group.defaultCapacityKb, limits: frequencyLimitsOf(caller.group) },
        lease.ids,
        event,
      );
      // only an upload the policy changed pays this statement; its failure leaves "nothing removed" on the record
      if (row.metadataRemoved.removed.length > 0) {
        await recordMetadataRemoved(deps.db, recorded.id, row.metadataRemoved).catch((e: Error) =>
          logFor(deps).warn({ err: e.message, key: row.key }, "upload: what the metadata policy removed was not recorded"),
        );
      }
      return recorded;
    } catch (e) {
      await lease.giveUp();
      if (!(e instanceof RecordRefused)) throw e;
      if (e.reason === "quota") throw new QuotaExhausted(strategy);
      if (e.reason === "lease") {
        logFor(deps).error({ strategy_id: strategy.id }, "upload: its lease lapsed before the record step; its objects were given up");
        throw new AppError("internal", "The upload took too long to store; nothing was stored.");
      }
      throw new RecordRefusal(e.reason, e.message);
    }
  } finally {
    lease.stop();
  }
}
