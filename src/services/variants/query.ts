/**
 * Variants on demand: `/i/<path>?w=<width>&format=<format>`, either parameter optional.
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
 *
 * This file: what an address asks for (the grammar) and what answers it; maker.ts makes and stores variants.
 */
import type { ImageRow } from "../../db/repositories/images.ts";
import type { Strategy } from "../../db/repositories/strategies.ts";
import type { VariantFormat } from "../../db/schema.ts";
import { badRequest } from "../../errors.ts";

export const LADDER = [160, 320, 640, 1280, 1920, 2560] as const;
const FORMATS = ["webp", "avif", "jpeg", "png", "auto"] as const;
type RequestedFormat = (typeof FORMATS)[number];
/** `?w=2560&format=jpeg` is 20 characters: anything much longer is not of the grammar. */
const MAX_QUERY = 64;

export interface VariantQuery {
  width: number | null;
  format: RequestedFormat | null;
}

/** Cold generations an address bucket may start per minute (per instance), background ones included; then its requests get a fallback and start none. */
export const COLD_PER_MINUTE = 30;

export const QUALITY: Record<VariantFormat, number> = { webp: 80, avif: 50, jpeg: 82, png: 100, gif: 100 };
export const MIME: Record<VariantFormat, string> = { webp: "image/webp", avif: "image/avif", jpeg: "image/jpeg", png: "image/png", gif: "image/gif" };
export const EXTENSION: Record<VariantFormat, string> = { webp: "webp", avif: "avif", jpeg: "jpg", png: "png", gif: "gif" };
export const ORIGINAL_FORMAT: Record<string, VariantFormat> = {
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
  if (search.length > MAX_QUERY)
    throw badRequest(`The query is too long: a variant is asked for with ?w=<width>&format=<format> (at most ${MAX_QUERY} characters).`);
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
type Resolved = { original: true } | { original: false; width: number; format: VariantFormat };

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

export function fallbackFormats(source: Pick<VariantSource, "image" | "animated">, format: VariantFormat): VariantFormat[] {
  const own = ORIGINAL_FORMAT[source.image.mimetype] ?? "jpeg";
  const chain: VariantFormat[] = source.animated ? ["webp", own] : ["avif", "webp", own];
  const at = chain.indexOf(format);
  return [...new Set(at >= 0 ? chain.slice(at + 1) : [own])].filter((f) => f !== format);
}

/** Background generations (made after a fallback was served) pending per instance at most; more are dropped. */
