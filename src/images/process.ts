import sharp from "sharp";
import { avifOptions } from "./avif.ts";
import { decodeAndThumbnail } from "./inspect.ts";
import { jpegQuality } from "./jpeg.ts";

/**
 * Processing on upload: what a group does to the pixels of what it stores. Off unless an administrator
 * turns it on (every field null). Runs after every check (refusals are decided on the upload as sent) and after the
 * metadata policy (so a processed image carries no more metadata than the policy lets through).
 */
export const CONVERT_FORMATS = ["webp", "avif", "jpeg"] as const;
export type ConvertFormat = (typeof CONVERT_FORMATS)[number];

interface ProcessingPolicy {
  /** Convert every upload in another format to this one; null: keep each upload's format. */
  convertFormat: ConvertFormat | null;
  /** The quality of a conversion (1-100; also of a WebP or AVIF re-encoded because it was downscaled). */
  convertQuality: number;
  /** Downscale (never enlarge) anything wider or taller than these, keeping the aspect ratio; null: no bound. */
  maxWidth: number | null;
  maxHeight: number | null;
  /** Re-encode a JPEG whose estimated quality is above this, at this quality; null: never for its quality alone. */
  jpegMaxQuality: number | null;
}

type OutputFormat = "webp" | "avif" | "jpeg" | "png" | "gif" | "tiff";

const OWN_FORMAT: Record<string, OutputFormat> = {
  "image/jpeg": "jpeg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/avif": "avif",
  "image/tiff": "tiff",
};
const OUTPUT: Record<OutputFormat, { mimetype: string; extension: string }> = {
  webp: { mimetype: "image/webp", extension: "webp" },
  avif: { mimetype: "image/avif", extension: "avif" },
  jpeg: { mimetype: "image/jpeg", extension: "jpg" },
  png: { mimetype: "image/png", extension: "png" },
  gif: { mimetype: "image/gif", extension: "gif" },
  tiff: { mimetype: "image/tiff", extension: "tiff" },
};

/** What processing does to one upload: decided from its header, without decoding. */
export interface ProcessPlan {
  format: OutputFormat;
  /** 1-100 for the lossy formats; ignored by png, gif and tiff (lossless here). */
  quality: number;
  maxWidth: number | null;
  maxHeight: number | null;
  /** Keep every frame (an animated GIF or WebP); otherwise one frame. */
  animated: boolean;
  /** Only a quality re-encode of a JPEG: kept only when it is smaller than the JPEG as sent. */
  onlyIfSmaller: boolean;
  /** Keep the (already policy-stripped) EXIF and XMP; otherwise only the ICC profile. */
  keepMetadata: boolean;
  /** What is done, for the log: "downscale", "convert", "quality". */
  steps: string[];
}

/** A JPEG downscaled without a quality to go by (no standard table 0) is re-encoded at this quality. */
const UNKNOWN_JPEG_QUALITY = 90;

const processingIsOn = (p: ProcessingPolicy) => p.convertFormat !== null || p.maxWidth !== null || p.maxHeight !== null || p.jpegMaxQuality !== null;

/**
 * The plan for an upload, or null when the group's processing leaves it as it is:
 * - downscale when it is larger than max_width × max_height (every frame of an animation);
 * - convert when its format is not convert_format; an animation only to WebP (the one target that animates here):
 *   to AVIF or JPEG it keeps its own format, never just its first frame;
 * - a JPEG (sent as one, or converted to one) estimated above jpeg_max_quality, or above convert_quality when
 *   convert_format is jpeg, is re-encoded at that quality; alone, that re-encode is kept only when it is smaller.
 * An image already in the target format is not re-encoded for the conversion's sake (no generation loss).
 */
export function planProcessing(
  policy: ProcessingPolicy,
  upload: { bytes: Uint8Array; mimetype: string; width: number; height: number; pages: number },
  /** The upload's metadata already is what the group's policy lets through (`keep`, or stripped losslessly). */
  metadataConforms: boolean,
): ProcessPlan | null {
  if (!processingIsOn(policy)) return null;
  const own = OWN_FORMAT[upload.mimetype];
  if (!own) return null;
  const animated = upload.pages > 1 && (own === "gif" || own === "webp");
  const steps: string[] = [];
  const downscale = (policy.maxWidth !== null && upload.width > policy.maxWidth) || (policy.maxHeight !== null && upload.height > policy.maxHeight);
  if (downscale) steps.push("downscale");
  let format: OutputFormat = own;
  if (policy.convertFormat && policy.convertFormat !== own && (!animated || policy.convertFormat === "webp")) {
    format = policy.convertFormat;
    steps.push("convert");
  }
  const jpegCap = Math.min(policy.jpegMaxQuality ?? 100, policy.convertFormat === "jpeg" ? policy.convertQuality : 100);
  let quality = policy.convertQuality;
  if (format === "jpeg" && own === "jpeg") {
    const sent = jpegQuality(upload.bytes);
    if (sent !== null && sent > jpegCap) steps.push("quality");
    quality = Math.min(sent ?? UNKNOWN_JPEG_QUALITY, jpegCap);
  } else if (format === "jpeg") quality = Math.min(policy.convertQuality, jpegCap);
  if (steps.length === 0) return null;
  return {
    format,
    quality,
    maxWidth: policy.maxWidth,
    maxHeight: policy.maxHeight,
    animated,
    onlyIfSmaller: steps.length === 1 && steps[0] === "quality",
    keepMetadata: metadataConforms,
    steps,
  };
}

export interface ProcessedImage {
  bytes: Uint8Array;
  mimetype: string;
  extension: string;
  width: number;
  height: number;
  /** Its thumbnail, made from the processed image (null when it is its own). */
  thumbnail: Uint8Array | null;
}

/**
 * Carries out a plan (in a decode process: see decoder.ts): the orientation applied to the pixels (so the stored
 * image needs no EXIF orientation), downscaled to fit the box, encoded. Metadata: the input's, already stripped by
 * the group's policy, is kept (`keepMetadata()`; the orientation becomes 1), or for a format the policy could not
 * strip, only the ICC profile. JPEG has no alpha: transparency is flattened onto white.
 */
export async function processImage(input: Uint8Array | string, plan: ProcessPlan, maxPixels: number): Promise<ProcessedImage> {
  let image = sharp(input, { limitInputPixels: maxPixels, failOn: "error", animated: plan.animated, ...(plan.animated ? {} : { pages: 1 }) });
  if (plan.animated) {
    const meta = await image.metadata();
    const frames = meta.pages ?? 1;
    const framePixels = (meta.width ?? 0) * (meta.pageHeight ?? meta.height ?? 0);
    if (frames * framePixels > maxPixels) throw new Error(`the animation has ${frames} frames of ${framePixels} pixels, more than ${maxPixels} in all`);
  }
  image = image.rotate();
  if (plan.maxWidth !== null || plan.maxHeight !== null) {
    image = image.resize(plan.maxWidth ?? undefined, plan.maxHeight ?? undefined, { fit: "inside", withoutEnlargement: true });
  }
  image = plan.keepMetadata ? image.keepMetadata() : image.keepIccProfile();
  switch (plan.format) {
    case "webp":
      image = image.webp({ quality: plan.quality });
      break;
    case "avif":
      image = image.avif(avifOptions(plan.quality));
      break;
    case "jpeg":
      image = image.flatten({ background: "#ffffff" }).jpeg({ quality: plan.quality });
      break;
    case "png":
      image = image.png({ compressionLevel: 9 });
      break;
    case "gif":
      image = image.gif();
      break;
    case "tiff":
      image = image.tiff({ compression: "lzw" });
      break;
  }
  const { data, info } = await image.toBuffer({ resolveWithObject: true });
  const size = { width: info.width, height: plan.animated && info.pageHeight ? info.pageHeight : info.height };
  const { mimetype, extension } = OUTPUT[plan.format];
  const thumbnail = await decodeAndThumbnail(data, size, mimetype, maxPixels);
  return { bytes: new Uint8Array(data), mimetype, extension, ...size, thumbnail: thumbnail && new Uint8Array(thumbnail) };
}
