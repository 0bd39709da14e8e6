/**
 * Hostile containers for the metadata surgery, the sniffer and the JPEG scan guard: every format the service strips
 * (JPEG, PNG, WebP, GIF, AVIF), each file a small valid picture (64×48) carrying a structure built to make a naive
 * parser do work out of proportion to its size: many segments, chunks, blocks or items; many extents naming one
 * range; deep and looping IFD chains; huge declared counts. Files are about `target` bytes (1 MB by default), so a
 * cost can be judged per MB. Built with sharp and by hand: the same bytes every run.
 */
import { deflateSync } from "node:zlib";
import sharp from "sharp";
import { LIMITS } from "../../src/images/metadata/limits.ts";

export type HostileFormat = "jpeg" | "png" | "webp" | "gif" | "avif";

export interface HostileFile {
  name: string;
  format: HostileFormat;
  /** What the file abuses (the class a bench reports per). */
  kind: "many-units" | "many-extents" | "deep-ifd" | "looping-ifd" | "huge-counts";
  bytes: Uint8Array;
  filename: string;
  mimetype: string;
}

export const MIME: Record<HostileFormat, string> = { jpeg: "image/jpeg", png: "image/png", webp: "image/webp", gif: "image/gif", avif: "image/avif" };
export const EXT: Record<HostileFormat, string> = { jpeg: "jpg", png: "png", webp: "webp", gif: "gif", avif: "avif" };

const u16be = (v: number) => [(v >> 8) & 0xff, v & 0xff];
const u32be = (v: number) => [(v >>> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff];
const cat = (parts: (Uint8Array | number[])[]) =>
  new Uint8Array(Buffer.concat(parts.map((p) => Buffer.from(p instanceof Uint8Array ? p : Uint8Array.from(p)))));
const latin = (s: string) => [...Buffer.from(s, "latin1")];

// ---------------------------------------------------------------------------------------------------------------
// TIFF (EXIF) structures, big-endian

interface Entry {
  tag: number;
  type: number;
  count: number;
  value: number;
}

/** An IFD at `at`: its entries and the next IFD's offset. */
function ifd(entries: Entry[], next: number): number[] {
  const out = [...u16be(entries.length)];
  for (const e of entries) out.push(...u16be(e.tag), ...u16be(e.type), ...u32be(e.count), ...u32be(e.value));
  return [...out, ...u32be(next)];
}

const TIFF_HEADER = [0x4d, 0x4d, 0x00, 0x2a, 0, 0, 0, 8];

/** IFD0 whose next IFD is itself, with `n` Exif, GPS and Interop pointers all naming IFD0 again. */
export function loopingTiff(n = 1000): Uint8Array {
  const entries: Entry[] = [];
  for (let i = 0; i < n; i++) entries.push({ tag: [0x8769, 0x8825, 0xa005][i % 3]!, type: 4, count: 1, value: 8 });
  return cat([TIFF_HEADER, ifd(entries, 8)]);
}

/** A chain of `n` IFDs (each one entry), the last with a GPS pointer into a GPS IFD. */
export function deepTiff(n: number): Uint8Array {
  const size = 18; // 2 + 12 + 4
  const parts: number[][] = [TIFF_HEADER];
  for (let i = 0; i < n; i++) {
    const at = 8 + i * size;
    parts.push(ifd([{ tag: 0x010f, type: 2, count: 4, value: 0x41424300 }], i === n - 1 ? 0 : at + size));
  }
  return cat(parts);
}

/** IFD0 with a GPS pointer; entries whose counts declare gigabytes of values, and an IFD that declares 65,535 entries. */
export function hugeCountTiff(): Uint8Array {
  const gpsAt = 8 + 2 + 4 * 12 + 4;
  const entries: Entry[] = [
    { tag: 0x010f, type: 12, count: 0x1fffffff, value: 8 },
    { tag: 0x0110, type: 2, count: 0xffffffff, value: 8 },
    { tag: 0x8825, type: 4, count: 1, value: gpsAt },
    { tag: 0x8769, type: 4, count: 1, value: gpsAt },
  ];
  const gps = [...u16be(0xffff)];
  for (let i = 0; i < 200; i++) gps.push(...u16be(i % 32), ...u16be(5), ...u32be(0x0fffffff), ...u32be(8));
  return cat([TIFF_HEADER, ifd(entries, 0), gps]);
}

// ---------------------------------------------------------------------------------------------------------------
// containers

async function base(format: HostileFormat, exif = false): Promise<Uint8Array> {
  let image = sharp({ create: { width: 64, height: 48, channels: 3, background: "#3a6" } });
  if (exif) image = image.withExif({ IFD0: { Make: "Base" } });
  const out =
    format === "jpeg"
      ? image.jpeg()
      : format === "png"
        ? image.png()
        : format === "webp"
          ? image.webp()
          : format === "gif"
            ? image.gif()
            : image.avif({ effort: 0 });
  return new Uint8Array(await out.toBuffer());
}

function jpegSegment(marker: number, payload: Uint8Array | number[]): Uint8Array {
  const p = payload instanceof Uint8Array ? payload : Uint8Array.from(payload);
  return cat([[0xff, marker, ...u16be(p.length + 2)], p]);
}

/** The JPEG with `segments` right after SOI. */
const intoJpeg = (jpeg: Uint8Array, segments: Uint8Array[]) => cat([jpeg.subarray(0, 2), ...segments, jpeg.subarray(2)]);

function pngChunk(type: string, data: Uint8Array | number[]): Uint8Array {
  const d = data instanceof Uint8Array ? data : Uint8Array.from(data);
  const body = cat([latin(type), d]);
  return cat([u32be(d.length), body, u32be(Bun.hash.crc32(body) >>> 0)]);
}

/** The PNG with `chunks` right after IHDR. */
const intoPng = (png: Uint8Array, chunks: Uint8Array[]) => cat([png.subarray(0, 33), ...chunks, png.subarray(33)]);

function riffChunk(type: string, data: Uint8Array | number[]): Uint8Array {
  const d = data instanceof Uint8Array ? data : Uint8Array.from(data);
  const size = Buffer.alloc(4);
  size.writeUInt32LE(d.length);
  return cat([latin(type), size, d, d.length & 1 ? [0] : []]);
}

/** The WebP with `chunks` appended, RIFF size fixed. */
function intoWebp(webp: Uint8Array, chunks: Uint8Array[]): Uint8Array {
  const out = cat([webp, ...chunks]);
  new DataView(out.buffer).setUint32(4, out.length - 8, true);
  return out;
}

/** The GIF with `blocks` after its header and global colour table. */
function intoGif(gif: Uint8Array, blocks: Uint8Array[]): Uint8Array {
  const at = 13 + (gif[10]! & 0x80 ? 3 * (1 << ((gif[10]! & 7) + 1)) : 0);
  return cat([gif.subarray(0, at), ...blocks, gif.subarray(at)]);
}

function box(type: string, payload: Uint8Array | number[]): Uint8Array {
  const p = payload instanceof Uint8Array ? payload : Uint8Array.from(payload);
  return cat([u32be(8 + p.length), latin(type), p]);
}
const fullBox = (type: string, version: number, flags: number, payload: Uint8Array | number[]) =>
  box(type, cat([[version, (flags >> 16) & 0xff, (flags >> 8) & 0xff, flags & 0xff], payload instanceof Uint8Array ? payload : payload]));

interface TopBox {
  type: string;
  start: number;
  end: number;
}
function topBoxes(b: Uint8Array, start: number, end: number): TopBox[] {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const list: TopBox[] = [];
  for (let pos = start; pos + 8 <= end; ) {
    const size = view.getUint32(pos);
    list.push({ type: Buffer.from(b.subarray(pos + 4, pos + 8)).toString("latin1"), start: pos + 8, end: pos + size });
    pos += size;
  }
  return list;
}

interface AvifItem {
  id: number;
  type: string;
  /** Extents as offsets into `payload` (placed at the end of mdat). */
  extents: { offset: number; length: number }[];
}

/**
 * An AVIF built from sharp's: its coded image kept (item 1, moved), its other meta boxes (hdlr, pitm, iprp) kept,
 * iinf and iloc written anew with `items` added, whose extents name bytes of `payload` (appended to mdat). `iloc`
 * replaces the whole location box when given (its extents then name what they like).
 */
async function hostileAvif(items: AvifItem[], payload: Uint8Array, iloc?: Uint8Array, iinfOverride?: Uint8Array): Promise<Uint8Array> {
  const b = await base("avif");
  const top = topBoxes(b, 0, b.length);
  const ftyp = top.find((x) => x.type === "ftyp")!;
  const meta = top.find((x) => x.type === "meta")!;
  const mdat = top.find((x) => x.type === "mdat")!;
  const children = topBoxes(b, meta.start + 4, meta.end);
  const keep = children.filter((c) => ["hdlr", "pitm", "iprp"].includes(c.type)).map((c) => b.subarray(c.start - 8, c.end));
  // the coded image: item 1's extent (sharp writes one)
  const oldIloc = children.find((c) => c.type === "iloc")!;
  const v = new DataView(b.buffer, b.byteOffset);
  // sharp writes version 0, offsets and lengths of 4 bytes, a base offset of 4 bytes, item 1 first, one extent
  const baseSize = b[oldIloc.start + 5]! >> 4;
  let at = oldIloc.start + 4 + 2 + 2 + 2 + 2; // fullbox, sizes, count, item id, data reference
  const baseOffset = baseSize === 4 ? v.getUint32(at) : 0;
  at += baseSize + 2; // base offset, extent count
  const imageOffset = baseOffset + v.getUint32(at);
  const imageLength = v.getUint32(at + 4);
  const coded = b.subarray(imageOffset, imageOffset + imageLength);
  const all: AvifItem[] = [{ id: 1, type: "av01", extents: [{ offset: -1, length: coded.length }] }, ...items];
  const infes = all.map((it) => fullBox("infe", 2, 0, [...u16be(it.id), 0, 0, ...latin(it.type), 0]));
  const iinf = iinfOverride ?? fullBox("iinf", 0, 0, cat([u16be(all.length), ...infes]));
  const makeIloc = (mdatData: number) =>
    iloc ??
    fullBox(
      "iloc",
      0,
      0,
      cat([
        [0x44, 0x00],
        u16be(all.length),
        ...all.map((it) =>
          cat([
            u16be(it.id),
            [0, 0],
            u16be(it.extents.length),
            ...it.extents.map((e) => [...u32be(e.offset < 0 ? mdatData : mdatData + coded.length + e.offset), ...u32be(e.length)]),
          ]),
        ),
      ]),
    );
  const ftypBytes = b.subarray(0, ftyp.end);
  const metaSize = (mdatData: number) => fullBox("meta", 0, 0, cat([...keep.slice(0, 1), makeIloc(mdatData), iinf, ...keep.slice(1)])).length;
  const size = metaSize(0);
  const mdatData = ftypBytes.length + size + 8;
  const metaBytes = fullBox("meta", 0, 0, cat([...keep.slice(0, 1), makeIloc(mdatData), iinf, ...keep.slice(1)]));
  void mdat;
  return cat([ftypBytes, metaBytes, box("mdat", cat([coded, payload]))]);
}

// ---------------------------------------------------------------------------------------------------------------

const MB = 1024 * 1024;
const exifPayload = (tiff: Uint8Array) => cat([latin("Exif\0\0"), tiff]);

/** The corpus: about `target` bytes per file. */
export async function hostileCorpus(target = MB): Promise<HostileFile[]> {
  const files: HostileFile[] = [];
  const add = (format: HostileFormat, kind: HostileFile["kind"], name: string, bytes: Uint8Array) =>
    files.push({ name: `${format} ${name}`, format, kind, bytes, filename: `${name.replace(/\W+/g, "-")}.${EXT[format]}`, mimetype: MIME[format] });

  // JPEG
  const jpeg = await base("jpeg");
  add(
    "jpeg",
    "many-units",
    "empty APP15 segments",
    intoJpeg(
      jpeg,
      Array.from({ length: Math.floor(target / 4) }, () => jpegSegment(0xef, [])),
    ),
  );
  add(
    "jpeg",
    "many-units",
    "one-byte COM segments",
    intoJpeg(
      jpeg,
      Array.from({ length: Math.floor(target / 5) }, () => jpegSegment(0xfe, [0x47])),
    ),
  );
  const loopSeg = jpegSegment(0xe1, exifPayload(loopingTiff(5000)));
  add(
    "jpeg",
    "looping-ifd",
    "EXIF IFDs pointing at themselves",
    intoJpeg(
      jpeg,
      Array.from({ length: Math.floor(target / loopSeg.length) }, () => loopSeg),
    ),
  );
  const deepSeg = jpegSegment(0xe1, exifPayload(deepTiff(3600)));
  add(
    "jpeg",
    "deep-ifd",
    "EXIF chains of 3600 IFDs",
    intoJpeg(
      jpeg,
      Array.from({ length: Math.floor(target / deepSeg.length) }, () => deepSeg),
    ),
  );
  const hugeSeg = jpegSegment(0xe1, exifPayload(hugeCountTiff()));
  add(
    "jpeg",
    "huge-counts",
    "EXIF counts of gigabytes",
    intoJpeg(
      jpeg,
      Array.from({ length: Math.floor(target / hugeSeg.length) }, () => hugeSeg),
    ),
  );

  // scan data the walk must step through: stuffed 0xFF00 pairs, and restart markers, every other byte
  const sos = Buffer.from(jpeg).indexOf(Buffer.from([0xff, 0xda]));
  const sosEnd = sos + 2 + ((jpeg[sos + 2]! << 8) | jpeg[sos + 3]!);
  const scan = (unit: number[]) => cat([jpeg.subarray(0, sosEnd), ...Array.from({ length: Math.floor(target / unit.length) }, () => unit), [0xff, 0xd9]]);
  add("jpeg", "many-units", "scan data of stuffed 0xFF00", scan([0xff, 0x00]));
  add("jpeg", "many-units", "scan data of restart markers", scan([0x12, 0xff, 0xd0, 0x34, 0xff, 0xd1]));

  // as many segments as a file of this size may have, padded to the size with one large comment
  const underCap = (cap: number, unit: number) => Math.min(cap, Math.floor(target / unit)) - 40;
  const fewer = Array.from({ length: underCap(LIMITS.jpegSegmentsBase + Math.floor(target / LIMITS.jpegBytesPerSegment), 4) }, () => jpegSegment(0xef, []));
  add(
    "jpeg",
    "many-units",
    "APP15 segments up to the cap",
    intoJpeg(jpeg, [...fewer, ...Array.from({ length: Math.ceil((target - fewer.length * 4) / 65_000) }, () => jpegSegment(0xfe, new Uint8Array(65_000)))]),
  );

  // PNG
  const png = await base("png");
  const pngFewer = Array.from({ length: underCap(LIMITS.pngChunksBase + Math.floor(target / LIMITS.pngBytesPerChunk), 13) }, () => pngChunk("tEXt", [0x41, 0]));
  add(
    "png",
    "many-units",
    "tEXt chunks up to the cap",
    intoPng(png, [...pngFewer, pngChunk("tEXt", cat([latin("Comment\0"), new Uint8Array(target - pngFewer.length * 14)]))]),
  );
  add(
    "png",
    "many-units",
    "one-byte tEXt chunks",
    intoPng(
      png,
      Array.from({ length: Math.floor(target / 15) }, () => pngChunk("tEXt", [0x41, 0, 0x42, 0x43])),
    ),
  );
  add("png", "looping-ifd", "eXIf IFDs pointing at themselves", intoPng(png, [pngChunk("eXIf", loopingTiff(Math.floor(target / 12) - 10))]));
  add("png", "deep-ifd", "eXIf chain of IFDs", intoPng(png, [pngChunk("eXIf", deepTiff(Math.floor(target / 18) - 2))]));
  const hugePng = pngChunk("eXIf", hugeCountTiff());
  add(
    "png",
    "huge-counts",
    "eXIf counts of gigabytes, many chunks",
    intoPng(
      png,
      Array.from({ length: Math.floor(target / hugePng.length) }, () => hugePng),
    ),
  );

  // WebP (extended: sharp writes VP8X when there is EXIF)
  const webp = await base("webp", true);
  add(
    "webp",
    "many-units",
    "empty unknown chunks",
    intoWebp(
      webp,
      Array.from({ length: Math.floor(target / 8) }, () => riffChunk("ABCD", [])),
    ),
  );
  add("webp", "looping-ifd", "EXIF IFDs pointing at themselves", intoWebp(webp, [riffChunk("EXIF", loopingTiff(Math.floor(target / 12) - 10))]));
  add("webp", "deep-ifd", "EXIF chain of IFDs", intoWebp(webp, [riffChunk("EXIF", deepTiff(Math.floor(target / 18) - 2))]));
  const hugeWebp = riffChunk("EXIF", hugeCountTiff());
  add(
    "webp",
    "huge-counts",
    "EXIF counts of gigabytes, many chunks",
    intoWebp(
      webp,
      Array.from({ length: Math.floor(target / hugeWebp.length) }, () => hugeWebp),
    ),
  );

  // GIF
  const gif = await base("gif");
  const gifFewer = Array.from({ length: underCap(LIMITS.gifBlocksBase + Math.floor(target / LIMITS.gifBytesPerBlock), 5) - 10 }, () =>
    Uint8Array.from([0x21, 0xfe, 1, 0x41, 0]),
  );
  add(
    "gif",
    "many-units",
    "comment extensions up to the cap",
    intoGif(gif, [
      ...gifFewer,
      cat([[0x21, 0xfe], ...Array.from({ length: Math.floor((target - gifFewer.length * 5) / 256) }, () => cat([[255], new Uint8Array(255)])), [0]]),
    ]),
  );
  add(
    "gif",
    "many-units",
    "one-byte comment extensions",
    intoGif(
      gif,
      Array.from({ length: Math.floor(target / 5) }, () => Uint8Array.from([0x21, 0xfe, 1, 0x41, 0])),
    ),
  );
  const subBlocks = new Uint8Array(Math.floor(target / 2) * 2 + 3 + 12);
  subBlocks.set([0x21, 0xff, 11, ...latin("XMP DataXMP")]);
  for (let i = 14; i < subBlocks.length - 1; i += 2) subBlocks.set([1, 0x41], i);
  subBlocks[subBlocks.length - 1] = 0;
  add("gif", "many-units", "one application extension of one-byte sub-blocks", intoGif(gif, [subBlocks]));
  add(
    "gif",
    "many-units",
    "unknown application extensions",
    intoGif(
      gif,
      Array.from({ length: Math.floor(target / 16) }, () => Uint8Array.from([0x21, 0xff, 11, ...latin("ABCDEFGH1.0"), 0])),
    ),
  );

  // AVIF
  const exifItem = cat([u32be(6), exifPayload(loopingTiff(40))]);
  const big = new Uint8Array(Math.floor(target * 0.55));
  big.set(exifItem);
  // 254 Exif items, each of 32 extents (as many as libheif reads) all naming the same half megabyte
  add(
    "avif",
    "many-extents",
    "254 Exif items of extents over one range",
    await hostileAvif(
      Array.from({ length: 254 }, (_, i) => ({ id: i + 2, type: "Exif", extents: Array.from({ length: 32 }, () => ({ offset: 0, length: big.length })) })),
      big,
    ),
  );
  add(
    "avif",
    "many-extents",
    "8 Exif items of 32 extents over one range",
    await hostileAvif(
      Array.from({ length: 8 }, (_, i) => ({ id: i + 2, type: "Exif", extents: Array.from({ length: 32 }, () => ({ offset: 0, length: big.length })) })),
      cat([big, new Uint8Array(target - big.length)]),
    ),
  );
  add(
    "avif",
    "many-extents",
    "one Exif item of 60,000 extents over one range",
    await hostileAvif([{ id: 2, type: "Exif", extents: Array.from({ length: 60_000 }, () => ({ offset: 0, length: big.length })) }], big),
  );
  add(
    "avif",
    "many-units",
    "4000 Exif items",
    await hostileAvif(
      Array.from({ length: 4000 }, (_, i) => ({ id: i + 2, type: "Exif", extents: [{ offset: 0, length: exifItem.length }] })),
      cat([exifItem, new Uint8Array(Math.max(0, target - 200_000))]),
    ),
  );
  // iloc of zero-width fields: 65,535 items of 65,535 extents that take no bytes at all
  const zeroIloc = fullBox(
    "iloc",
    1,
    0,
    cat([[0x00, 0x00], u16be(0xffff), ...Array.from({ length: 0xffff }, (_, i) => [...u16be(i + 1), 0, 0, 0, 0, ...u16be(0xffff)])]),
  );
  add(
    "avif",
    "huge-counts",
    "iloc of 65535 items × 65535 empty extents",
    await hostileAvif([], new Uint8Array(Math.max(0, target - zeroIloc.length)), zeroIloc),
  );
  const loopingItem = cat([u32be(0), loopingTiff(Math.floor(target / 12) - 10)]);
  add(
    "avif",
    "looping-ifd",
    "Exif item of IFDs pointing at themselves",
    await hostileAvif([{ id: 2, type: "Exif", extents: [{ offset: 0, length: loopingItem.length }] }], loopingItem),
  );
  const deepItem = cat([u32be(0), deepTiff(Math.floor(target / 18) - 2)]);
  add(
    "avif",
    "deep-ifd",
    "Exif item of a chain of IFDs",
    await hostileAvif([{ id: 2, type: "Exif", extents: [{ offset: 0, length: deepItem.length }] }], deepItem),
  );
  // iinf that declares 4 billion entries
  const hugeIinf = fullBox("iinf", 1, 0, cat([u32be(0xffffffff), fullBox("infe", 2, 0, [...u16be(1), 0, 0, ...latin("av01"), 0])]));
  add("avif", "huge-counts", "iinf declaring 4 billion items", await hostileAvif([], new Uint8Array(target), undefined, hugeIinf));
  // compressed text that inflates to megabytes: 4 MB of zeros deflate to ~4 KB
  const bomb = pngChunk("zTXt", cat([latin("Comment\0"), [0], deflateSync(new Uint8Array(4 * MB), { level: 9 })]));
  add(
    "png",
    "huge-counts",
    "zTXt chunks inflating to 4 MB each",
    intoPng(
      png,
      Array.from({ length: Math.floor(target / bomb.length) }, () => bomb),
    ),
  );

  const megabyte = pngChunk("zTXt", cat([latin("Comment\0"), [0], deflateSync(new Uint8Array(MB), { level: 9 })]));
  const allowed = Math.floor((LIMITS.pngInflatedBase + LIMITS.pngInflatedPerByte * target) / MB) - 1;
  const filler = pngChunk("tEXt", cat([latin("Comment\0"), new Uint8Array(Math.max(0, target - allowed * megabyte.length - 200))]));
  add("png", "huge-counts", "zTXt chunks inflating up to the budget", intoPng(png, [...Array.from({ length: allowed }, () => megabyte), filler]));

  // the same classes in files small enough to be stripped in-process (at most 256 KB, a picture within the thumbnail box)
  if (target >= MB) {
    const small = await hostileCorpus(240 * 1024);
    const scales = /up to the|IFDs pointing at themselves|chain of IFDs|inflating|one-byte/;
    files.push(...small.filter((f) => scales.test(f.name)).map((f) => ({ ...f, name: `${f.name} (240 KB)` })));
  }
  return files;
}
