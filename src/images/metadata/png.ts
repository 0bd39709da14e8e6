/** PNG: chunk surgery (eXIf, text chunks, private chunks); the policy is policy.ts. */
import { inflateSync } from "node:zlib";
import { cleanExifBlock, tiffStartIn } from "./exif-block.ts";
import { ContainerRefused, LIMITS, unitCap } from "./limits.ts";
import { isPlainPngKeyword } from "./scan.ts";
import { checkTiff, type StripPolicy } from "./tiff.ts";
import { ascii, checking, concat, type Drop, holdsFinding } from "./walk.ts";

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** Ancillary chunks that shape the picture (colour, transparency, animation): kept under both policies. */
const PNG_PICTURE_CHUNKS = new Set([
  "iCCP",
  "sRGB",
  "gAMA",
  "cHRM",
  "cICP",
  "mDCv",
  "cLLi",
  "sBIT",
  "tRNS",
  "bKGD",
  "pHYs",
  "acTL",
  "fcTL",
  "fdAT",
  "hIST",
  "sPLT",
]);

function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  view.setUint32(8 + data.length, Bun.hash.crc32(out.subarray(4, 8 + data.length)) >>> 0);
  return out;
}

export function stripPng(b: Uint8Array, policy: StripPolicy, removed: Set<string>, drop: Drop): Uint8Array {
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
