/**
 * The upload (contract 4.3): the checks in the contract's order (checks.ts), then the objects made and stored and the
 * record written with its event in one transaction (store.ts).
 */
import type { Deps } from "../../deps.ts";
import { AppError } from "../../errors.ts";
import type { Caller } from "../caller.ts";
import { acquireUploadSlot, checkFrequency } from "../limits.ts";
import { addressBucket } from "../address.ts";
import { reviewContent } from "../review.ts";
import { logFor } from "../../observability/log.ts";
import { type RefusalReason, tagRefusal } from "../../observability/metrics.ts";
import { servicesOf } from "../index.ts";
import { type UploadInput, type StoredImage, RecordRefusal, QuotaExhausted } from "./input.ts";
import {
  checkFormat,
  checkMime,
  checkPixels,
  checkDecodeCost,
  checkSize,
  checkCapacity,
  checkStoragePermission,
  checkPlacement,
  checkRetention,
  checkEmailVerified,
} from "./checks.ts";
import { prepareObjects, storeWithFallback } from "./store.ts";

/** Who the frequency and concurrency limits count against: the account, or the guest's address. */
export const subjectOf = (caller: Caller, ip: string) => (caller.kind === "user" ? `user:${caller.user.id}` : `ip:${addressBucket(ip)}`);

/**
 * The group's concurrency slot of an upload, taken by the route before the body is read (cost before trust) and
 * held until the answer: a caller at its limit is refused before it can make the server hold its bytes.
 */
export async function takeUploadSlot(deps: Deps, caller: Caller, ip: string): Promise<() => Promise<void>> {
  await checkEmailVerified(deps, caller);
  try {
    return await acquireUploadSlot(deps.db, caller.group, subjectOf(caller, ip), deps.clock);
  } catch (e) {
    throw tagRefusal(e, "concurrency");
  }
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
    const inspection = await metrics.timeDecode("inspect", () => checkMime(upload));
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
    const reason =
      e instanceof RecordRefusal ? e.reason : e instanceof QuotaExhausted ? "storage_permission" : failed && step !== "storage_failure" ? "other" : step;
    throw tagRefusal(e, reason);
  }
}
