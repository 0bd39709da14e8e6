import type { Deps } from "../deps.ts";
import type { ImageRow } from "../db/repositories/images.ts";
import type { Strategy } from "../db/repositories/strategies.ts";
import { boundsForImage, findVariant, forgetVariant, recordVariant, type VariantRow } from "../db/repositories/variants.ts";
import type { VariantFormat } from "../db/schema.ts";
import { AppError, badRequest } from "../errors.ts";
import { DecodeFailed, DecodeOverBudget } from "../images/decoder.ts";
import { type Storage, StorageError } from "../storage/index.ts";
import { logFor } from "../observability/log.ts";
import { addressBucket } from "./address.ts";
import { leaseUploadObjects } from "./removals.ts";
import { randomToken } from "./secrets.ts";
import { decoders, imageWork } from "./work-queue.ts";

/**
 * Variants on demand (issue 17 §3): `/i/<path>?w=<width>&format=<format>`, either parameter optional.
 *
 * - The grammar is closed: `w` from LADDER, `format` from FORMATS, each at most once, nothing else, the query at
 *   most MAX_QUERY characters, spelled exactly (no percent-encoding, no leading zeros, lower case). Anything else is
 *   a 400 before the database is asked.
 * - A width at or above the original's is the original's width: one variant per format for all of those ladder
 *   entries (the original's pixels re-encoded), and when the format is also the original's, the original itself.
 * - Per image, at most (LADDER.length + 1) widths × 4 formats, less the original itself (+ a GIF per width for an
 *   animated GIF), each at most the group's max_file_size_kb: a bigger result is not stored.
 * - A variant that cannot be had now (VariantUnavailable: over the decode budget, a damaged original, too large, the
 *   client's cold budget spent, the queue full, the storage failing) is never an error: the object server answers a
 *   fallback with a short cache lifetime, and the better format is made in the background
 *   (docs/decisions/variant-fallback.md). Only what the client can fix (the grammar, a format an animation cannot
 *   take) is a 400.
 */
export const LADDER = [160, 320, 640, 1280, 1920, 2560] as const;
export const FORMATS = ["webp", "avif", "jpeg", "png", "auto"] as const;
export type RequestedFormat = (typeof FORMATS)[number];
/** `?w=2560&format=jpeg` is 20 characters: anything much longer is not of the grammar. */
export const MAX_QUERY = 64;

export interface VariantQuery {
  width: number | null;
  format: RequestedFormat | null;
}

/** Cold generations an address bucket may start per minute (per instance), background ones included; then its requests get a fallback and start none. */
export const COLD_PER_MINUTE = 30;

const QUALITY: Record<VariantFormat, number> = { webp: 80, avif: 50, jpeg: 82, png: 100, gif: 100 };
const MIME: Record<VariantFormat, string> = { webp: "image/webp", avif: "image/avif", jpeg: "image/jpeg", png: "image/png", gif: "image/gif" };
const EXTENSION: Record<VariantFormat, string> = { webp: "webp", avif: "avif", jpeg: "jpg", png: "png", gif: "gif" };
const ORIGINAL_FORMAT: Record<string, VariantFormat> = {
  "image/webp": "webp",
  "image/avif": "avif",
  "image/jpeg": "jpeg",
  "image/png": "png",
  "image/gif": "gif",
};

/**
 * Parses the query of an object address (`url.search`, with its `?`): null for none (the original), the variant
 * asked for, or an AppError (400) for anything outside the grammar.
 */
export function parseVariantQuery(search: string): VariantQuery | null {
  if (search === "" || search === "?") return null;
  if (search.length > MAX_QUERY) throw badRequest(`The query is too long: a variant is asked for with ?w=<width>&format=<format> (at most ${MAX_QUERY} characters).`);
  const query: VariantQuery = { width: null, format: null };
  const seen = new Set<string>();
  for (const part of search.slice(1).split("&")) {
    const eq = part.indexOf("=");
    const name = eq < 0 ? part : part.slice(0, eq);
    const value = eq < 0 ? null : part.slice(eq + 1);
    if (name !== "w" && name !== "format") throw grammar(`unknown parameter "${name.slice(0, 20)}"`);
    if (seen.has(name)) throw grammar(`"${name}" is given more than once`);
    seen.add(name);
    if (name === "w") {
      const width = LADDER.find((w) => String(w) === value);
      if (width === undefined) throw grammar(`w must be one of ${LADDER.join(", ")}`);
      query.width = width;
    } else {
      const format = FORMATS.find((f) => f === value);
      if (format === undefined) throw grammar(`format must be one of ${FORMATS.join(", ")}`);
      query.format = format;
    }
  }
  return query;
}

const grammar = (what: string) =>
  badRequest(`Not a variant address: ${what}. Ask for ?w=<${LADDER.join("|")}>&format=<${FORMATS.join("|")}>, either parameter optional.`);

/** Whether an Accept header accepts a media type by name (`image/avif`), not merely by a wildcard, with q > 0. */
function accepts(accept: string, mime: string): boolean {
  for (const range of accept.toLowerCase().split(",")) {
    const [type, ...params] = range.trim().split(";");
    if (type?.trim() !== mime) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}

/** What an image is, as variants need it. */
export interface VariantSource {
  image: Pick<ImageRow, "id" | "path" | "mimetype" | "width" | "height" | "userId">;
  strategy: Pick<Strategy, "id" | "driver" | "config">;
  /** An animated GIF (several frames). */
  animated: boolean;
}

/** The variant to serve: its effective width and output format, or the original itself. */
export type Resolved = { original: true } | { original: false; width: number; format: VariantFormat };

/**
 * The variant a query names for an image: `auto` reads Accept (AVIF, else WebP, else the original's format when a
 * browser shows it, else JPEG); no format keeps the original's (JPEG for a TIFF). An animated GIF keeps its
 * animation (WebP or GIF) or is refused: never only its first frame.
 */
export function resolveVariant(source: VariantSource, query: VariantQuery, accept: string | null): Resolved {
  const own = ORIGINAL_FORMAT[source.image.mimetype];
  let format: VariantFormat;
  if (query.format === "auto") {
    const header = accept ?? "";
    if (source.animated) format = accepts(header, "image/webp") ? "webp" : "gif";
    else if (accepts(header, "image/avif")) format = "avif";
    else if (accepts(header, "image/webp")) format = "webp";
    else format = own ?? "jpeg";
  } else format = query.format ?? own ?? "jpeg";
  if (source.animated && format !== "webp" && format !== "gif") {
    throw badRequest(`This image is an animated GIF: its variants keep the animation, as webp or as a GIF (no format); ${format} has no animation.`);
  }
  const width = Math.min(query.width ?? source.image.width, source.image.width);
  if (width === source.image.width && format === own) return { original: true };
  return { original: false, width, format };
}

export const variantKey = (imageId: number, width: number, format: VariantFormat) => `${imageId}:${width}:${format}`;
export const variantMime = (format: VariantFormat) => MIME[format];

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
export type UnavailableCause = "over_budget" | "undecodable" | "too_large" | "throttled" | "busy" | "storage";

export class VariantUnavailable extends Error {
  constructor(
    readonly kind: UnavailableCause,
    message: string,
  ) {
    super(message);
  }
}

/** The fallback chain of the snippet and of `auto` (AVIF, then WebP, then the original's format): what may stand in for `format`. */
export function fallbackFormats(source: Pick<VariantSource, "image" | "animated">, format: VariantFormat): VariantFormat[] {
  const own = ORIGINAL_FORMAT[source.image.mimetype] ?? "jpeg";
  const chain: VariantFormat[] = source.animated ? ["webp", own] : ["avif", "webp", own];
  const at = chain.indexOf(format);
  return [...new Set(at >= 0 ? chain.slice(at + 1) : [own])].filter((f) => f !== format);
}

/** Background generations (made after a fallback was served) pending per instance at most; more are dropped. */
export const BACKGROUND_MAX = 8;
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
  private start(source: VariantSource, width: number, format: VariantFormat, subject: string, onFailure?: (e: VariantUnavailable) => void): Promise<VariantRow> {
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
          logFor(this.deps).warn({ image_id: source.image.id, width, format, cause: cause.kind, reason: cause.message }, "variant: not made now; a fallback is served");
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
    const chain = failure.kind === "over_budget" ? [format, ...fallbackFormats(source, format)] : failure.kind === "too_large" ? fallbackFormats(source, format) : [];
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
      throw new VariantUnavailable("undecodable", `The image has ${image.width}×${image.height} pixels; variants are made of images of at most ${bounds.maxPixels} pixels.`);
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
      throw new VariantUnavailable("too_large", `The variant would be ${Math.ceil(bytes.byteLength / 1024)} KB, more than the ${bounds.maxFileSizeKb} KB an upload may be.`);
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

