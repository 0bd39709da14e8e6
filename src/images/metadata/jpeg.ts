/** JPEG: segment surgery (APPn, comments, whatever follows the end of the image); the policy is policy.ts. */
import { EOI, jpegSegments, SOS } from "../jpeg.ts";
import { cleanExifBlock, EXIF_HEADER, looksLikeExif } from "./exif-block.ts";
import type { StripPolicy } from "./tiff.ts";
import { ascii, checking, concat, type Drop, holdsFinding, startsWith } from "./walk.ts";

export function stripJpeg(b: Uint8Array, policy: StripPolicy, removed: Set<string>, drop: Drop): Uint8Array {
  if (b[0] !== 0xff || b[1] !== 0xd8) throw new Error("no SOI");
  const parts: Uint8Array[] = [b.subarray(0, 2)];
  const n = b.length;
  const check = checking(drop);
  let copyFrom = 2; // bytes not yet decided on (stray and fill bytes are copied as they are: libjpeg skips them the same way)
  const flush = (to: number) => {
    if (to > copyFrom && !check) parts.push(b.subarray(copyFrom, to));
  };
  for (const { marker, at, length, start, end } of jpegSegments(b)) {
    if (marker === EOI) {
      // whatever follows is not the image (MPF pictures, gain maps, phone trailers)
      flush(end);
      copyFrom = end;
      if (end < n) removed.add("trailing data");
      return removed.size === 0 || check ? b : concat(parts);
    }
    if (length < 2 || end > n) throw new Error("a segment past the end");
    if (marker === SOS) continue;
    const payload = b.subarray(start, end);
    let verdict = jpegSegment(marker, payload, policy);
    if (verdict === "keep" && holdsFinding(drop, at, end) && ((marker >= 0xe0 && marker <= 0xef) || marker === 0xfe))
      verdict = { bytes: null, removed: ["block with location"] };
    if (verdict === "keep") continue;
    flush(at);
    if (verdict.bytes && verdict.bytes.length + 2 <= 0xffff) {
      const segment = new Uint8Array(4 + verdict.bytes.length);
      segment.set([0xff, marker, ((verdict.bytes.length + 2) >> 8) & 0xff, (verdict.bytes.length + 2) & 0xff]);
      segment.set(verdict.bytes, 4);
      parts.push(segment);
    }
    for (const r of verdict.removed) removed.add(r);
    copyFrom = end;
  }
  // no EOI: the file as walked (a truncated file is the decoder's business)
  flush(n);
  return removed.size === 0 || check ? b : concat(parts);
}

type SegmentVerdict = "keep" | { bytes: Uint8Array | null; removed: string[] };
const dropped = (what: string): SegmentVerdict => ({ bytes: null, removed: [what] });

function jpegSegment(marker: number, payload: Uint8Array, policy: StripPolicy): SegmentVerdict {
  const all = policy === "strip_all";
  if (marker === 0xfe) return all ? dropped("comment") : "keep"; // COM
  if (marker < 0xe0 || marker > 0xef) return "keep"; // tables, frame headers, DRI…
  switch (marker) {
    case 0xe0: // JFIF keeps (density); JFXX (a thumbnail: a JPEG of its own) and others go
      return startsWith(payload, 0, "JFIF\0") ? "keep" : dropped("JFXX thumbnail");
    case 0xe1: {
      if (looksLikeExif(payload)) {
        const found = new Set<string>();
        const exif = cleanExifBlock(payload, policy, found, EXIF_HEADER);
        if (found.size === 0) return "keep";
        return { bytes: exif, removed: [...found] };
      }
      return dropped(/<x:x[am]pmeta|<\?xpacket|http:\/\/ns\.adobe\.com\/xmp/.test(ascii(payload, 0, 256)) ? "XMP" : "APP1");
    }
    case 0xe2: // ICC profiles shape the picture; MPF points at pictures after EOI (removed); FlashPix and others go
      if (startsWith(payload, 0, "ICC_PROFILE\0")) return "keep";
      return dropped(startsWith(payload, 0, "MPF\0") ? "multi-picture data" : startsWith(payload, 0, "FPXR\0") ? "FlashPix" : "APP2");
    case 0xed:
      return dropped("IPTC"); // Photoshop IRB / IPTC (City, Province, Country)
    case 0xeb:
      return dropped("JUMBF"); // JUMBF (C2PA manifests may assert a location)
    case 0xee: // Adobe: the colour transform
      return startsWith(payload, 0, "Adobe") ? "keep" : dropped("APP14");
    default: // vendor blocks (GoPro's GPMF in APP6 holds a GPS track): readers know more of them than we do
      return dropped(`APP${marker - 0xe0}`);
  }
}
