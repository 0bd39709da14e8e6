/** The checks of an upload, in the contract's order, before anything is stored: each refuses with a 400 saying why. */
import type { Deps } from "../../deps.ts";
import type { Group } from "../../db/repositories/groups.ts";
import type { Strategy } from "../../db/repositories/strategies.ts";
import { findAlbumForOwner } from "../../db/repositories/users.ts";
import { getSettings } from "../../db/repositories/settings.ts";
import { AppError, badRequest, forbidden } from "../../errors.ts";
import { describeContent, formats, isSupportedExtension, mimeAliases } from "../../images/formats.ts";
import { type Inspection, inspectImage, isSmall, MAX_JPEG_SCANS, sniffMime } from "../../images/inspect.ts";
import { MetadataRefused } from "../../images/metadata/policy.ts";
import type { Caller } from "../caller.ts";
import { servicesOf } from "../index.ts";
import { capacityKbOf } from "../profile.ts";
import { usableStrategiesOf } from "../lookup-cache.ts";
import { cleanFileName, extensionOf, kb, QuotaExhausted, type Upload, type UploadInput } from "./input.ts";

/** Allowed formats: the file name has an extension the group accepts. */
export function checkFormat(group: Group, file: UploadInput["file"]): Upload {
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
export async function checkMime(upload: Upload): Promise<Inspection> {
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
export function checkPixels(group: Group, inspection: Inspection) {
  const { width, height } = inspection.declared;
  if (width * height > group.maxPixels) {
    throw badRequest(`The image has ${width}×${height} pixels; the limit is ${group.maxPixels} pixels.`);
  }
}

/** Part of the format check: an image whose decoding would cost far more than its pixels suggest is refused unread. */
export function checkDecodeCost(inspection: Inspection) {
  if (inspection.scans > MAX_JPEG_SCANS) {
    throw badRequest(`The JPEG has ${inspection.scans} scans; at most ${MAX_JPEG_SCANS} are accepted (it would take too long to decode).`);
  }
}

/** The metadata surgery refused the bytes (a cap, or location it cannot remove): a 400 with its message. */
export function refuseMetadata(e: unknown): never {
  if (e instanceof MetadataRefused) throw badRequest(e.message);
  throw e;
}

/**
 * Whether the metadata policy runs in-process: a file of at most STRIP_IN_PROCESS_BYTES whose image fits the
 * thumbnail box (decoded in-process too). Its surgery and verification are linear under the caps, a few ms at most
 * at this size; anything larger is stripped in the decode process (docs/decisions/metadata-surgery-placement.md).
 */
export const STRIP_IN_PROCESS_BYTES = 256 * 1024;
export const stripsInProcess = (bytes: number, inspection: Inspection) => bytes <= STRIP_IN_PROCESS_BYTES && isSmall(inspection);

export const notAValidImage = (upload: Upload) => badRequest(`The file content is not a valid ${upload.extension.toUpperCase()} image.`);

/** Per-image size of the group. */
export function checkSize(group: Group, upload: Upload) {
  if (upload.size > group.maxFileSizeKb * 1024) {
    throw badRequest(`The file is ${kb(upload.size)} KB; the limit is ${group.maxFileSizeKb} KB.`);
  }
}

/**
 * An account that signed up while email verification is on uploads nothing until it has followed the link mailed to
 * it (services/mail/verification.ts): 403, before its body is read. Off, or for any other account, nothing changes.
 */
export async function checkEmailVerified(deps: Deps, caller: Caller) {
  if (caller.kind !== "user" || caller.user.emailVerified) return;
  const settings = await servicesOf(deps).lookups.remember("settings", () => getSettings(deps.db));
  if (settings.emailVerification) {
    throw forbidden("Verify your email address before uploading: follow the link mailed to you, or ask for a new one on the user center's page /user/verify.");
  }
}

/** Remaining capacity of the account (re-checked atomically when charged). Guests have none to check. */
export function checkCapacity(caller: Caller, upload: Upload) {
  if (caller.kind === "user" && caller.user.usedBytes + upload.size > capacityKbOf(caller.user, caller.group) * 1024) {
    throw badRequest("Insufficient capacity.");
  }
}

/**
 * Storage permission (contract 4.2): with `strategy_id`, that strategy or a refusal (no fallback);
 * without it, the first strategy in group order whose remaining quota fits the file — so one that
 * regains quota is preferred again. `exclude` holds strategies a concurrent upload has just filled.
 */
export async function checkStoragePermission(
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
export async function checkPlacement(deps: Deps, input: UploadInput) {
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
export function checkRetention(group: Group, expiredAt: Date | undefined, now: Date): Date | undefined {
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
