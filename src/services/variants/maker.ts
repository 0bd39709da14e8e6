/** Making and storing variants: in flight once per variant, within the cold budget, remembered when they cannot be had (see query.ts). */
import type { Deps } from "../../deps.ts";
import { boundsForImage, findVariant, forgetVariant, recordVariant, type VariantRow } from "../../db/repositories/variants.ts";
import type { VariantFormat } from "../../db/schema.ts";
import { AppError } from "../../errors.ts";
import { DecodeFailed, DecodeOverBudget } from "../../images/decoder.ts";
import { type Storage, StorageError } from "../../storage/index.ts";
import { logFor } from "../../observability/log.ts";
import { addressBucket } from "../address.ts";
import { leaseUploadObjects } from "../removals.ts";
import { randomToken } from "../secrets.ts";
import { decoders, imageWork } from "../work-queue.ts";
import { COLD_PER_MINUTE, QUALITY, MIME, EXTENSION, ORIGINAL_FORMAT, type VariantSource, variantKey, fallbackFormats } from "./query.ts";

const FAILURE_MS = 10 * 60_000;
/** An overrun may be the machine's load (the budget caps wall time too): it is remembered for a minute only. */
const OVERRUN_MS = 60_000;
const FAILURES_MAX = 10_000;

/**
 * Why a variant cannot be had now, none of it the client's to fix (docs/decisions/variant-fallback.md): the request
 * is answered with a fallback (a stored variant of a lower format at that width, else the original), never an error.
 * - over_budget: the decode process overran the decode budget (CPU, or wall time under load);
 * - undecodable: the decoder refused the original (damaged), or it is larger than the group's pixel limit;
 * - too_large: the result is larger than the group's max_file_size_kb (in this format);
 * - throttled: the client's address has used its cold budget for this minute;
 * - busy: the image work queue is full;
 * - storage: the storage failed to read the original or to write the variant.
 */
type UnavailableCause = "over_budget" | "undecodable" | "too_large" | "throttled" | "busy" | "storage";

export class VariantUnavailable extends Error {
  constructor(
    readonly kind: UnavailableCause,
    message: string,
  ) {
    super(message);
  }
}

/** The fallback chain of the snippet and of `auto` (AVIF, then WebP, then the original's format): what may stand in for `format`. */

const BACKGROUND_MAX = 8;
/** The image work queue's subject of background generations: one turn in its round robin, like any caller. */
const BACKGROUND_SUBJECT = "variants:background";

/** A fixed one-minute window per address bucket, per instance. */
class ColdBudget {
  private readonly windows = new Map<string, { start: number; count: number }>();
  constructor(public perMinute: number) {}

  /** Takes one cold generation for `bucket`; the seconds to wait when none is left. */
  take(bucket: string, now: number): number | null {
    let window = this.windows.get(bucket);
    if (!window || now - window.start >= 60_000) {
      if (this.windows.size >= 100_000) this.prune(now);
      window = { start: now, count: 0 };
      this.windows.set(bucket, window);
    }
    if (window.count >= this.perMinute) return Math.max(1, Math.ceil((window.start + 60_000 - now) / 1000));
    window.count++;
    return null;
  }

  private prune(now: number) {
    for (const [key, w] of this.windows) if (now - w.start >= 60_000) this.windows.delete(key);
    if (this.windows.size >= 100_000) this.windows.clear();
  }
}

/**
 * Variant generation of one app: the in-flight generations (one per variant per instance: a second request waits for
 * the first's result), the cold budget per address, and the decode processes (the same budget as an upload's decode;
 * the fair queue `imageWork` bounds how many decodes of this process run at once, uploads and variants together).
 */
export class Variants {
  private readonly inFlight = new Map<string, Promise<VariantRow>>();
  readonly budget = new ColdBudget(COLD_PER_MINUTE);
  /**
   * Variants that could not be made (the decoder refused the original, the budget ran out, the result was too large):
   * the same VariantUnavailable for FAILURE_MS (an overrun of the budget, which load can cause: OVERRUN_MS) without
   * another decode, so that asking again — from any number of addresses — costs nothing but the fallback. A variant
   * made later (in the background) clears its entry. Per instance, at most FAILURES_MAX entries (the oldest go first).
   */
  private readonly failures = new Map<string, { until: number; error: VariantUnavailable }>();
  /** Background generations pending, by the key of the variant whose failure started them. */
  private readonly background = new Map<string, Promise<void>>();

  constructor(private readonly deps: Deps) {}

  /**
   * The stored variant's row, made now when there is none (counted against `client`'s cold budget). Throws
   * VariantUnavailable when it cannot be had now (the caller serves a fallback), an AppError 404 when the original
   * is gone.
   */
  async obtain(source: VariantSource, width: number, format: VariantFormat, client: string): Promise<VariantRow> {
    const key = variantKey(source.image.id, width, format);
    const running = this.inFlight.get(key);
    if (running) return running;
    const failed = this.failures.get(key);
    if (failed && failed.until > Date.now()) throw failed.error;
    if (failed) this.failures.delete(key);
    const found = await findVariant(this.deps.db, source.image.id, width, format);
    if (found) return found;
    const again = this.inFlight.get(key); // started while we looked
    if (again) return again;
    const bucket = addressBucket(client);
    if (this.budget.take(bucket, Date.now()) !== null) {
      throw new VariantUnavailable("throttled", `Too many new variants asked for from your address: at most ${this.budget.perMinute} a minute.`);
    }
    return this.start(source, width, format, `ip:${bucket}`, (e) => this.later(source, width, format, e, bucket));
  }

  /** A stored variant (no generation): a fallback's candidate. */
  stored(source: VariantSource, width: number, format: VariantFormat): Promise<VariantRow | null> {
    return findVariant(this.deps.db, source.image.id, width, format);
  }

  /** Generates once per key (joined by concurrent askers); a failure the next ask would meet again is remembered. */
  private start(
    source: VariantSource,
    width: number,
    format: VariantFormat,
    subject: string,
    onFailure?: (e: VariantUnavailable) => void,
  ): Promise<VariantRow> {
    const key = variantKey(source.image.id, width, format);
    const made = this.generate(source, width, format, subject)
      .then((row) => {
        this.failures.delete(key);
        return row;
      })
      .catch((e) => {
        const cause = e instanceof VariantUnavailable ? e : unexpected(this.deps, e);
        if (!cause) throw e;
        if (cause.kind === "over_budget") this.remember(key, cause, OVERRUN_MS);
        else if (cause.kind === "undecodable" || cause.kind === "too_large") this.remember(key, cause, FAILURE_MS);
        if (cause.kind !== "busy") {
          logFor(this.deps).warn(
            { image_id: source.image.id, width, format, cause: cause.kind, reason: cause.message },
            "variant: not made now; a fallback is served",
          );
        }
        onFailure?.(cause);
        throw cause;
      })
      .finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, made);
    return made;
  }

  /**
   * After a failure, the better format is made in the background, so that a later request gets it: an overrun (load
   * may have caused it) tries the same variant again, then the lower formats; a result too large tries the lower
   * formats. A damaged original, a throttled client, a full queue or a failing storage start nothing. Each generation
   * is charged to the client's cold budget (a client causes no more generations than it could ask for) and queued as
   * one subject of the image work queue; at most BACKGROUND_MAX chains per instance, one per variant.
   */
  private later(source: VariantSource, width: number, format: VariantFormat, failure: VariantUnavailable, bucket: string) {
    const key = variantKey(source.image.id, width, format);
    const chain =
      failure.kind === "over_budget" ? [format, ...fallbackFormats(source, format)] : failure.kind === "too_large" ? fallbackFormats(source, format) : [];
    const own = ORIGINAL_FORMAT[source.image.mimetype];
    const formats = chain.filter((f) => !(f === own && width === source.image.width)); // that one is the original itself
    if (formats.length === 0 || this.background.has(key) || this.background.size >= BACKGROUND_MAX) return;
    const run = (async () => {
      for (const f of formats) {
        const k = variantKey(source.image.id, width, f);
        if (await this.stored(source, width, f)) return;
        if (this.budget.take(bucket, Date.now()) !== null) return;
        try {
          await (this.inFlight.get(k) ?? this.start(source, width, f, BACKGROUND_SUBJECT));
          return;
        } catch (e) {
          if (!(e instanceof VariantUnavailable) || (e.kind !== "over_budget" && e.kind !== "too_large")) return;
        }
      }
    })()
      .catch((e) => logFor(this.deps).error({ err: e, image_id: source.image.id }, "variant: the background generation failed"))
      .finally(() => this.background.delete(key));
    this.background.set(key, run);
  }

  /** Resolves when the background generations pending now are done (tests, a graceful stop). */
  async settled(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background.values()]);
  }

  private remember(key: string, error: VariantUnavailable, forMs: number) {
    if (this.failures.size >= FAILURES_MAX) this.failures.delete(this.failures.keys().next().value!);
    this.failures.set(key, { until: Date.now() + forMs, error });
  }

  /** The row's object is gone (removed by hand, lost): the row is dropped, and the next request makes it again. */
  async forget(row: VariantRow) {
    await forgetVariant(this.deps.db, row.id);
  }

  private async generate(source: VariantSource, width: number, format: VariantFormat, subject: string): Promise<VariantRow> {
    const { deps } = this;
    const { image } = source;
    const bounds = await boundsForImage(deps.db, image.userId);
    if (!bounds) throw new AppError("internal", "The image's group is missing.");
    if (image.width * image.height > bounds.maxPixels) {
      throw new VariantUnavailable(
        "undecodable",
        `The image has ${image.width}×${image.height} pixels; variants are made of images of at most ${bounds.maxPixels} pixels.`,
      );
    }
    const storage = deps.storage.for(source.strategy);
    const file = storage.readableFile(image.path);
    const input = file ? { file: file.name! } : await readOriginal(deps, source.strategy.id, storage, image.path);
    const bytes = await imageWork
      .run(subject, () =>
        decoders
          .variant(input, { width, format, quality: QUALITY[format], maxPixels: bounds.maxPixels, animated: source.animated })
          .catch((e: Error): never => {
            if (e instanceof DecodeOverBudget) throw new VariantUnavailable("over_budget", `The variant takes more than ${e.seconds} seconds to make.`);
            if (e instanceof DecodeFailed) throw new VariantUnavailable("undecodable", `The variant could not be made: ${e.message.slice(0, 200)}`);
            throw e;
          }),
      )
      .catch((e: unknown): never => {
        // the queue's own refusal (its bounds are full); the job's errors pass through
        if (e instanceof AppError && e.status === 429) throw new VariantUnavailable("busy", e.message);
        throw e;
      });
    if (bytes.byteLength > bounds.maxFileSizeKb * 1024) {
      throw new VariantUnavailable(
        "too_large",
        `The variant would be ${Math.ceil(bytes.byteLength / 1024)} KB, more than the ${bounds.maxFileSizeKb} KB an upload may be.`,
      );
    }
    const path = variantPath(image.path, width, format);
    // as an upload's objects: queued as pending removals before the write, taken back by the record step
    const lease = await leaseUploadObjects(deps, source.strategy.id, [path]);
    try {
      try {
        await storage.put(path, bytes, MIME[format]);
      } catch (e) {
        await lease.giveUp();
        if (!(e instanceof StorageError)) throw e;
        logFor(deps).error({ err: e, strategy_id: source.strategy.id }, "variant: the storage failed; nothing was stored");
        throw new VariantUnavailable("storage", "The storage service failed; the variant was not stored.");
      }
      const outcome = await recordVariant(deps.db, { imageId: image.id, width, format, path, size: bytes.byteLength }, lease.ids).catch(async (e) => {
        await lease.giveUp();
        throw e;
      });
      if ("recorded" in outcome) return outcome.recorded;
      await lease.giveUp();
      if (outcome.refused === "exists") {
        const other = await findVariant(deps.db, image.id, width, format); // another instance made it first
        if (other) return other;
      }
      throw new AppError("not_found", "Not found.");
    } finally {
      lease.stop();
    }
  }
}

/**
 * An error no variant cause names (a database or programming error): logged, and a fallback served all the same (the
 * original's facts are known); a 404 (the image is gone) stays a 404.
 */
function unexpected(deps: Deps, e: unknown): VariantUnavailable | null {
  if (e instanceof AppError && e.status === 404) return null;
  logFor(deps).error({ err: e instanceof AppError ? (e.cause ?? e) : e }, "variant: failed");
  return new VariantUnavailable("storage", "The variant could not be made now.");
}

/** `variants/<the image's folder>/<its stem>_<width>_<random>.<ext>`: a fresh name per generation, never overwritten. */
function variantPath(imagePath: string, width: number, format: VariantFormat): string {
  const slash = imagePath.lastIndexOf("/");
  const folder = slash >= 0 ? imagePath.slice(0, slash) : "";
  const stem = imagePath.slice(slash + 1).replace(/\.[^.]*$/, "");
  return `variants/${folder ? `${folder}/` : ""}${stem}_${width}_${randomToken(6)}.${EXTENSION[format]}`;
}

/**
 * The original of a storage that serves its own addresses (S3), read through the storage itself (with the strategy's
 * credentials: a private bucket, or a public address this server cannot reach, works the same). Gone: a 404.
 */
async function readOriginal(deps: Deps, strategyId: number, storage: Storage, path: string): Promise<Uint8Array> {
  try {
    return await storage.read(path);
  } catch (e) {
    if (!(e instanceof StorageError)) throw e;
    if (e.missing) throw new AppError("not_found", "Not found.");
    logFor(deps).error({ err: e, strategy_id: strategyId }, "variant: the storage failed to read the original");
    throw new VariantUnavailable("storage", "The storage service failed; the variant was not made.");
  }
}
