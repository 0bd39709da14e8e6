/** AVIF (HEIF): items overwritten in place, at the same length, so no offset moves; the policy is policy.ts. */
import { cleanExifBlock, tiffStartIn } from "./exif-block.ts";
import { ContainerRefused, LIMITS } from "./limits.ts";
import { checkTiff, type StripPolicy } from "./tiff.ts";
import { ascii, checking, concat, type Drop, holdsFinding } from "./walk.ts";

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

export function stripHeif(input: Uint8Array, policy: StripPolicy, removed: Set<string>, drop: Drop): Uint8Array {
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
  if (metadata.length > LIMITS.heifMetadataItems)
    throw new ContainerRefused(`The AVIF has ${metadata.length} metadata items; at most ${LIMITS.heifMetadataItems} are accepted.`);
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
    if (next && next.start < r.end && (r.metadata || next.metadata))
      throw new ContainerRefused("The AVIF names overlapping or repeated ranges for its metadata.");
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
    const replacement = new Uint8Array(payload.length);
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
