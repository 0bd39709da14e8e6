import type { Deps } from "../deps.ts";
import { eventStatement, imageEventData } from "../webhooks/events.ts";
import type { Group } from "../db/repositories/groups.ts";
import { type ImageRow, RecordRefused, recordAcceptedUpload } from "../db/repositories/images.ts";
import type { Strategy } from "../db/repositories/strategies.ts";
import { findAlbumForOwner } from "../db/repositories/users.ts";
import { AppError, badRequest } from "../errors.ts";
import { describeContent, type Extension, formats, isSupportedExtension, mimeAliases } from "../images/formats.ts";
import { DecodeOverBudget } from "../images/decoder.ts";
import { decodeAndThumbnail, type Inspection, inspectImage, isSmall, MAX_JPEG_SCANS, sniffMime } from "../images/inspect.ts";
import { applyMetadataPolicy, MetadataRefused } from "../images/metadata.ts";
import { planProcessing } from "../images/process.ts";
import { decoders, imageWork } from "./work-queue.ts";
import { StorageError } from "../storage/index.ts";
import type { Caller } from "./caller.ts";
import { acquireUploadSlot, checkFrequency, frequencyLimitsOf } from "./limits.ts";
import { addressBucket } from "./address.ts";
import { leaseUploadObjects } from "./removals.ts";
import { capacityKbOf } from "./profile.ts";
import { reviewContent } from "./review.ts";
import { usableStrategiesOf } from "./lookup-cache.ts";
import { randomToken } from "./secrets.ts";
import { type Logger, logFor } from "../observability/log.ts";
import { type RefusalReason, tagRefusal } from "../observability/metrics.ts";
import { servicesOf } from "./index.ts";

export interface UploadInput {
  caller: Caller;
  ip: string;
  file: { filename: string; contentType: string; bytes: Uint8Array };
  strategyId?: number;
  albumId?: number;
  isPublic: boolean;
  expiredAt?: Date;
}

/** What an accepted upload stored: the record, and the strategy it lives on. */
export interface StoredImage {
  image: ImageRow;
  strategy: Strategy;
}

/** The uploaded file as the checks see it. */
interface Upload {
  bytes: Uint8Array;
  size: number;
  originName: string;
  extension: Extension;
  mimetype: string;
  /** The Content-Type the client declared for the part ("" when absent). */
  declaredType: string;
}

/** A refusal of the record step (capacity or frequency, checked again atomically): a 400 that knows its reason. */
class RecordRefusal extends AppError {
  constructor(
    readonly reason: "capacity" | "frequency",
    message: string,
  ) {
    super("bad_request", message);
  }
}

class QuotaExhausted extends AppError {
  constructor(strategy: Strategy) {
    super("bad_request", `The storage strategy "${strategy.name}" has not enough quota left.`);
  }
}

const kb = (bytes: number) => Math.round((bytes / 1024) * 100) / 100;

/** Who the frequency and concurrency limits count against: the account, or the guest's address. */
export const subjectOf = (caller: Caller, ip: string) => (caller.kind === "user" ? `user:${caller.user.id}` : `ip:${addressBucket(ip)}`);

/**
 * The group's concurrency slot of an upload, taken by the route before the body is read (cost before trust) and
 * held until the answer: a caller at its limit is refused before it can make the server hold its bytes.
 */
export async function takeUploadSlot(deps: Deps, caller: Caller, ip: string): Promise<() => Promise<void>> {
  try {
    return await acquireUploadSlot(deps.db, caller.group, subjectOf(caller, ip), deps.clock);
  } catch (e) {
    throw tagRefusal(e, "concurrency");
  }
}

/** Line breaks and tabs become spaces; other controls, bidirectional overrides and isolates, zero-width characters: invisible, and able to disguise a name. */
const invisible = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;
const MAX_NAME = 255;

/** The name shown as `origin_name` and in snippets: the last path segment, without invisible characters, at most 255 characters with its extension kept. */
export function cleanFileName(filename: string): string {
  const name = (filename.split(/[\\/]/).pop() ?? "").replace(/[\t\r\n]/g, " ").replace(invisible, "").trim();
  const chars = [...name];
  if (chars.length <= MAX_NAME) return name || "image";
  const extension = extensionOf(name);
  const suffix = extension && extension.length < 16 ? `.${extension}` : "";
  return chars.slice(0, MAX_NAME - suffix.length).join("") + suffix;
}

export function extensionOf(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? "";
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : "";
}

/**
 * Contract 4.3: the checks run in the contract's order, before anything is stored; then the object and
 * its thumbnail are stored, and one transaction re-checks frequency, charges quota and capacity and
 * inserts the record. Storing fails → nothing recorded or charged. The transaction fails → the stored
 * objects are removed. The caller holds its concurrency slot (takeUploadSlot) from before its body was read
 * until the answer.
 */
export async function uploadImage(deps: Deps, input: UploadInput): Promise<StoredImage> {
  const { caller } = input;
  const group = caller.group;
  const now = deps.clock();
  const metrics = servicesOf(deps).metrics;
  let step: RefusalReason = "format";
  try {
    const upload = checkFormat(group, input.file);
    const inspection = await metrics.timeDecode("inspect", () => checkMime(group, upload));
    step = "dimensions";
    checkPixels(group, inspection);
    checkDecodeCost(inspection);
    step = "too_large";
    checkSize(group, upload);
    step = "capacity";
    checkCapacity(caller, upload);
    const subject = subjectOf(caller, input.ip);
    step = "frequency";
    await checkFrequency(deps.db, group, subject, now);
    step = "storage_permission";
    const strategy = await checkStoragePermission(deps, group, input.strategyId, upload.size);
    step = "bad_request";
    await checkPlacement(deps, input);
    const expiredAt = checkRetention(group, input.expiredAt, now);
    step = "review";
    await reviewContent(group, {
      bytes: upload.bytes,
      mimetype: upload.mimetype,
      originName: upload.originName,
      uploader: caller.kind === "user" ? caller.user.username : `guest@${input.ip}`,
    });
    step = "format";
    const objects = await metrics.timeDecode("thumbnail", () => prepareObjects(upload, inspection, group, now, subject, logFor(deps)));
    step = "storage_failure";
    const stored = await storeWithFallback(deps, { ...input, expiredAt }, subject, now, objects, strategy);
    metrics.uploadsAccepted.inc({ caller: caller.kind === "guest" ? "guest" : caller.tokenKind });
    metrics.storedBytes.inc(objects.upload.size + (objects.thumbnail?.bytes.byteLength ?? 0));
    return stored;
  } catch (e) {
    const failed = !(e instanceof AppError) || e.status >= 500;
    const reason = e instanceof RecordRefusal ? e.reason : e instanceof QuotaExhausted ? "storage_permission" : failed && step !== "storage_failure" ? "other" : step;
    throw tagRefusal(e, reason);
  }
}

/** Allowed formats: the file name has an extension the group accepts. */
function checkFormat(group: Group, file: UploadInput["file"]): Upload {
  const originName = cleanFileName(file.filename);
  const extension = extensionOf(originName);
  if (!extension) throw badRequest("The file name has no extension.");
  if (!isSupportedExtension(extension) || !group.allowedExtensions.includes(extension)) {
    throw badRequest(`Unsupported format .${extension}: allowed are ${group.allowedExtensions.map((e) => `.${e}`).join(", ")}.`);
  }
  const upload = { bytes: file.bytes, size: file.bytes.byteLength, originName, extension, mimetype: formats[extension], declaredType: file.contentType };
  if (upload.size === 0) throw new AppError("validation", "The file is empty.", { file: ["The file is empty."] });
  return upload;
}

/** MIME check: the declared type and the sniffed content agree with the extension. */
async function checkMime(group: Group, upload: Upload): Promise<Inspection> {
  const declared = mimeAliases[upload.declaredType] ?? upload.declaredType;
  if (declared && declared !== "application/octet-stream" && declared !== upload.mimetype) {
    throw badRequest(`The declared type ${upload.declaredType} does not match the .${upload.extension} extension.`);
  }
  const inspection = await inspectImage(upload.bytes).catch(refuseMetadata);
  if (!inspection || inspection.sniffedMime !== upload.mimetype) {
    // name what the content is, so the sender can fix the name instead of guessing
    const sniffed = inspection?.sniffedMime ?? (await sniffMime(upload.bytes));
    if (sniffed && sniffed !== upload.mimetype) {
      throw badRequest(`The file is named .${upload.extension} but its content is ${describeContent(sniffed)}: rename it, or send another file.`);
    }
    throw notAValidImage(upload);
  }
  return inspection;
}

/** Pixel count: what the header declares fits the group's limit (the decode is bounded by it). */
function checkPixels(group: Group, inspection: Inspection) {
  const { width, height } = inspection.declared;
  if (width * height > group.maxPixels) {
    throw badRequest(`The image has ${width}×${height} pixels; the limit is ${group.maxPixels} pixels.`);
  }
}

/** Part of the format check: an image whose decoding would cost far more than its pixels suggest is refused unread. */
function checkDecodeCost(inspection: Inspection) {
  if (inspection.scans > MAX_JPEG_SCANS) {
    throw badRequest(`The JPEG has ${inspection.scans} scans; at most ${MAX_JPEG_SCANS} are accepted (it would take too long to decode).`);
  }
}

/** The metadata surgery refused the bytes (a cap, or location it cannot remove): a 400 with its message. */
function refuseMetadata(e: unknown): never {
  if (e instanceof MetadataRefused) throw badRequest(e.message);
  throw e;
}

/**
 * Whether the metadata policy runs in-process: a file of at most STRIP_IN_PROCESS_BYTES whose image fits the
 * thumbnail box (decoded in-process too). Its surgery and verification are linear under the caps, a few ms at most
 * at this size; anything larger is stripped in the decode process (docs/decisions/metadata-surgery-placement.md).
 */
export const STRIP_IN_PROCESS_BYTES = 256 * 1024;
const stripsInProcess = (bytes: number, inspection: Inspection) => bytes <= STRIP_IN_PROCESS_BYTES && isSmall(inspection);

const notAValidImage = (upload: Upload) => badRequest(`The file content is not a valid ${upload.extension.toUpperCase()} image.`);

/** Per-image size of the group. */
function checkSize(group: Group, upload: Upload) {
  if (upload.size > group.maxFileSizeKb * 1024) {
    throw badRequest(`The file is ${kb(upload.size)} KB; the limit is ${group.maxFileSizeKb} KB.`);
  }
}

/** Remaining capacity of the account (re-checked atomically when charged). Guests have none to check. */
function checkCapacity(caller: Caller, upload: Upload) {
  if (caller.kind === "user" && caller.user.usedBytes + upload.size > capacityKbOf(caller.user, caller.group) * 1024) {
    throw badRequest("Insufficient capacity.");
  }
}

/**
 * Storage permission (contract 4.2): with `strategy_id`, that strategy or a refusal (no fallback);
 * without it, the first strategy in group order whose remaining quota fits the file — so one that
 * regains quota is preferred again. `exclude` holds strategies a concurrent upload has just filled.
 */
async function checkStoragePermission(
  deps: Deps,
  group: Group,
  strategyId: number | undefined,
  size: number,
  exclude: number[] = [],
): Promise<Strategy> {
  const usable = (await usableStrategiesOf(deps, group.id)).filter((s) => !exclude.includes(s.id));
  const fits = (s: Strategy) => s.quotaKb === null || s.usedBytes + size <= s.quotaKb * 1024;
  if (strategyId !== undefined) {
    const chosen = usable.find((s) => s.id === strategyId);
    if (!chosen) throw badRequest("The storage strategy is not available to your user group.");
    if (!fits(chosen)) throw new QuotaExhausted(chosen);
    return chosen;
  }
  if (usable.length === 0 && exclude.length === 0) throw badRequest("Your user group has no storage strategy.");
  const first = usable.find(fits);
  if (!first) throw badRequest("No storage strategy of your user group has enough quota left.");
  return first;
}

/** Album and visibility: an album must be the account's own; guests upload public images outside albums. */
async function checkPlacement(deps: Deps, input: UploadInput) {
  const { caller, albumId } = input;
  if (caller.kind === "guest") {
    if (albumId !== undefined) throw badRequest("Guests cannot upload into an album.");
    if (!input.isPublic) throw badRequest("Guests cannot upload private images.");
  } else if (albumId !== undefined && !(await findAlbumForOwner(deps.db, albumId, caller.user.id))) {
    throw badRequest("The album does not exist or is not yours.");
  }
}

/**
 * Image retention: `expired_at` is in the future (422) and within the group's ceiling (400). Answers when the
 * image expires: without `expired_at`, a group with a ceiling keeps the image exactly that long.
 */
function checkRetention(group: Group, expiredAt: Date | undefined, now: Date): Date | undefined {
  const ceiling = group.retentionMaxSeconds;
  if (!expiredAt) return ceiling === null ? undefined : new Date(now.getTime() + ceiling * 1000);
  if (expiredAt.getTime() <= now.getTime()) {
    throw new AppError("validation", "The expired_at must be in the future.", { expired_at: ["The expired_at must be in the future."] });
  }
  if (ceiling !== null && expiredAt.getTime() > now.getTime() + ceiling * 1000) {
    throw badRequest(`The expired_at is beyond the retention ceiling of ${ceiling} seconds for your group.`);
  }
  return expiredAt;
}


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
}

/**
 * What is stored of an accepted upload, and its thumbnail. First the group's metadata policy (issue 17 §1): lossless
 * surgery, verified, after every check (decided on the upload as sent) and before anything is hashed or stored, so the
 * same input always gives the same stored bytes; in-process for a small file, otherwise in the decode process as
 * part of the job that decodes it (one decode), under its budget. A file it refuses is a 400. Then, when the group processes uploads (§2) and this one needs it,
 * one job decodes it (which proves it whole), processes it and makes the thumbnail of the result; should that job
 * fail or overrun its budget, the upload is judged and stored as it is, by the usual decode. Otherwise that one decode
 * proves the image whole and yields the thumbnail (a WebP re-encode by sharp, which writes no EXIF or XMP). Decoding
 * an image larger than the thumbnail box waits its turn in the fair queue, so one caller's images cannot starve
 * another's; an image that is its own thumbnail is cheap and goes straight through.
 */
async function prepareObjects(sent: Upload, inspection: Inspection, group: Group, now: Date, subject: string, log: Logger): Promise<Objects> {
  // the metadata policy: in-process for a small file (its worst case is a few ms), otherwise in the decode process
  // with the decode, under its budget (docs/decisions/metadata-surgery-placement.md); a refusal is a 400
  let policy = group.metadata;
  let upload: Upload = sent;
  const withStripped = (bytes: Uint8Array | null | undefined) => {
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
    withStripped(stripped.changed ? stripped.bytes : null);
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
    if (processed?.metadata) withStripped(processed.metadata.bytes);
    if (processed && !(plan.onlyIfSmaller && processed.bytes.byteLength >= upload.size)) {
      upload = { ...upload, bytes: processed.bytes, size: processed.bytes.byteLength, mimetype: processed.mimetype, extension: processed.extension as Extension };
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
      if (prepared.metadata) withStripped(prepared.metadata.bytes);
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
  };
}

/**
 * A concurrent upload may take the quota the selection saw. With strategy_id that is a refusal (rule 3);
 * without it, the next strategy in group order is tried, as rule 1 says.
 */
async function storeWithFallback(
  deps: Deps,
  input: UploadInput,
  subject: string,
  now: Date,
  objects: Objects,
  first: Strategy,
): Promise<StoredImage> {
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
async function storeAndRecord(
  deps: Deps,
  input: UploadInput,
  subject: string,
  now: Date,
  objects: Objects,
  strategy: Strategy,
): Promise<ImageRow> {
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
        createdAt: now,
      };
      // the event commits with the record, in its one statement (issue 19): never sent for an upload that did not happen
      const event = eventStatement({
        type: "image.uploaded",
        ownerId: row.userId,
        subject: `image:${row.key}`,
        at: now,
        data: imageEventData({ ...row, id: 0 }, strategy, deps.storage, deps.config.baseUrl),
      });
      return await recordAcceptedUpload(
        deps.db,
        row,
        { subject, defaultCapacityKb: caller.group.defaultCapacityKb, limits: frequencyLimitsOf(caller.group) },
        lease.ids,
        event,
      );
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
