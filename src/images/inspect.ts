import { fileTypeFromBuffer } from "file-type";
import sharp from "sharp";
import { avifOptions } from "./avif.ts";
import { jpegSegments, SOS } from "./jpeg.ts";
import { checkContainer } from "./metadata/policy.ts";

export interface Inspection {
  /** Media type sniffed from the bytes; null when unrecognised. */
  sniffedMime: string | null;
  width: number;
  height: number;
  pages: number;
  /** JPEG only: how many scans the decoder must run (1 for baseline, about 10 for a usual progressive file). */
  scans: number;
  /** The largest canvas the header declares (a GIF's logical screen may be larger than its frame): what the pixel limit judges. */
  declared: { width: number; height: number };
}

/**
 * How much of the bytes the sniffer reads: file-type's own sample size. Every format it must tell apart shows itself
 * there, and its cost stays constant: given more, file-type walks every PNG chunk it holds (5 ms for 64 KB of tiny
 * chunks).
 */
const SNIFF_BYTES = 4100;

/** The media type the bytes show, or null when file-type does not recognise them. */
export const sniffMime = async (bytes: Uint8Array) => refineMime(bytes, (await fileTypeFromBuffer(bytes.subarray(0, SNIFF_BYTES)))?.mime ?? null);

/**
 * What the sample cannot show: an animated PNG declares its animation (acTL) anywhere before its first image data,
 * which large chunks can push past the sample. One step per chunk header, each at least 12 bytes on: linear.
 */
function refineMime(bytes: Uint8Array, mime: string | null): string | null {
  if (mime !== "image/png") return mime;
  for (let at = 8; at + 8 <= bytes.length; ) {
    const length = bytes[at]! * 0x1000000 + ((bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!);
    const type = String.fromCharCode(bytes[at + 4]!, bytes[at + 5]!, bytes[at + 6]!, bytes[at + 7]!);
    if (type === "acTL") return "image/apng";
    if (type === "IDAT" || type === "IEND") break;
    at += 12 + length;
  }
  return mime;
}

/**
 * Sniffs the content and reads the dimensions from the header only (no pixel decoding), as displayed
 * (EXIF orientation applied; one frame of an animation). Null when sharp cannot read a header. Before any library
 * reads the header, the container is walked under the caps of metadata/limits.ts: ContainerRefused (a 400) when it
 * breaks one (libexif and libheif spend seconds on looping IFDs and repeated extents).
 */
export async function inspectImage(bytes: Uint8Array): Promise<Inspection | null> {
  const sniffedMime = refineMime(bytes, (await fileTypeFromBuffer(bytes.subarray(0, SNIFF_BYTES)))?.mime ?? null);
  if (sniffedMime) checkContainer(bytes, sniffedMime);
  let meta: Awaited<ReturnType<ReturnType<typeof sharp>["metadata"]>>;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    return null;
  }
  const width = meta.autoOrient?.width ?? meta.width;
  const height = meta.autoOrient?.height ?? meta.height;
  if (!width || !height) return null;
  // without `pages: -1`, sharp reports the first frame of an animation
  const scans = sniffedMime === "image/jpeg" ? jpegScanCount(bytes) : 1;
  const screen = sniffedMime === "image/gif" && bytes.length >= 10 ? { width: bytes[6]! | (bytes[7]! << 8), height: bytes[8]! | (bytes[9]! << 8) } : null;
  const declared = screen && screen.width * screen.height > width * height ? screen : { width, height };
  return { sniffedMime, width, height, pages: meta.pages ?? 1, scans, declared };
}

/**
 * Counts the Start-Of-Scan markers of a JPEG as the decoder will meet them (jpegSegments walks the stream as libjpeg
 * does, so no byte pattern can hide a scan): decoding cost grows with scans × pixels, and a legal progressive file
 * of a few hundred KB can carry hundreds of scans.
 */
export function jpegScanCount(bytes: Uint8Array): number {
  let scans = 0;
  for (const segment of jpegSegments(bytes)) if (segment.marker === SOS) scans++;
  return scans;
}

const THUMBNAIL_BOX = 400;
/** Scans a JPEG may have: common encoders write up to about 12; more is refused before decoding. */
export const MAX_JPEG_SCANS = 32;

/** An image browsers display and that fits the thumbnail box is its own thumbnail; a TIFF never is (browsers cannot show it). */
const isOwnThumbnail = (size: { width: number; height: number }, mimetype: string) =>
  size.width <= THUMBNAIL_BOX && size.height <= THUMBNAIL_BOX && mimetype !== "image/tiff";

/**
 * An image whose whole canvas fits the thumbnail box: at most 160,000 pixels of one frame (and at most
 * MAX_JPEG_SCANS scans), so its decode costs a few milliseconds whatever its bytes and may run in-process.
 */
export const isSmall = (inspection: Inspection) =>
  Math.max(inspection.width, inspection.declared.width) <= THUMBNAIL_BOX && Math.max(inspection.height, inspection.declared.height) <= THUMBNAIL_BOX;

/**
 * Decodes the first frame once: it proves the bytes are a whole image, and yields a WebP thumbnail
 * fitting 400×400 (null when the image is its own thumbnail). `input` is the bytes or a file holding them.
 */
export async function decodeAndThumbnail(
  input: Uint8Array | string,
  size: { width: number; height: number },
  mimetype: string,
  maxPixels: number,
): Promise<Uint8Array | null> {
  const image = sharp(input, { limitInputPixels: maxPixels, failOn: "error", animated: false, pages: 1 }).rotate();
  if (isOwnThumbnail(size, mimetype)) {
    // small: decoding is cheap, and it still proves the bytes are a whole image
    await image.raw().toBuffer();
    return null;
  }
  return image.resize(THUMBNAIL_BOX, THUMBNAIL_BOX, { fit: "inside", withoutEnlargement: true }).webp({ quality: 80 }).toBuffer();
}

/** How a variant is encoded. */
export interface VariantEncoding {
  /** The width to resize to; never enlarged (a width at or above the image's keeps its size). */
  width: number;
  format: "webp" | "avif" | "jpeg" | "png" | "gif";
  /** 1-100; ignored by png and gif. */
  quality: number;
  maxPixels: number;
  /** Keep every frame (to webp or gif); otherwise the first frame only. */
  animated: boolean;
}

/**
 * Encodes a variant of an image: the orientation applied to the pixels (`rotate()`), resized to `width` (never
 * enlarged), re-encoded. Metadata: sharp writes none unless asked; only the ICC profile is kept
 * (`keepIccProfile()`), so a variant carries no EXIF, XMP or IPTC whatever the group's policy — at least as strict
 * as every policy. JPEG has no alpha: transparent pixels are flattened onto white. An animation of more than
 * `maxPixels` pixels in all its frames is refused (its decode costs frames × pixels).
 */
export async function encodeVariant(input: Uint8Array | string, encoding: VariantEncoding): Promise<Uint8Array> {
  const { width, format, quality, maxPixels, animated } = encoding;
  let image = sharp(input, { limitInputPixels: maxPixels, failOn: "error", animated, ...(animated ? {} : { pages: 1 }) });
  if (animated) {
    const meta = await image.metadata();
    const frames = meta.pages ?? 1;
    const framePixels = (meta.width ?? 0) * (meta.pageHeight ?? meta.height ?? 0);
    if (frames * framePixels > maxPixels) throw new Error(`the animation has ${frames} frames of ${framePixels} pixels, more than ${maxPixels} in all`);
  }
  image = image.rotate().resize({ width, withoutEnlargement: true }).keepIccProfile();
  switch (format) {
    case "webp":
      image = image.webp({ quality });
      break;
    case "avif":
      image = image.avif(avifOptions(quality));
      break;
    case "jpeg":
      image = image.flatten({ background: "#ffffff" }).jpeg({ quality });
      break;
    case "png":
      image = image.png({ compressionLevel: 6 });
      break;
    case "gif":
      image = image.gif();
      break;
  }
  return new Uint8Array(await image.toBuffer());
}
