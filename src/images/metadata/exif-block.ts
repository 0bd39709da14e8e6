/** EXIF inside a block (a JPEG APP1, a PNG eXIf, a WebP EXIF chunk, an AVIF Exif item): found as leniently as readers find it. */
import { BrokenExif, cleanExif, isTiffHeader, type StripPolicy } from "./tiff.ts";
import { ascii, concat } from "./walk.ts";

export const EXIF_HEADER = "Exif\0\0";

/** Where a TIFF structure starts in a block that may carry EXIF: at 0, or behind a header of up to 16 bytes ("Exif\0\0", "Exif\0\x01", "exif", junk…). */
export function tiffStartIn(payload: Uint8Array): number {
  for (let t = 0; t <= 16 && t + 8 <= payload.length; t++) if (isTiffHeader(payload, t)) return t;
  return -1;
}
export const looksLikeExif = (payload: Uint8Array) => /exif/i.test(ascii(payload, 0, 16)) || tiffStartIn(payload) >= 0;

/**
 * An EXIF block cleaned by the policy: the block to keep (its header as it was, the TIFF cleaned), or null to drop
 * it (strip_all without an orientation to keep, a header no standard reader reads, or a TIFF that cannot be walked).
 * `standard`: the header standard readers expect here, the only one whose orientation they apply.
 */
export function cleanExifBlock(payload: Uint8Array, policy: StripPolicy, removed: Set<string>, standard: string): Uint8Array | null {
  const t = tiffStartIn(payload);
  const name = policy === "strip_all" ? "EXIF" : "EXIF (unreadable)";
  if (t < 0) {
    removed.add(name);
    return null;
  }
  const prefix = payload.subarray(0, t);
  const isStandard = ascii(prefix, 0, prefix.length) === standard;
  if (policy === "strip_all" && !isStandard) {
    removed.add("EXIF");
    return null;
  }
  let cleaned: Uint8Array | null;
  try {
    cleaned = cleanExif(payload.subarray(t), policy, removed);
  } catch (e) {
    if (!(e instanceof BrokenExif)) throw e;
    removed.add(name);
    return null;
  }
  return cleaned && concat([prefix, cleaned]);
}
