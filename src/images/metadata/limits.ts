/**
 * The caps every parser of uploaded bytes works under (see docs/decisions/bounded-container-parsing.md): the metadata
 * surgery of each container, the check that runs before libvips reads a header, and the JPEG walk. Each parser's work
 * is linear in the bytes it is given, and a file past a cap is refused (400) before the work grows: a count of units
 * (segments, chunks, blocks, boxes) may not exceed a base plus one per so many bytes of the file, so a file made of
 * tiny units cannot multiply the per-unit cost; items and extents have fixed caps; ranges named twice, overlapping
 * ranges and IFD loops are refused, and the bytes named may not exceed the file.
 */
export const LIMITS = {
  /** JPEG segments (markers with a length) before EOI: a base plus one per `jpegBytesPerSegment` bytes. */
  jpegSegmentsBase: 1024,
  jpegBytesPerSegment: 1024,
  /** PNG chunks: IDAT is usually split every 8-64 KB; APNG has two chunks a frame (512 frames within the base). */
  pngChunksBase: 1024,
  pngBytesPerChunk: 1024,
  /** What a PNG's compressed text and ICC profile may inflate to in all: a base plus so many bytes per byte of file. */
  pngInflatedBase: 1024 * 1024,
  pngInflatedPerByte: 4,
  /** WebP (RIFF) chunks at the top level; an animation has one ANMF a frame. */
  webpChunksBase: 1024,
  webpBytesPerChunk: 1024,
  /** GIF blocks (images and extensions); sub-blocks are data, walked at one step per sub-block. */
  gifBlocksBase: 4096,
  gifBytesPerBlock: 256,
  /** HEIF boxes at one level (top, meta's children, iinf's infe). */
  heifBoxesPerLevel: 1024,
  /** HEIF items in iloc, extents per item and in all, items carrying metadata (Exif, mime, uri). */
  heifItems: 1024,
  heifExtentsPerItem: 64,
  heifExtents: 4096,
  heifMetadataItems: 16,
  /** One EXIF (TIFF) block: IFDs reached, entries per IFD and in all. */
  tiffIfds: 32,
  tiffEntriesPerIfd: 1024,
  tiffEntries: 4096,
} as const;

/** The most units a file of `bytes` may have, by a base and a density. */
export const unitCap = (bytes: number, base: number, bytesPerUnit: number) => base + Math.floor(bytes / bytesPerUnit);

/** A refusal of the bytes sent, with a message for the sender: a 400 wherever it surfaces. */
export class MetadataRefused extends Error {
  override name = "MetadataRefused";
}

/** The container is past a cap, or names ranges a parser will not follow (overlapping, repeated, looping, outside the file). */
export class ContainerRefused extends MetadataRefused {
  override name = "ContainerRefused";
}

/** Under a strip policy: location that cannot be removed without touching the picture, or a structure that cannot be walked to remove it. */
export class LocationRefused extends MetadataRefused {
  override name = "LocationRefused";
}

/** What a format is called in a refusal. */
export const FORMAT_NAMES: Record<string, string> = {
  "image/jpeg": "JPEG",
  "image/png": "PNG",
  "image/webp": "WebP",
  "image/gif": "GIF",
  "image/avif": "AVIF",
  "image/tiff": "TIFF",
};
