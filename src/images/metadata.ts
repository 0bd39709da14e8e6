/**
 * Metadata policy of a group, applied to the bytes before they are hashed and stored: the one function processing
 * and variants reuse is `applyMetadataPolicy(bytes, mimetype, policy)`. It runs in the decode process (decoder.ts)
 * under the decode's CPU budget, or in-process for files small enough that its worst case is a few milliseconds
 * (docs/decisions/metadata-surgery-placement.md). Every walk here is linear in the bytes, under the caps of
 * metadata/limits.ts; a file past a cap is refused (ContainerRefused, a 400).
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
 * Then the result is verified by an independent lenient scanner (metadata/scan.ts). A block it still finds
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
import { inflateSync } from "node:zlib";
import { EOI, jpegSegments, SOS } from "./jpeg.ts";
import { ContainerRefused, FORMAT_NAMES, LIMITS, LocationRefused, MetadataRefused, unitCap } from "./metadata/limits.ts";
import { findLocation, isPlainPngKeyword } from "./metadata/scan.ts";
import { BrokenExif, checkTiff, cleanExif, isTiffHeader, type StripPolicy } from "./metadata/tiff.ts";

export { ContainerRefused, LocationRefused, MetadataRefused } from "./metadata/limits.ts";

export const METADATA_POLICIES = ["keep", "strip_location", "strip_all"] as const;
export type MetadataPolicy = (typeof METADATA_POLICIES)[number];
export const DEFAULT_METADATA_POLICY: MetadataPolicy = "strip_location";

export interface PolicyResult {
  /** What to store: the input itself when nothing was removed. */
  bytes: Uint8Array;
  changed: boolean;
  /** What was removed, in words ("EXIF GPS", "XMP", "trailing data"…). */
  removed: string[];
}

/**
 * Where the verification found location: units containing one of `at` are dropped whole; `covered` collects the
 * positions that fell in a unit that could be dropped.
 */
interface Drop {
  at: number[];
  covered: Set<number>;
  /** Only walk, under the caps: nothing is built (checkContainer). */
  check?: boolean;
}
const noDrop = (): Drop => ({ at: [], covered: new Set() });
/** Whether [start, end) holds a finding; marks it covered. */
function holdsFinding(drop: Drop, start: number, end: number): boolean {
  let hit = false;
  for (const at of drop.at) {
    if (at >= start && at < end) {
      drop.covered.add(at);
      hit = true;
    }
  }
  return hit;
}

type Stripper = (b: Uint8Array, policy: StripPolicy, removed: Set<string>, drop: Drop) => Uint8Array;
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
      throw new LocationRefused(`The ${name} file could not be walked to remove its metadata (${(e as Error).message}): it is refused rather than stored with it.`);
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
      throw new LocationRefused(`The ${name} file carries location metadata (${what}) that cannot be removed without re-encoding the picture: remove it before uploading.`);
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
const checking = (drop: Drop) => drop.check === true;

const equalBytes = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
/** Latin-1 text of a few bytes (a chunk type, a keyword): without a Buffer per call, which a walk over thousands of chunks would feel. */
function ascii(b: Uint8Array, start: number, length: number): string {
  const end = Math.min(b.length, start + length);
  if (end - start > 64) return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("latin1", start, end);
  let text = "";
  for (let i = start; i < end; i++) text += String.fromCharCode(b[i]!);
  return text;
}
const startsWith = (b: Uint8Array, start: number, text: string) => b.length >= start + text.length && ascii(b, start, text.length) === text;

function concat(parts: Uint8Array[]): Uint8Array {
  const total = parts.reduce((n, p) => n + p.byteLength, 0);
  // not zero-filled: every byte is written below (a few MB of zeroes cost more than the whole walk)
  const out = new Uint8Array(Buffer.allocUnsafeSlow(total).buffer, 0, total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// EXIF inside a block: found as leniently as readers find it

const EXIF_HEADER = "Exif\0\0";

/** Where a TIFF structure starts in a block that may carry EXIF: at 0, or behind a header of up to 16 bytes ("Exif\0\0", "Exif\0\x01", "exif", junk…). */
function tiffStartIn(payload: Uint8Array): number {
  for (let t = 0; t <= 16 && t + 8 <= payload.length; t++) if (isTiffHeader(payload, t)) return t;
  return -1;
}
const looksLikeExif = (payload: Uint8Array) => /exif/i.test(ascii(payload, 0, 16)) || tiffStartIn(payload) >= 0;

/**
 * An EXIF block cleaned by the policy: the block to keep (its header as it was, the TIFF cleaned), or null to drop
 * it (strip_all without an orientation to keep, a header no standard reader reads, or a TIFF that cannot be walked).
 * `standard`: the header standard readers expect here, the only one whose orientation they apply.
 */
function cleanExifBlock(payload: Uint8Array, policy: StripPolicy, removed: Set<string>, standard: string): Uint8Array | null {
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

// ---------------------------------------------------------------------------------------------------------------
// JPEG

function stripJpeg(b: Uint8Array, policy: StripPolicy, removed: Set<string>, drop: Drop): Uint8Array {
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
    if (verdict === "keep" && holdsFinding(drop, at, end) && ((marker >= 0xe0 && marker <= 0xef) || marker === 0xfe)) verdict = { bytes: null, removed: ["block with location"] };
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

// ---------------------------------------------------------------------------------------------------------------
// PNG

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** Ancillary chunks that shape the picture (colour, transparency, animation): kept under both policies. */
const PNG_PICTURE_CHUNKS = new Set(["iCCP", "sRGB", "gAMA", "cHRM", "cICP", "mDCv", "cLLi", "sBIT", "tRNS", "bKGD", "pHYs", "acTL", "fcTL", "fdAT", "hIST", "sPLT"]);

function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  view.setUint32(8 + data.length, Bun.hash.crc32(out.subarray(4, 8 + data.length)) >>> 0);
  return out;
}

function stripPng(b: Uint8Array, policy: StripPolicy, removed: Set<string>, drop: Drop): Uint8Array {
  if (b.length < 8 || PNG_SIGNATURE.some((v, i) => b[i] !== v)) throw new Error("no PNG signature");
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const parts: Uint8Array[] = [b.subarray(0, 8)];
  const all = policy === "strip_all";
  const check = checking(drop);
  const cap = unitCap(b.length, LIMITS.pngChunksBase, LIMITS.pngBytesPerChunk);
  let chunks = 0;
  // what its compressed chunks (zTXt, compressed iTXt, iCCP) may inflate to in all: libvips inflates every one of them
  let inflateBudget = LIMITS.pngInflatedBase + LIMITS.pngInflatedPerByte * b.length;
  const inflated = (compressed: Uint8Array) => {
    try {
      inflateBudget -= inflateSync(compressed, { maxOutputLength: Math.max(1, inflateBudget) }).length;
    } catch (e) {
      if ((e as { code?: string }).code === "ERR_BUFFER_TOO_LARGE" || inflateBudget <= 0) {
        const mb = (LIMITS.pngInflatedBase + LIMITS.pngInflatedPerByte * b.length) / (1024 * 1024);
        throw new ContainerRefused(`The PNG's compressed chunks inflate to more than ${mb.toFixed(1)} MB; at most that much is accepted for its size.`);
      }
      // a broken stream: the decoder's business
    }
  };
  let pos = 8;
  while (pos + 12 <= b.length) {
    if (++chunks > cap) throw new ContainerRefused(`The PNG has more than ${cap} chunks; at most that many are accepted for its size.`);
    const length = view.getUint32(pos);
    const type = ascii(b, pos + 4, 4);
    const end = pos + 12 + length;
    if (end > b.length) throw new Error("a chunk past the end");
    const whole = b.subarray(pos, end);
    const data = b.subarray(pos + 8, pos + 8 + length);
    const critical = (type.charCodeAt(0) & 0x20) === 0;
    if (check && (type === "zTXt" || type === "iTXt" || type === "iCCP")) {
      const zero = data.indexOf(0);
      if (zero >= 0 && type !== "iTXt") inflated(data.subarray(zero + 2));
      else if (zero >= 0 && data[zero + 1] === 1) {
        const language = data.indexOf(0, zero + 3);
        const translated = language < 0 ? -1 : data.indexOf(0, language + 1);
        if (translated >= 0) inflated(data.subarray(translated + 1));
      }
    }
    const hit = !critical && holdsFinding(drop, pos, end);
    pos = end;
    if (hit) {
      removed.add(type === "eXIf" ? "EXIF" : `chunk ${type}`);
      continue;
    }
    if (critical || PNG_PICTURE_CHUNKS.has(type)) {
      parts.push(whole);
      if (type === "IEND") break;
      continue;
    }
    if (type === "eXIf") {
      if (check) {
        const t = tiffStartIn(data);
        if (t >= 0) checkTiff(data.subarray(t));
        continue;
      }
      const found = new Set<string>();
      const exif = cleanExifBlock(data, policy, found, "");
      if (found.size === 0) parts.push(whole);
      else if (exif) parts.push(pngChunk("eXIf", exif));
      for (const r of found) removed.add(r);
      continue;
    }
    if (type === "tEXt" || type === "zTXt" || type === "iTXt") {
      const zero = data.indexOf(0);
      const keyword = ascii(data, 0, Math.min(zero < 0 ? length : zero, 80));
      // the plain keywords PNG defines stay under strip_location, uncompressed (the verification reads them); any
      // other keyword becomes a tag of that name in some reader ("GPSLatitude"), and raw profiles hold EXIF/XMP/IPTC
      // compressed text is not kept: what it holds cannot be seen without inflating it
      const compressed = type === "zTXt" || (type === "iTXt" && data[zero + 1] === 1);
      if (!all && isPlainPngKeyword(keyword) && !compressed) parts.push(whole);
      else removed.add(keyword === "XML:com.adobe.xmp" ? "XMP" : `text ${keyword}`);
      continue;
    }
    // tIME (a date) stays under strip_location; other ancillary chunks (caBX, private ones) go
    if (type === "tIME" && !all) parts.push(whole);
    else removed.add(type);
  }
  if (pos < b.length) removed.add("trailing data");
  return check ? b : concat(parts);
}

// ---------------------------------------------------------------------------------------------------------------
// WebP (RIFF)

const WEBP_PICTURE_CHUNKS = new Set(["VP8 ", "VP8L", "VP8X", "ALPH", "ANIM", "ANMF", "ICCP"]);

function stripWebp(b: Uint8Array, policy: StripPolicy, removed: Set<string>, drop: Drop): Uint8Array {
  if (!startsWith(b, 0, "RIFF") || !startsWith(b, 8, "WEBP")) throw new Error("no RIFF WEBP header");
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const riffEnd = Math.min(b.length, 8 + view.getUint32(4, true));
  const check = checking(drop);
  const cap = unitCap(b.length, LIMITS.webpChunksBase, LIMITS.webpBytesPerChunk);
  const chunks: Uint8Array[] = [];
  let count = 0;
  let pos = 12;
  let hasExif = false;
  while (pos + 8 <= riffEnd) {
    if (++count > cap) throw new ContainerRefused(`The WebP has more than ${cap} chunks; at most that many are accepted for its size.`);
    const type = ascii(b, pos, 4);
    const size = view.getUint32(pos + 4, true);
    const end = pos + 8 + size + (size & 1);
    if (pos + 8 + size > riffEnd) throw new Error("a chunk past the end");
    const whole = b.subarray(pos, Math.min(end, riffEnd));
    const data = b.subarray(pos + 8, pos + 8 + size);
    const structural = type === "VP8 " || type === "VP8L" || type === "VP8X" || type === "ALPH" || type === "ANMF";
    const hit = !structural && holdsFinding(drop, pos, end);
    pos = end;
    if (hit) {
      removed.add(`chunk ${type.trim()}`);
      continue;
    }
    if (type === "EXIF") {
      if (check) {
        const t = tiffStartIn(data);
        if (t >= 0) checkTiff(data.subarray(t));
        continue;
      }
      const found = new Set<string>();
      // some writers put the JPEG APP1 header in front of the TIFF structure
      const exif = cleanExifBlock(data, policy, found, startsWith(data, 0, EXIF_HEADER) ? EXIF_HEADER : "");
      for (const r of found) removed.add(r);
      if (found.size === 0) {
        chunks.push(whole);
        hasExif = true;
      } else if (exif) {
        chunks.push(riffChunk("EXIF", exif));
        hasExif = true;
      }
      continue;
    }
    if (type === "XMP ") {
      removed.add("XMP");
      continue;
    }
    if (WEBP_PICTURE_CHUNKS.has(type)) chunks.push(whole);
    else removed.add(`chunk ${type.trim()}`);
  }
  if (riffEnd < b.length) removed.add("trailing data");
  if (check) return b;
  const first = chunks[0];
  if (first && startsWith(first, 0, "VP8X") && first.length >= 9) {
    const vp8x = first.slice();
    // the flags say which metadata chunks follow: EXIF as kept, no XMP, the ICC profile unless the verification dropped it
    const hasIcc = chunks.some((c) => startsWith(c, 0, "ICCP"));
    vp8x[8] = (vp8x[8]! & ~0x2c) | (hasExif ? 0x08 : 0) | (hasIcc ? 0x20 : 0);
    chunks[0] = vp8x;
  }
  const body = concat(chunks);
  const header = new Uint8Array(12);
  header.set(b.subarray(0, 12));
  new DataView(header.buffer).setUint32(4, 4 + body.length, true);
  return concat([header, body]);
}

function riffChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + data.length + (data.length & 1));
  for (let i = 0; i < 4; i++) out[i] = type.charCodeAt(i);
  new DataView(out.buffer).setUint32(4, data.length, true);
  out.set(data, 8);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// GIF

/** Application extensions that shape the picture: looping and the colour profile. */
const GIF_PICTURE_APPS = new Set(["NETSCAPE2.0", "ANIMEXTS1.0", "ICCRGBG1012"]);

function stripGif(b: Uint8Array, policy: StripPolicy, removed: Set<string>, drop: Drop): Uint8Array {
  if ((!startsWith(b, 0, "GIF87a") && !startsWith(b, 0, "GIF89a")) || b.length < 13) throw new Error("no GIF header");
  const check = checking(drop);
  const cap = unitCap(b.length, LIMITS.gifBlocksBase, LIMITS.gifBytesPerBlock);
  let blocks = 0;
  let pos = 13;
  if (b[10]! & 0x80) pos += 3 * (1 << ((b[10]! & 0x07) + 1));
  const parts: Uint8Array[] = [b.subarray(0, pos)];
  /** Position after the sub-blocks starting at `at` (each: a size byte, then data; a 0 ends them). */
  const subBlocksEnd = (at: number) => {
    while (at < b.length && b[at] !== 0) at += 1 + b[at]!;
    if (at >= b.length) throw new Error("truncated GIF");
    return at + 1;
  };
  while (pos < b.length) {
    if (++blocks > cap) throw new ContainerRefused(`The GIF has more than ${cap} blocks; at most that many are accepted for its size.`);
    const introducer = b[pos]!;
    if (introducer === 0x3b) {
      parts.push(b.subarray(pos, pos + 1));
      if (pos + 1 < b.length) removed.add("trailing data");
      return check ? b : concat(parts);
    }
    if (introducer === 0x2c) {
      let at = pos + 10;
      if (at > b.length) throw new Error("truncated GIF");
      const flags = b[pos + 9]!;
      if (flags & 0x80) at += 3 * (1 << ((flags & 0x07) + 1));
      const end = subBlocksEnd(at + 1); // after the LZW minimum code size
      parts.push(b.subarray(pos, end));
      pos = end;
      continue;
    }
    if (introducer !== 0x21) throw new Error("an unknown GIF block");
    const label = b[pos + 1]!;
    const end = subBlocksEnd(pos + 2);
    const block = b.subarray(pos, end);
    const hit = holdsFinding(drop, pos, end);
    pos = end;
    if (hit) removed.add("extension with location");
    else if (label === 0xfe) {
      if (policy === "strip_all") removed.add("comment");
      else parts.push(block);
    } else if (label === 0xff) {
      const id = block[2] === 11 ? ascii(block, 3, 11) : "";
      if (GIF_PICTURE_APPS.has(id)) parts.push(block);
      else removed.add(id === "XMP DataXMP" ? "XMP" : `application ${id.trim() || "extension"}`);
    } else {
      parts.push(block); // graphic control, plain text
    }
  }
  throw new Error("no GIF trailer");
}

// ---------------------------------------------------------------------------------------------------------------
// AVIF (HEIF): items overwritten in place

interface Box {
  type: string;
  /** Where the box starts, where its payload starts (after the header) and where it ends. */
  at: number;
  start: number;
  end: number;
}

function heifBoxes(b: Uint8Array, start: number, end: number, where: string): Box[] {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const boxes: Box[] = [];
  let pos = start;
  while (pos + 8 <= end) {
    if (boxes.length >= LIMITS.heifBoxesPerLevel) throw new ContainerRefused(`The AVIF has more than ${LIMITS.heifBoxesPerLevel} boxes in ${where}.`);
    let size = view.getUint32(pos);
    let header = 8;
    if (size === 1) {
      if (pos + 16 > end) throw new Error("truncated box");
      size = Number(view.getBigUint64(pos + 8));
      header = 16;
    } else if (size === 0) size = end - pos;
    if (size < header || pos + size > end) throw new Error("box out of range");
    boxes.push({ type: ascii(b, pos + 4, 4), at: pos, start: pos + header, end: pos + size });
    pos += size;
  }
  if (pos !== end) throw new Error("trailing bytes in a box");
  return boxes;
}

/** Reads big-endian unsigned integers of 0, 2, 4 or 8 bytes, in order, inside [pos, end). */
class Reader {
  constructor(
    private readonly b: Uint8Array,
    public pos: number,
    private readonly end: number,
  ) {}
  uint(bytes: number): number {
    if (this.pos + bytes > this.end) throw new Error("truncated box");
    let v = 0;
    for (let i = 0; i < bytes; i++) v = v * 256 + this.b[this.pos + i]!;
    this.pos += bytes;
    return v;
  }
  cstring(): string {
    const zero = this.b.indexOf(0, this.pos);
    if (zero < 0 || zero >= this.end) throw new Error("unterminated string");
    const text = ascii(this.b, this.pos, zero - this.pos);
    this.pos = zero + 1;
    return text;
  }
}

interface Extent {
  offset: number;
  length: number;
}

const EMPTY_XMP = '<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"/><?xpacket end="w"?>';
/** Boxes that make up the image: kept. Any other box at the top level or in meta becomes `free` under a strip policy (XMP `uuid` boxes, `xml `…). */
const HEIF_TOP = new Set(["ftyp", "meta", "mdat", "moov", "free", "skip"]);
const HEIF_META = new Set(["hdlr", "pitm", "iloc", "iinf", "iprp", "iref", "idat", "dinf", "grpl", "free", "skip"]);

function stripHeif(input: Uint8Array, policy: StripPolicy, removed: Set<string>, drop: Drop): Uint8Array {
  const check = checking(drop);
  const top = heifBoxes(input, 0, input.length, "the file");
  if (top[0]?.type !== "ftyp") throw new Error("no ftyp box");
  const out = check ? input : input.slice();
  const free = (box: Box, what: string) => {
    if (check) return;
    out.set([0x66, 0x72, 0x65, 0x65], box.at + 4); // the type field
    out.fill(0, box.start, box.end);
    removed.add(what);
  };
  for (const box of top) {
    const droppable = box.type === "moov" || box.type === "free" || box.type === "skip"; // a sequence's track; the primary image stays
    if (!HEIF_TOP.has(box.type) || (droppable && holdsFinding(drop, box.at, box.end))) free(box, `box ${box.type}`);
  }
  const meta = top.find((box) => box.type === "meta");
  if (!meta) return out;
  const children = heifBoxes(input, meta.start + 4, meta.end, "meta"); // meta is a FullBox
  for (const box of children) if (!HEIF_META.has(box.type)) free(box, `box ${box.type}`);
  const iinf = children.find((box) => box.type === "iinf");
  const iloc = children.find((box) => box.type === "iloc");
  const idat = children.find((box) => box.type === "idat");
  if (!iinf || !iloc) return out;

  // iinf: item id → item type (and content type for `mime`); its declared count is not trusted, its boxes are counted
  const items = new Map<number, { type: string; contentType: string }>();
  const info = new Reader(input, iinf.start, iinf.end);
  const iinfVersion = info.uint(1);
  info.uint(3);
  info.uint(iinfVersion === 0 ? 2 : 4);
  for (const infe of heifBoxes(input, info.pos, iinf.end, "iinf")) {
    if (infe.type !== "infe") continue;
    const r = new Reader(input, infe.start, infe.end);
    const version = r.uint(1);
    r.uint(3);
    if (version < 2) continue; // versions 0 and 1 carry no item type
    const id = r.uint(version === 2 ? 2 : 4);
    r.uint(2); // protection index
    const type = ascii(input, r.pos, 4);
    r.pos += 4;
    r.cstring(); // item name
    items.set(id, { type, contentType: type === "mime" ? r.cstring() : "" });
  }

  // iloc: item id → extents, as offsets in the file; counts capped before any loop runs over them
  const extents = new Map<number, Extent[]>();
  const loc = new Reader(input, iloc.start, iloc.end);
  const version = loc.uint(1);
  loc.uint(3);
  const sizes = loc.uint(1);
  const offsetSize = sizes >> 4;
  const lengthSize = sizes & 15;
  const more = loc.uint(1);
  const baseOffsetSize = more >> 4;
  const indexSize = version === 1 || version === 2 ? more & 15 : 0;
  const count = loc.uint(version < 2 ? 2 : 4);
  if (count > LIMITS.heifItems) throw new ContainerRefused(`The AVIF declares ${count} item locations; at most ${LIMITS.heifItems} are accepted.`);
  let total = 0;
  for (let i = 0; i < count; i++) {
    const id = loc.uint(version < 2 ? 2 : 4);
    const method = version === 1 || version === 2 ? loc.uint(2) & 15 : 0;
    loc.uint(2); // data reference index
    const base = loc.uint(baseOffsetSize);
    const n = loc.uint(2);
    if (n > LIMITS.heifExtentsPerItem) throw new ContainerRefused(`An AVIF item has ${n} extents; at most ${LIMITS.heifExtentsPerItem} are accepted.`);
    total += n;
    if (total > LIMITS.heifExtents) throw new ContainerRefused(`The AVIF has more than ${LIMITS.heifExtents} extents.`);
    const list: Extent[] = [];
    for (let e = 0; e < n; e++) {
      loc.uint(indexSize);
      const offset = loc.uint(offsetSize);
      const length = loc.uint(lengthSize);
      if (method === 0) list.push({ offset: base + offset, length });
      else if (method === 1 && idat) list.push({ offset: idat.start + base + offset, length });
      else list.push({ offset: -1, length });
    }
    if (extents.has(id)) throw new ContainerRefused("The AVIF locates one item twice.");
    extents.set(id, list);
  }

  // the metadata items: capped; their ranges inside the file, never overlapping each other or any other item's
  const metadata = [...items].filter(([, item]) => item.type === "Exif" || item.type === "mime" || item.type === "uri ");
  if (metadata.length > LIMITS.heifMetadataItems) throw new ContainerRefused(`The AVIF has ${metadata.length} metadata items; at most ${LIMITS.heifMetadataItems} are accepted.`);
  const ranges: { start: number; end: number; metadata: boolean }[] = [];
  for (const [id, list] of extents) {
    const isMetadata = metadata.some(([m]) => m === id);
    for (const p of list) {
      if (p.offset < 0) continue;
      if (isMetadata && (p.length === 0 || p.offset + p.length > input.length)) throw new ContainerRefused("An AVIF metadata item lies outside the file.");
      ranges.push({ start: p.offset, end: p.offset + (p.length || 1), metadata: isMetadata });
    }
  }
  ranges.sort((a, b) => a.start - b.start);
  let named = 0;
  for (let i = 0; i < ranges.length; i++) {
    const r = ranges[i]!;
    if (r.metadata) named += r.end - r.start;
    const next = ranges[i + 1];
    if (next && next.start < r.end && (r.metadata || next.metadata)) throw new ContainerRefused("The AVIF names overlapping or repeated ranges for its metadata.");
  }
  if (named > input.length) throw new ContainerRefused("The AVIF's metadata items name more bytes than the file holds.");
  if (check) {
    for (const [id, item] of metadata) {
      if (item.type !== "Exif") continue;
      const payload = concat((extents.get(id) ?? []).map((p) => input.subarray(p.offset, p.offset + p.length)));
      const t = tiffStartIn(payload.subarray(4));
      if (t >= 0) checkTiff(payload.subarray(4 + t));
    }
    return out;
  }

  for (const [id, item] of metadata) {
    const parts = extents.get(id) ?? [];
    if (parts.some((p) => p.offset < 0)) throw new Error("a metadata item outside the file");
    const payload = concat(parts.map((p) => input.subarray(p.offset, p.offset + p.length)));
    const hit = parts.some((p) => holdsFinding(drop, p.offset, p.offset + p.length));
    let replacement = new Uint8Array(payload.length);
    if (item.type === "Exif" && !hit) {
      // a 4-byte offset to the TIFF header, then (usually "Exif\0\0" and) the TIFF structure
      const found = new Set<string>();
      // the standard header is whatever the offset names (usually "Exif\0\0")
      const named = payload.length >= 4 ? new DataView(payload.buffer, payload.byteOffset).getUint32(0) : 0;
      const cleaned = payload.length >= 4 ? cleanExifBlock(payload.subarray(4), policy, found, named <= 16 ? ascii(payload, 4, named) : "\0") : null;
      for (const r of found) removed.add(r);
      if (cleaned && cleaned.length <= payload.length - 4) {
        replacement.set(payload.subarray(0, 4));
        replacement.set(cleaned, 4);
      } else {
        // an empty TIFF structure rather than zeros, so readers see no EXIF rather than a broken one
        if (payload.length >= 18) replacement.set([0, 0, 0, 0, 0x4d, 0x4d, 0x00, 0x2a, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0]);
        removed.add("EXIF");
      }
    } else {
      const xmp = item.contentType === "application/rdf+xml";
      removed.add(hit ? `item ${item.type.trim()}` : xmp ? "XMP" : `item ${item.contentType || item.type.trim()}`);
      if (xmp && payload.length >= EMPTY_XMP.length) replacement.fill(0x20).set(new TextEncoder().encode(EMPTY_XMP));
    }
    let at = 0;
    for (const p of parts) {
      out.set(replacement.subarray(at, at + p.length), p.offset);
      at += p.length;
    }
  }
  return out;
}
