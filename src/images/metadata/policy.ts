/**
 * Metadata policy of a group, applied to the bytes before they are hashed and stored: the one function processing
 * and variants reuse is `applyMetadataPolicy(bytes, mimetype, policy)`. It runs in the decode process (../decoder.ts)
 * under the decode's CPU budget, or in-process for files small enough that its worst case is a few milliseconds
 * (docs/decisions/metadata-surgery-placement.md). Every walk here is linear in the bytes, under the caps of
 * limits.ts; a file past a cap is refused (ContainerRefused, a 400).
 *
 * Stripping is segment/chunk surgery, never a re-encode: the pixels decode exactly as the upload's. It is as
 * lenient as the most lenient reader (docs/decisions/strip-fails-closed.md): what a strip policy keeps is a short
 * list of blocks it understands; everything else that can carry metadata goes.
 *
 * - `keep`: the bytes as sent.
 * - `strip_location`: every GPS pointer of every EXIF block (whatever its header's spelling, wherever the pointer
 *   sits: IFD0, the Exif sub-IFD, IFD2…) with the GPS IFD it names; the EXIF thumbnail (IFD1 and after: a JPEG with
 *   EXIF of its own); XMP packets (the whole packet); IPTC/Photoshop blocks; JUMBF/C2PA boxes; JFXX thumbnails,
 *   multi-picture data and whatever follows the end of the image; PNG text chunks but the plain ones PNG defines;
 *   unknown application blocks. The rest of the EXIF (camera, date) stays.
 * - `strip_all`: also the rest of the EXIF (an EXIF block with only the Orientation tag is kept when the image has a
 *   non-default orientation), comments and every text chunk.
 * - Both keep what shapes the picture: the orientation, the ICC profile (JPEG APP2 ICC_PROFILE, PNG iCCP, WebP
 *   ICCP, GIF ICCRGBG1012), JFIF, the Adobe APP14 colour transform, PNG sRGB/gAMA/cHRM/cICP/sBIT/tRNS/bKGD/pHYs and
 *   animation chunks, GIF looping (NETSCAPE2.0/ANIMEXTS1.0), graphic control and plain-text extensions.
 *
 * Then the result is verified by an independent lenient scanner (scan.ts). A block it still finds
 * location in is dropped whole (segment, chunk, extension, item); location it finds where nothing can be dropped
 * without touching the picture is a refusal (LocationRefused, a 400), as is a file that cannot be walked. Under a
 * strip policy no error ends with the file stored as sent.
 *
 * AVIF (HEIF) metadata sits in items that a location table (`iloc`) points into: it is overwritten in place, at the
 * same length, so no offset moves and the coded image is untouched (the Exif item cleaned as above and padded with
 * zeros; XMP and other `mime` items blanked); boxes outside the image's structure become `free`. TIFF is not cut up
 * (its metadata and pixels share one web of offsets): it is verified, stored when it carries no location, refused
 * otherwise.
 */
import { ContainerRefused, FORMAT_NAMES, LocationRefused, MetadataRefused } from "./limits.ts";
import { findLocation } from "./scan.ts";
import { type Drop, noDrop, type Stripper } from "./walk.ts";
import { stripJpeg } from "./jpeg.ts";
import { stripPng } from "./png.ts";
import { stripWebp } from "./webp.ts";
import { stripGif } from "./gif.ts";
import { stripHeif } from "./heif.ts";

export { ContainerRefused, LocationRefused, MetadataRefused } from "./limits.ts";

export const METADATA_POLICIES = ["keep", "strip_location", "strip_all"] as const;
export type MetadataPolicy = (typeof METADATA_POLICIES)[number];

export interface PolicyResult {
  /** What to store: the input itself when nothing was removed. */
  bytes: Uint8Array;
  changed: boolean;
  /** What was removed, in words ("EXIF GPS", "XMP", "trailing data"…). */
  removed: string[];
}

const STRIPPERS: Record<string, Stripper> = {
  "image/jpeg": stripJpeg,
  "image/png": stripPng,
  "image/webp": stripWebp,
  "image/gif": stripGif,
  "image/avif": stripHeif,
};

/**
 * Applies the policy. Throws MetadataRefused (a 400 with its message) when the file breaks a cap, cannot be walked
 * under a strip policy, or keeps location that cannot be removed.
 */
export function applyMetadataPolicy(bytes: Uint8Array, mimetype: string, policy: MetadataPolicy): PolicyResult {
  if (policy === "keep") return { bytes, changed: false, removed: [] };
  const name = FORMAT_NAMES[mimetype] ?? mimetype;
  const strip: Stripper | undefined = STRIPPERS[mimetype];
  const removed = new Set<string>();
  const run = (input: Uint8Array, drop: Drop): Uint8Array => {
    if (!strip) return input;
    try {
      return strip(input, policy, removed, drop);
    } catch (e) {
      if (e instanceof MetadataRefused) throw e;
      throw new LocationRefused(
        `The ${name} file could not be walked to remove its metadata (${(e as Error).message}): it is refused rather than stored with it.`,
      );
    }
  };
  let out = run(bytes, noDrop());
  // verify: what an independent lenient scanner still finds is dropped with its block, or the file is refused
  for (let round = 0; ; round++) {
    const findings = findLocation(out, mimetype);
    if (findings.length === 0) break;
    let stuck = findings;
    if (strip !== undefined && round < 2) {
      const drop: Drop = { at: findings.map((f) => f.at), covered: new Set() };
      out = run(out, drop);
      stuck = findings.filter((f) => !drop.covered.has(f.at));
    }
    if (stuck.length > 0) {
      const what = [...new Set(stuck.map((f) => f.what))].join(", ");
      throw new LocationRefused(
        `The ${name} file carries location metadata (${what}) that cannot be removed without re-encoding the picture: remove it before uploading.`,
      );
    }
  }
  if (removed.size === 0 || equalBytes(out, bytes)) return { bytes, changed: false, removed: [] };
  return { bytes: out, changed: true, removed: [...removed] };
}

/**
 * The structural walk of a file, under the caps, before any library reads it (libexif and libheif spend seconds on
 * looping IFDs and repeated extents): throws ContainerRefused past a cap; a file that is merely broken passes (the
 * decoder judges it).
 */
export function checkContainer(bytes: Uint8Array, mimetype: string): void {
  const strip: Stripper | undefined = STRIPPERS[mimetype];
  try {
    // a TIFF file is read by libtiff, not libexif; its location is judged by the verification under a strip policy
    if (strip) strip(bytes, "strip_location", new Set(), { ...noDrop(), check: true });
  } catch (e) {
    if (e instanceof ContainerRefused) throw e;
  }
}
const equalBytes = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
