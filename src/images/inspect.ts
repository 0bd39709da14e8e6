import { fileTypeFromBuffer } from "file-type";
import sharp from "sharp";

export interface Inspection {
  /** Media type sniffed from the bytes; null when unrecognised. */
  sniffedMime: string | null;
  width: number;
  height: number;
  pages: number;
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
  return { sniffedMime: sniffed?.mime ?? null, width, height, pages: meta.pages ?? 1 };
}

export const THUMBNAIL_BOX = 400;

/**
 * Decodes the first frame once: it proves the bytes are a whole image, and yields a WebP thumbnail
 * fitting 400×400 when the image is larger than that (null when the image is its own thumbnail).
 */
export async function decodeAndThumbnail(
  bytes: Uint8Array,
  size: { width: number; height: number },
  maxPixels: number,
): Promise<Uint8Array | null> {
  const image = sharp(bytes, { limitInputPixels: maxPixels, failOn: "error", animated: false, pages: 1 }).rotate();
  if (size.width <= THUMBNAIL_BOX && size.height <= THUMBNAIL_BOX) {
    // small: decoding is cheap, and it still proves the bytes are a whole image
    await image.raw().toBuffer();
    return null;
  }
  return image
    .resize(THUMBNAIL_BOX, THUMBNAIL_BOX, { fit: "inside", withoutEnlargement: true })
    .webp({ quality: 80 })
    .toBuffer();
}
