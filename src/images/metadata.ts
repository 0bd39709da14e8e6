/**
 * Metadata policy of a group (issue 17 §1), applied to the bytes before they are hashed and stored: the one
 * function processing and variants reuse is `applyMetadataPolicy(bytes, mimetype, policy)`.
 *
 * Stripping is segment/chunk surgery, never a re-encode: the pixels decode exactly as the upload's.
 *
 * - `keep`: the bytes as sent.
 * - `strip_location`: the EXIF GPS IFD (the GPSInfo entry of IFD0 and the values it points at), XMP packets (they
 *   hold exif:GPS*, photoshop:City/State/Country, Iptc4xmpCore:Location…; the whole packet goes), IPTC/Photoshop
 *   blocks (IPTC City/Province/Country), JUMBF/C2PA boxes (location assertions), multi-picture data and whatever
 *   follows the end of the image (MPF secondary images, HDR gain maps and phone trailers carry EXIF of their own).
 *   Everything else of the EXIF (camera, date) stays.
 * - `strip_all`: also the rest of the EXIF (camera and lens serials, maker notes, dates, owner names, embedded
 *   thumbnails): an EXIF block with only the Orientation tag is kept when the image has a non-default orientation;
 *   comments, every text chunk, JFIF thumbnails, FlashPix and unknown application blocks.
 * - Both keep what shapes the picture: the orientation, the ICC profile (JPEG APP2 ICC_PROFILE, PNG iCCP, WebP
 *   ICCP, GIF ICCRGBG1012), JFIF density, the Adobe APP14 colour transform, PNG sRGB/gAMA/cHRM/cICP/sBIT/tRNS/bKGD/
 *   pHYs and animation chunks, GIF looping (NETSCAPE2.0/ANIMEXTS1.0), graphic control and plain-text extensions.
 *
 * AVIF (HEIF) metadata sits in items that a location table (`iloc`) points into: it is overwritten in place, at the
 * same length, so no offset moves and the coded image is untouched (the Exif item cleaned as above and padded with
 * zeros; XMP and other `mime` items blanked). TIFF is stored as sent under every policy (`unparsed` in `removed`): its
 * metadata and its pixels share one web of offsets, and a re-encode would not be stripping. A file this module cannot
 * walk is stored as sent too.
 */
import { EOI, jpegSegments, SOS } from "./jpeg.ts";

export const METADATA_POLICIES = ["keep", "strip_location", "strip_all"] as const;
export type MetadataPolicy = (typeof METADATA_POLICIES)[number];
export const DEFAULT_METADATA_POLICY: MetadataPolicy = "strip_location";

export interface PolicyResult {
  /** What to store: the input itself when nothing was removed. */
  bytes: Uint8Array;
  changed: boolean;
  /** What was removed, in words ("EXIF GPS", "XMP", "trailing data"…); ["unparsed"] when the file could not be walked. */
  removed: string[];
}

export function applyMetadataPolicy(bytes: Uint8Array, mimetype: string, policy: MetadataPolicy): PolicyResult {
  if (policy === "keep") return { bytes, changed: false, removed: [] };
  const removed = new Set<string>();
  let out: Uint8Array | null;
  try {
    switch (mimetype) {
      case "image/jpeg":
        out = stripJpeg(bytes, policy, removed);
        break;
      case "image/png":
        out = stripPng(bytes, policy, removed);
        break;
      case "image/webp":
        out = stripWebp(bytes, policy, removed);
        break;
      case "image/gif":
        out = stripGif(bytes, policy, removed);
        break;
      case "image/avif":
        out = stripHeif(bytes, policy, removed);
        break;
      default:
        out = null;
    }
  } catch {
    out = null;
  }
  if (out === null) return { bytes, changed: false, removed: ["unparsed"] };
  if (removed.size === 0 || equalBytes(out, bytes)) return { bytes, changed: false, removed: [] };
  return { bytes: out, changed: true, removed: [...removed] };
}

const equalBytes = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
const ascii = (b: Uint8Array, start: number, length: number) => String.fromCharCode(...b.subarray(start, start + length));
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
// EXIF (a TIFF structure: header, IFD0 → Exif/GPS/Interop sub-IFDs, IFD1)

const TAG_ORIENTATION = 0x0112;
const TAG_GPS_IFD = 0x8825;
const TAG_EXIF_IFD = 0x8769;
const TAG_INTEROP_IFD = 0xa005;
const TYPE_SIZES = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4] as const;

class Tiff {
  readonly view: DataView;
  readonly little: boolean;
  constructor(readonly bytes: Uint8Array) {
    if (bytes.length < 8) throw new Error("short TIFF");
    const order = ascii(bytes, 0, 2);
    if (order !== "II" && order !== "MM") throw new Error("not TIFF");
    this.little = order === "II";
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  u16 = (at: number) => this.view.getUint16(at, this.little);
  u32 = (at: number) => this.view.getUint32(at, this.little);
  setU16 = (at: number, v: number) => this.view.setUint16(at, v, this.little);
  setU32 = (at: number, v: number) => this.view.setUint32(at, v, this.little);
  get ifd0() {
    return this.u32(4);
  }
  /** The entries of the IFD at `at`: tag, type, count, where its value is, and its size. */
  entries(at: number) {
    if (at < 8 || at + 2 > this.bytes.length) throw new Error("IFD out of range");
    const n = this.u16(at);
    if (at + 2 + n * 12 + 4 > this.bytes.length) throw new Error("IFD out of range");
    const list: { entry: number; tag: number; type: number; count: number; size: number; value: number }[] = [];
    for (let i = 0; i < n; i++) {
      const entry = at + 2 + i * 12;
      const type = this.u16(entry + 2);
      const count = this.u32(entry + 4);
      const size = (TYPE_SIZES[type] ?? 1) * count;
      list.push({ entry, tag: this.u16(entry), type, count, size, value: size > 4 ? this.u32(entry + 8) : entry + 8 });
    }
    return list;
  }
  nextIfd(at: number) {
    return this.u32(at + 2 + this.u16(at) * 12);
  }
  zero(start: number, length: number) {
    if (start < 0 || start >= this.bytes.length) return;
    this.bytes.fill(0, start, Math.min(this.bytes.length, start + length));
  }
  /** Zeroes an IFD, the values it points at and (depth-first) its sub-IFDs. */
  zeroIfd(at: number, depth = 0) {
    if (depth > 4) return;
    const list = this.entries(at);
    for (const e of list) {
      if (e.tag === TAG_EXIF_IFD || e.tag === TAG_GPS_IFD || e.tag === TAG_INTEROP_IFD) {
        const sub = this.u32(e.entry + 8);
        if (sub >= 8 && sub < this.bytes.length) this.zeroIfd(sub, depth + 1);
      }
      if (e.size > 4) this.zero(e.value, e.size);
    }
    this.zero(at, 2 + list.length * 12 + 4);
  }
  /** Removes entries of the IFD at `at` (their values and sub-IFDs zeroed), at the same length: later entries move up. */
  removeEntries(at: number, remove: (tag: number) => boolean): boolean {
    const list = this.entries(at);
    const keep = list.filter((e) => !remove(e.tag));
    if (keep.length === list.length) return false;
    const next = this.nextIfd(at);
    for (const e of list) {
      if (!remove(e.tag)) continue;
      if (e.tag === TAG_EXIF_IFD || e.tag === TAG_GPS_IFD || e.tag === TAG_INTEROP_IFD) {
        const sub = this.u32(e.entry + 8);
        if (sub >= 8 && sub < this.bytes.length) this.zeroIfd(sub);
      }
      if (e.size > 4) this.zero(e.value, e.size);
    }
    const kept = keep.map((e) => this.bytes.slice(e.entry, e.entry + 12));
    this.zero(at, 2 + list.length * 12 + 4);
    this.setU16(at, keep.length);
    kept.forEach((entry, i) => this.bytes.set(entry, at + 2 + i * 12));
    this.setU32(at + 2 + keep.length * 12, next);
    return true;
  }
  orientation(): number | null {
    const e = this.entries(this.ifd0).find((x) => x.tag === TAG_ORIENTATION && x.type === 3);
    return e ? this.u16(e.entry + 8) : null;
  }
}

/** A TIFF structure holding only IFD0 with the Orientation tag; null for the default orientation (1) or none. */
function minimalExif(orientation: number | null, little: boolean): Uint8Array | null {
  if (orientation === null || orientation < 2 || orientation > 8) return null;
  const out = new Uint8Array(26);
  const view = new DataView(out.buffer);
  out.set(little ? [0x49, 0x49, 0x2a, 0x00] : [0x4d, 0x4d, 0x00, 0x2a]);
  view.setUint32(4, 8, little);
  view.setUint16(8, 1, little);
  view.setUint16(10, TAG_ORIENTATION, little);
  view.setUint16(12, 3, little);
  view.setUint32(14, 1, little);
  view.setUint16(18, orientation, little);
  view.setUint32(22, 0, little);
  return out;
}

/**
 * The EXIF (a TIFF structure) cleaned by the policy; null when nothing of it should remain. strip_location edits a
 * copy in place (same length: offsets inside stay valid); strip_all rebuilds it with only the orientation.
 */
function cleanExif(tiffBytes: Uint8Array, policy: MetadataPolicy, removed: Set<string>): Uint8Array | null {
  const tiff = new Tiff(tiffBytes.slice());
  if (policy === "strip_all") {
    removed.add("EXIF");
    return minimalExif(tiff.orientation(), tiff.little);
  }
  let changed = tiff.removeEntries(tiff.ifd0, (tag) => tag === TAG_GPS_IFD);
  // IFD1 (the thumbnail's) should not hold one, but nothing forbids it
  const ifd1 = tiff.nextIfd(tiff.ifd0);
  if (ifd1 >= 8 && ifd1 < tiff.bytes.length) changed = tiff.removeEntries(ifd1, (tag) => tag === TAG_GPS_IFD) || changed;
  if (changed) removed.add("EXIF GPS");
  return tiff.bytes;
}

// ---------------------------------------------------------------------------------------------------------------
// JPEG

const EXIF_HEADER = "Exif\0\0";
const XMP_HEADERS = ["http://ns.adobe.com/xap/1.0/\0", "http://ns.adobe.com/xmp/extension/\0"];

function stripJpeg(b: Uint8Array, policy: MetadataPolicy, removed: Set<string>): Uint8Array | null {
  if (b[0] !== 0xff || b[1] !== 0xd8) return null;
  const parts: Uint8Array[] = [b.subarray(0, 2)];
  const n = b.length;
  let copyFrom = 2; // bytes not yet decided on (stray and fill bytes are copied as they are: libjpeg skips them the same way)
  const flush = (to: number) => {
    if (to > copyFrom) parts.push(b.subarray(copyFrom, to));
  };
  for (const { marker, at, length, start, end } of jpegSegments(b)) {
    if (marker === EOI) {
      // whatever follows is not the image (MPF pictures, gain maps, phone trailers)
      flush(end);
      copyFrom = end;
      if (end < n) removed.add("trailing data");
      return removed.size === 0 ? b : concat(parts);
    }
    if (length < 2 || end > n) return null;
    if (marker === SOS) continue;
    const payload = b.subarray(start, end);
    const verdict = jpegSegment(marker, payload, policy);
    if (verdict === "keep") continue;
    flush(at);
    if (verdict !== "drop") {
      const segment = new Uint8Array(4 + verdict.bytes.length);
      segment.set([0xff, marker, ((verdict.bytes.length + 2) >> 8) & 0xff, (verdict.bytes.length + 2) & 0xff]);
      segment.set(verdict.bytes, 4);
      if (verdict.bytes.length + 2 <= 0xffff) parts.push(segment);
    }
    for (const r of verdict === "drop" ? [jpegSegmentName(marker, payload)] : verdict.removed) removed.add(r);
    copyFrom = end;
  }
  // no EOI: the file as walked (a truncated file is the decoder's business)
  flush(n);
  return removed.size === 0 ? b : concat(parts);
}

function jpegSegmentName(marker: number, payload: Uint8Array): string {
  if (marker === 0xfe) return "comment";
  if (marker === 0xe1) return XMP_HEADERS.some((h) => startsWith(payload, 0, h)) ? "XMP" : startsWith(payload, 0, EXIF_HEADER) ? "EXIF" : "APP1";
  if (marker === 0xed) return "IPTC";
  if (marker === 0xeb) return "JUMBF";
  if (marker === 0xe2) return startsWith(payload, 0, "MPF\0") ? "multi-picture data" : startsWith(payload, 0, "FPXR\0") ? "FlashPix" : "APP2";
  if (marker === 0xe0) return "JFIF thumbnail";
  return `APP${marker - 0xe0}`;
}

type SegmentVerdict = "keep" | "drop" | { bytes: Uint8Array; removed: string[] };

function jpegSegment(marker: number, payload: Uint8Array, policy: MetadataPolicy): SegmentVerdict {
  const all = policy === "strip_all";
  if (marker === 0xfe) return all ? "drop" : "keep"; // COM
  if (marker < 0xe0 || marker > 0xef) return "keep"; // tables, frame headers, DRI…
  switch (marker) {
    case 0xe0: // JFIF keeps (density); JFXX (a thumbnail) and others go under strip_all
      return startsWith(payload, 0, "JFIF\0") || !all ? "keep" : "drop";
    case 0xe1: {
      if (startsWith(payload, 0, EXIF_HEADER)) {
        const found = new Set<string>();
        const exif = cleanExif(payload.subarray(6), policy, found);
        if (found.size === 0) return "keep";
        if (!exif) return "drop";
        return { bytes: concat([payload.subarray(0, 6), exif]), removed: [...found] };
      }
      if (XMP_HEADERS.some((h) => startsWith(payload, 0, h))) return "drop";
      return all ? "drop" : "keep";
    }
    case 0xe2: // ICC profiles shape the picture; MPF points at pictures after EOI (removed); FlashPix under strip_all
      if (startsWith(payload, 0, "ICC_PROFILE\0")) return "keep";
      if (startsWith(payload, 0, "MPF\0")) return "drop";
      return all ? "drop" : "keep";
    case 0xed: // Photoshop IRB / IPTC (City, Province, Country)
    case 0xeb: // JUMBF (C2PA manifests may assert a location)
      return "drop";
    case 0xee: // Adobe: the colour transform
      return startsWith(payload, 0, "Adobe") ? "keep" : all ? "drop" : "keep";
    default:
      return all ? "drop" : "keep";
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

function stripPng(b: Uint8Array, policy: MetadataPolicy, removed: Set<string>): Uint8Array | null {
  if (b.length < 8 || PNG_SIGNATURE.some((v, i) => b[i] !== v)) return null;
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const parts: Uint8Array[] = [b.subarray(0, 8)];
  const all = policy === "strip_all";
  let pos = 8;
  while (pos + 12 <= b.length) {
    const length = view.getUint32(pos);
    const type = ascii(b, pos + 4, 4);
    const end = pos + 12 + length;
    if (end > b.length) return null;
    const whole = b.subarray(pos, end);
    const data = b.subarray(pos + 8, pos + 8 + length);
    pos = end;
    const critical = (type.charCodeAt(0) & 0x20) === 0;
    if (critical || PNG_PICTURE_CHUNKS.has(type)) {
      parts.push(whole);
      if (type === "IEND") break;
      continue;
    }
    if (type === "eXIf") {
      const found = new Set<string>();
      const exif = cleanExif(data, policy, found);
      if (found.size === 0) parts.push(whole);
      else if (exif) parts.push(pngChunk("eXIf", exif));
      for (const r of found) removed.add(r);
      continue;
    }
    if (type === "tEXt" || type === "zTXt" || type === "iTXt") {
      const keyword = ascii(data, 0, Math.min(length, 80)).split("\0")[0]!;
      const metadata = keyword === "XML:com.adobe.xmp" || keyword.startsWith("Raw profile type");
      if (!all && !metadata) parts.push(whole);
      else removed.add(keyword === "XML:com.adobe.xmp" ? "XMP" : metadata ? `text ${keyword}` : "text");
      continue;
    }
    // other ancillary chunks (tIME, private ones): kept under strip_location, dropped under strip_all
    if (all) removed.add(type);
    else parts.push(whole);
  }
  if (pos < b.length) removed.add("trailing data");
  return concat(parts);
}

// ---------------------------------------------------------------------------------------------------------------
// WebP (RIFF)

const WEBP_PICTURE_CHUNKS = new Set(["VP8 ", "VP8L", "VP8X", "ALPH", "ANIM", "ANMF", "ICCP"]);

function stripWebp(b: Uint8Array, policy: MetadataPolicy, removed: Set<string>): Uint8Array | null {
  if (!startsWith(b, 0, "RIFF") || !startsWith(b, 8, "WEBP")) return null;
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const riffEnd = Math.min(b.length, 8 + view.getUint32(4, true));
  const chunks: Uint8Array[] = [];
  let pos = 12;
  let hasExif = false;
  while (pos + 8 <= riffEnd) {
    const type = ascii(b, pos, 4);
    const size = view.getUint32(pos + 4, true);
    const end = pos + 8 + size + (size & 1);
    if (pos + 8 + size > riffEnd) return null;
    const whole = b.subarray(pos, Math.min(end, riffEnd));
    const data = b.subarray(pos + 8, pos + 8 + size);
    pos = end;
    if (type === "EXIF") {
      const found = new Set<string>();
      // some writers put the JPEG APP1 header in front of the TIFF structure
      const skip = startsWith(data, 0, EXIF_HEADER) ? 6 : 0;
      const exif = cleanExif(data.subarray(skip), policy, found);
      for (const r of found) removed.add(r);
      if (found.size === 0) {
        chunks.push(whole);
        hasExif = true;
      } else if (exif) {
        chunks.push(riffChunk("EXIF", concat([data.subarray(0, skip), exif])));
        hasExif = true;
      }
      continue;
    }
    if (type === "XMP ") {
      removed.add("XMP");
      continue;
    }
    if (WEBP_PICTURE_CHUNKS.has(type) || policy !== "strip_all") chunks.push(whole);
    else removed.add(`chunk ${type.trim()}`);
  }
  if (riffEnd < b.length) removed.add("trailing data");
  const first = chunks[0];
  if (first && startsWith(first, 0, "VP8X") && first.length >= 9) {
    const vp8x = first.slice();
    vp8x[8] = (vp8x[8]! & ~0x0c) | (hasExif ? 0x08 : 0);
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

function stripGif(b: Uint8Array, policy: MetadataPolicy, removed: Set<string>): Uint8Array | null {
  if (!startsWith(b, 0, "GIF87a") && !startsWith(b, 0, "GIF89a")) return null;
  if (b.length < 13) return null;
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
    const introducer = b[pos]!;
    if (introducer === 0x3b) {
      parts.push(b.subarray(pos, pos + 1));
      if (pos + 1 < b.length) removed.add("trailing data");
      return concat(parts);
    }
    if (introducer === 0x2c) {
      let at = pos + 10;
      if (at > b.length) return null;
      const flags = b[pos + 9]!;
      if (flags & 0x80) at += 3 * (1 << ((flags & 0x07) + 1));
      const end = subBlocksEnd(at + 1); // after the LZW minimum code size
      parts.push(b.subarray(pos, end));
      pos = end;
      continue;
    }
    if (introducer !== 0x21) return null;
    const label = b[pos + 1]!;
    const end = subBlocksEnd(pos + 2);
    const block = b.subarray(pos, end);
    pos = end;
    if (label === 0xfe) {
      if (policy === "strip_all") removed.add("comment");
      else parts.push(block);
    } else if (label === 0xff) {
      const id = block[2] === 11 ? ascii(block, 3, 11) : "";
      if (GIF_PICTURE_APPS.has(id)) parts.push(block);
      else if (id === "XMP DataXMP") removed.add("XMP");
      else if (policy === "strip_all") removed.add(`application ${id.trim() || "extension"}`);
      else parts.push(block);
    } else {
      parts.push(block); // graphic control, plain text
    }
  }
  return null; // no trailer: leave the file as sent
}

// ---------------------------------------------------------------------------------------------------------------
// AVIF (HEIF): items overwritten in place

interface Box {
  type: string;
  /** Where its payload starts (after the header) and where the box ends. */
  start: number;
  end: number;
}

function* heifBoxes(b: Uint8Array, start: number, end: number): Generator<Box> {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let pos = start;
  while (pos + 8 <= end) {
    let size = view.getUint32(pos);
    let header = 8;
    if (size === 1) {
      if (pos + 16 > end) throw new Error("truncated box");
      size = Number(view.getBigUint64(pos + 8));
      header = 16;
    } else if (size === 0) size = end - pos;
    if (size < header || pos + size > end) throw new Error("box out of range");
    yield { type: ascii(b, pos + 4, 4), start: pos + header, end: pos + size };
    pos += size;
  }
  if (pos !== end) throw new Error("trailing bytes in a box");
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

function stripHeif(input: Uint8Array, policy: MetadataPolicy, removed: Set<string>): Uint8Array | null {
  const top = [...heifBoxes(input, 0, input.length)];
  if (top[0]?.type !== "ftyp") return null;
  const meta = top.find((box) => box.type === "meta");
  if (!meta) return input;
  const children = [...heifBoxes(input, meta.start + 4, meta.end)]; // meta is a FullBox
  const iinf = children.find((box) => box.type === "iinf");
  const iloc = children.find((box) => box.type === "iloc");
  const idat = children.find((box) => box.type === "idat");
  if (!iinf || !iloc) return input;

  // iinf: item id → item type (and content type for `mime`)
  const items = new Map<number, { type: string; contentType: string }>();
  const info = new Reader(input, iinf.start, iinf.end);
  const iinfVersion = info.uint(1);
  info.uint(3);
  info.uint(iinfVersion === 0 ? 2 : 4);
  for (const infe of heifBoxes(input, info.pos, iinf.end)) {
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

  // iloc: item id → extents, as offsets in the file
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
  for (let i = 0; i < count; i++) {
    const id = loc.uint(version < 2 ? 2 : 4);
    const method = version === 1 || version === 2 ? loc.uint(2) & 15 : 0;
    loc.uint(2); // data reference index
    const base = loc.uint(baseOffsetSize);
    const n = loc.uint(2);
    const list: Extent[] = [];
    for (let e = 0; e < n; e++) {
      loc.uint(indexSize);
      const offset = loc.uint(offsetSize);
      const length = loc.uint(lengthSize);
      if (method === 0) list.push({ offset: base + offset, length });
      else if (method === 1 && idat) list.push({ offset: idat.start + base + offset, length });
      else list.push({ offset: -1, length });
    }
    extents.set(id, list);
  }

  const out = input.slice();
  for (const [id, item] of items) {
    const isExif = item.type === "Exif";
    const isMeta = item.type === "mime" || item.type === "uri ";
    if (!isExif && !isMeta) continue;
    const parts = extents.get(id) ?? [];
    if (parts.some((p) => p.offset < 0 || p.length === 0 || p.offset + p.length > input.length)) throw new Error("an item outside the file");
    const payload = concat(parts.map((p) => input.subarray(p.offset, p.offset + p.length)));
    let replacement: Uint8Array;
    if (isExif) {
      if (payload.length < 4) throw new Error("short Exif item");
      const tiffStart = 4 + new DataView(payload.buffer, payload.byteOffset).getUint32(0);
      if (tiffStart >= payload.length) throw new Error("Exif item offset out of range");
      const tiff = payload.subarray(tiffStart);
      const cleaned = cleanExif(tiff, policy, removed) ?? new Uint8Array(0);
      if (cleaned.length > tiff.length) throw new Error("cleaned EXIF larger than the item");
      replacement = payload.slice();
      replacement.fill(0, tiffStart);
      replacement.set(cleaned, tiffStart);
      // an empty TIFF structure rather than zeros, so readers see no EXIF rather than a broken one
      if (cleaned.length === 0 && tiff.length >= 14) replacement.set([0x4d, 0x4d, 0x00, 0x2a, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0], tiffStart);
    } else {
      const xmp = item.contentType === "application/rdf+xml";
      removed.add(xmp ? "XMP" : `item ${item.contentType || item.type.trim()}`);
      replacement = new Uint8Array(payload.length);
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
