/** WebP (RIFF): chunk surgery (EXIF, XMP, unknown chunks) and the VP8X flags; the policy is policy.ts. */
import { cleanExifBlock, EXIF_HEADER, tiffStartIn } from "./exif-block.ts";
import { ContainerRefused, LIMITS, unitCap } from "./limits.ts";
import { checkTiff, type StripPolicy } from "./tiff.ts";
import { ascii, checking, concat, type Drop, holdsFinding, startsWith } from "./walk.ts";

const WEBP_PICTURE_CHUNKS = new Set(["VP8 ", "VP8L", "VP8X", "ALPH", "ANIM", "ANMF", "ICCP"]);

export function stripWebp(b: Uint8Array, policy: StripPolicy, removed: Set<string>, drop: Drop): Uint8Array {
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
