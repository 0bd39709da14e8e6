import { fileTypeFromBuffer } from "file-type";
import sharp from "sharp";

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
 * Sniffs the content and reads the dimensions from the header only (no pixel decoding), as displayed
 * (EXIF orientation applied; one frame of an animation). Null when sharp cannot read a header.
 */
export async function inspectImage(bytes: Uint8Array): Promise<Inspection | null> {
  const sniffed = await fileTypeFromBuffer(bytes);
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
  const scans = sniffed?.mime === "image/jpeg" ? jpegScanCount(bytes) : 1;
  const screen = sniffed?.mime === "image/gif" && bytes.length >= 10 ? { width: bytes[6]! | (bytes[7]! << 8), height: bytes[8]! | (bytes[9]! << 8) } : null;
  const declared = screen && screen.width * screen.height > width * height ? screen : { width, height };
  return { sniffedMime: sniffed?.mime ?? null, width, height, pages: meta.pages ?? 1, scans, declared };
}

/**
 * Counts the Start-Of-Scan markers of a JPEG by walking its segments and skipping entropy-coded data.
 * Decoding cost grows with scans × pixels: a legal progressive file of a few hundred KB can carry
 * hundreds of scans and take many seconds to decode, which the pixel limit alone does not catch.
 */
export function jpegScanCount(bytes: Uint8Array): number {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let scans = 0;
  let pos = 2; // after SOI
  while (pos + 3 < bytes.length) {
    if (bytes[pos] !== 0xff) return scans; // malformed: the decoder will refuse it
    const marker = bytes[pos + 1]!;
    if (marker === 0xff) {
      pos++; // fill byte
      continue;
    }
    if (marker === 0xd9) return scans; // EOI
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      pos += 2;
      continue;
    }
    const length = (bytes[pos + 2]! << 8) | bytes[pos + 3]!;
    pos += 2 + length;
    if (marker !== 0xda) continue;
    scans++;
    // entropy-coded data runs to the next marker that is neither a stuffed 0xFF00 nor a restart marker
    for (;;) {
      const ff = buf.indexOf(0xff, pos);
      if (ff < 0) return scans;
      const next = buf[ff + 1];
      if (next === 0 || (next !== undefined && next >= 0xd0 && next <= 0xd7)) {
        pos = ff + 2;
        continue;
      }
      pos = ff;
      break;
    }
  }
  return scans;
}

export const THUMBNAIL_BOX = 400;
/** A backstop: sharp checks it only at progress points, so the scan count above is the real bound. */
export const DECODE_TIMEOUT_SECONDS = 10;
/** Scans a JPEG may have: common encoders write up to about 12; more is refused before decoding. */
export const MAX_JPEG_SCANS = 32;

/** An image browsers display and that fits the thumbnail box is its own thumbnail; a TIFF never is (browsers cannot show it). */
export const isOwnThumbnail = (size: { width: number; height: number }, mimetype: string) =>
  size.width <= THUMBNAIL_BOX && size.height <= THUMBNAIL_BOX && mimetype !== "image/tiff";

/**
 * Decodes the first frame once: it proves the bytes are a whole image, and yields a WebP thumbnail
 * fitting 400×400 (null when the image is its own thumbnail).
 */
export async function decodeAndThumbnail(
  bytes: Uint8Array,
  size: { width: number; height: number },
  mimetype: string,
  maxPixels: number,
): Promise<Uint8Array | null> {
  const image = sharp(bytes, { limitInputPixels: maxPixels, failOn: "error", animated: false, pages: 1 })
    .rotate()
    .timeout({ seconds: DECODE_TIMEOUT_SECONDS });
  if (isOwnThumbnail(size, mimetype)) {
    // small: decoding is cheap, and it still proves the bytes are a whole image
    await image.raw().toBuffer();
    return null;
  }
  return image
    .resize(THUMBNAIL_BOX, THUMBNAIL_BOX, { fit: "inside", withoutEnlargement: true })
    .webp({ quality: 80 })
    .toBuffer();
}
