/**
 * Location hidden where a strict stripper does not look, and where lenient readers (exiftool) still find it, in
 * JPEG, PNG, WebP, GIF and AVIF:
 * - EXIF behind a header other than "Exif\0\0": "Exif\0\x01", lower case, bytes before "Exif";
 * - a GPS pointer in the Exif sub-IFD, or in IFD2 (the IFD chained after IFD1);
 * - XMP without the exact Adobe header (a bare "<?xpacket", "XMP\0://…"), in compressed or odd-keyword PNG text,
 *   in a GIF comment or an unknown application extension, in an AVIF `uuid` box;
 * - GPS inside the EXIF thumbnail (IFD1's JPEG) or a JFXX thumbnail.
 * Every file is a small valid picture; built by hand on sharp's output, the same bytes every run.
 */
import { deflateSync } from "node:zlib";
import sharp from "sharp";
import { PHONE_XMP } from "./metadata-fixtures.ts";

export type LocationFormat = "jpeg" | "png" | "webp" | "gif" | "avif";

export interface LocationFile {
  name: string;
  format: LocationFormat;
  class: "exif-header" | "gps-pointer" | "xmp-header" | "thumbnail";
  bytes: Uint8Array;
  filename: string;
  mimetype: string;
}

const MIME: Record<LocationFormat, string> = { jpeg: "image/jpeg", png: "image/png", webp: "image/webp", gif: "image/gif", avif: "image/avif" };
const EXT: Record<LocationFormat, string> = { jpeg: "jpg", png: "png", webp: "webp", gif: "gif", avif: "avif" };

const cat = (parts: (Uint8Array | number[])[]) =>
  new Uint8Array(Buffer.concat(parts.map((p) => Buffer.from(p instanceof Uint8Array ? p : Uint8Array.from(p)))));
const latin = (s: string) => [...Buffer.from(s, "latin1")];
const u16 = (v: number) => [(v >> 8) & 0xff, v & 0xff];
const u32 = (v: number) => [(v >>> 24) & 0xff, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff];

// ---------------------------------------------------------------------------------------------------------------
// TIFF (big-endian), laid out from a tree of IFDs

interface Value {
  tag: number;
  type: number;
  count: number;
  bytes: number[];
}
interface Pointer {
  tag: number;
  ifd: IfdSpec;
}
interface IfdSpec {
  entries: (Value | Pointer)[];
  next?: IfdSpec;
  /** An embedded JPEG thumbnail: JPEGInterchangeFormat and its length. */
  thumbnail?: Uint8Array;
}

const ascii = (tag: number, text: string): Value => ({ tag, type: 2, count: text.length + 1, bytes: [...latin(text), 0] });
const rationals = (tag: number, values: [number, number][]): Value => ({
  tag,
  type: 5,
  count: values.length,
  bytes: values.flatMap(([n, d]) => [...u32(n), ...u32(d)]),
});

/** A GPS IFD: version, latitude and longitude (48°51'30.24"N, 2°17'40.2"E). */
const gpsIfd = (): IfdSpec => ({
  entries: [
    { tag: 0x0000, type: 1, count: 4, bytes: [2, 3, 0, 0] },
    ascii(0x0001, "N"),
    rationals(0x0002, [
      [48, 1],
      [51, 1],
      [3024, 100],
    ]),
    ascii(0x0003, "E"),
    rationals(0x0004, [
      [2, 1],
      [17, 1],
      [4020, 100],
    ]),
  ],
});

function buildTiff(root: IfdSpec): Uint8Array {
  const order: IfdSpec[] = [];
  const visit = (s: IfdSpec) => {
    order.push(s);
    for (const e of s.entries) if ("ifd" in e) visit(e.ifd);
    if (s.next) visit(s.next);
  };
  visit(root);
  const outOfLine = (s: IfdSpec) => s.entries.reduce((n, e) => n + ("bytes" in e && e.bytes.length > 4 ? e.bytes.length + (e.bytes.length & 1) : 0), 0);
  const entryCount = (s: IfdSpec) => s.entries.length + (s.thumbnail ? 2 : 0);
  const offsets = new Map<IfdSpec, number>();
  let at = 8;
  for (const s of order) {
    offsets.set(s, at);
    at += 2 + 12 * entryCount(s) + 4 + outOfLine(s);
  }
  const thumbs = new Map<IfdSpec, number>();
  for (const s of order) {
    if (!s.thumbnail) continue;
    thumbs.set(s, at);
    at += s.thumbnail.length;
  }
  const out = new Uint8Array(at);
  const view = new DataView(out.buffer);
  out.set([0x4d, 0x4d, 0, 0x2a, 0, 0, 0, 8]);
  for (const s of order) {
    const base = offsets.get(s)!;
    const n = entryCount(s);
    view.setUint16(base, n);
    let data = base + 2 + 12 * n + 4;
    const entries: [number, number, number, (pos: number) => void][] = [];
    for (const e of s.entries) {
      if ("ifd" in e) entries.push([e.tag, 4, 1, (pos) => view.setUint32(pos, offsets.get(e.ifd)!)]);
      else
        entries.push([
          e.tag,
          e.type,
          e.count,
          (pos) => {
            if (e.bytes.length <= 4) out.set(e.bytes, pos);
            else {
              view.setUint32(pos, data);
              out.set(e.bytes, data);
              data += e.bytes.length + (e.bytes.length & 1);
            }
          },
        ]);
    }
    if (s.thumbnail) {
      entries.push([0x0201, 4, 1, (pos) => view.setUint32(pos, thumbs.get(s)!)]);
      entries.push([0x0202, 4, 1, (pos) => view.setUint32(pos, s.thumbnail!.length)]);
    }
    entries.sort((a, b) => a[0] - b[0]);
    entries.forEach(([tag, type, count, write], i) => {
      const pos = base + 2 + 12 * i;
      view.setUint16(pos, tag);
      view.setUint16(pos + 2, type);
      view.setUint32(pos + 4, count);
      write(pos + 8);
    });
    view.setUint32(base + 2 + 12 * n, s.next ? offsets.get(s.next)! : 0);
    if (s.thumbnail) out.set(s.thumbnail, thumbs.get(s)!);
  }
  return out;
}

const camera = () => [ascii(0x010f, "Examplephone"), ascii(0x0110, "EP 15 Pro")];
/** IFD0 → GPS. */
const gpsInIfd0 = () => buildTiff({ entries: [...camera(), { tag: 0x8825, ifd: gpsIfd() }] });
/** IFD0 → Exif sub-IFD → GPS. */
const gpsInExifIfd = () =>
  buildTiff({
    entries: [
      ...camera(),
      {
        tag: 0x8769,
        ifd: {
          entries: [
            { tag: 0x9000, type: 7, count: 4, bytes: latin("0231") },
            { tag: 0x8825, ifd: gpsIfd() },
          ],
        },
      },
    ],
  });
/** IFD0 → IFD1 → IFD2, which holds the GPS pointer. */
const gpsInIfd2 = () =>
  buildTiff({ entries: camera(), next: { entries: [{ tag: 0x0103, type: 3, count: 1, bytes: [0, 6] }], next: { entries: [{ tag: 0x8825, ifd: gpsIfd() }] } } });

// ---------------------------------------------------------------------------------------------------------------
// containers

/** The picture's size: 64×48 fits the thumbnail box (stripped and decoded in-process), 480×360 does not (the decode process, and a thumbnail of its own). */
let size = { width: 64, height: 48 };

async function base(format: LocationFormat, exif = false): Promise<Uint8Array> {
  let image = sharp({ create: { ...size, channels: 3, background: "#2a7" } });
  if (exif) image = image.withExif({ IFD0: { Make: "Base" } });
  const out =
    format === "jpeg"
      ? image.jpeg()
      : format === "png"
        ? image.png()
        : format === "webp"
          ? image.webp({ lossless: true })
          : format === "gif"
            ? image.gif()
            : image.avif({ effort: 0 });
  return new Uint8Array(await out.toBuffer());
}

const app = (marker: number, payload: Uint8Array | number[]) => {
  const p = payload instanceof Uint8Array ? payload : Uint8Array.from(payload);
  return cat([[0xff, marker, ...u16(p.length + 2)], p]);
};
const intoJpeg = (jpeg: Uint8Array, segments: Uint8Array[]) => cat([jpeg.subarray(0, 2), ...segments, jpeg.subarray(2)]);

function pngChunk(type: string, data: Uint8Array | number[]): Uint8Array {
  const d = data instanceof Uint8Array ? data : Uint8Array.from(data);
  const body = cat([latin(type), d]);
  return cat([u32(d.length), body, u32(Bun.hash.crc32(body) >>> 0)]);
}
const intoPng = (png: Uint8Array, chunks: Uint8Array[]) => cat([png.subarray(0, 33), ...chunks, png.subarray(33)]);

function riffChunk(type: string, data: Uint8Array | number[]): Uint8Array {
  const d = data instanceof Uint8Array ? data : Uint8Array.from(data);
  const size = Buffer.alloc(4);
  size.writeUInt32LE(d.length);
  return cat([latin(type), size, d, d.length & 1 ? [0] : []]);
}
/** The extended WebP with its own EXIF chunk replaced by `chunks`, RIFF size fixed (VP8X keeps its EXIF flag). */
function intoWebp(webp: Uint8Array, chunks: Uint8Array[]): Uint8Array {
  const b = Buffer.from(webp);
  const kept: Uint8Array[] = [];
  for (let pos = 12; pos + 8 <= b.length; ) {
    const size = b.readUInt32LE(pos + 4);
    const end = pos + 8 + size + (size & 1);
    if (b.toString("latin1", pos, pos + 4) !== "EXIF") kept.push(b.subarray(pos, end));
    pos = end;
  }
  const out = cat([b.subarray(0, 12), ...kept, ...chunks]);
  new DataView(out.buffer).setUint32(4, out.length - 8, true);
  return out;
}

function intoGif(gif: Uint8Array, blocks: Uint8Array[]): Uint8Array {
  const at = 13 + (gif[10]! & 0x80 ? 3 * (1 << ((gif[10]! & 7) + 1)) : 0);
  return cat([gif.subarray(0, at), ...blocks, gif.subarray(at)]);
}
/** Data as GIF sub-blocks (≤ 255 bytes each), with the terminator. */
const subBlocks = (data: Uint8Array) => {
  const parts: number[] = [];
  for (let i = 0; i < data.length; i += 255) {
    const piece = data.subarray(i, i + 255);
    parts.push(piece.length, ...piece);
  }
  return [...parts, 0];
};

function box(type: string, payload: Uint8Array | number[]): Uint8Array {
  const p = payload instanceof Uint8Array ? payload : Uint8Array.from(payload);
  return cat([u32(8 + p.length), latin(type), p]);
}
const fullBox = (type: string, version: number, payload: Uint8Array | number[]) => box(type, cat([[version, 0, 0, 0], payload]));

interface TopBox {
  type: string;
  at: number;
  start: number;
  end: number;
}
function boxes(b: Uint8Array, start: number, end: number): TopBox[] {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const list: TopBox[] = [];
  for (let pos = start; pos + 8 <= end; ) {
    const size = view.getUint32(pos);
    list.push({ type: Buffer.from(b.subarray(pos + 4, pos + 8)).toString("latin1"), at: pos, start: pos + 8, end: pos + size });
    pos += size;
  }
  return list;
}

/**
 * sharp's AVIF with an Exif item (item 2, describing item 1 through `cdsc`) holding `exif` (the item's bytes:
 * the 4-byte offset and what follows), and `extraTop` boxes after mdat.
 */
async function avifWith(exif: Uint8Array | null, extraTop: Uint8Array[] = []): Promise<Uint8Array> {
  const b = await base("avif");
  const top = boxes(b, 0, b.length);
  const ftyp = top.find((x) => x.type === "ftyp")!;
  const meta = top.find((x) => x.type === "meta")!;
  const children = boxes(b, meta.start + 4, meta.end);
  const raw = (type: string) => children.filter((c) => c.type === type).map((c) => b.subarray(c.at, c.end));
  const oldIloc = children.find((c) => c.type === "iloc")!;
  const v = new DataView(b.buffer, b.byteOffset);
  const baseSize = b[oldIloc.start + 5]! >> 4;
  let at = oldIloc.start + 4 + 2 + 2 + 2 + 2;
  const baseOffset = baseSize === 4 ? v.getUint32(at) : 0;
  at += baseSize + 2;
  const coded = b.subarray(baseOffset + v.getUint32(at), baseOffset + v.getUint32(at) + v.getUint32(at + 4));
  const items = exif ? 2 : 1;
  const iinf = fullBox(
    "iinf",
    0,
    cat([
      u16(items),
      fullBox("infe", 2, [...u16(1), 0, 0, ...latin("av01"), 0]),
      ...(exif ? [fullBox("infe", 2, [...u16(2), 0, 0, ...latin("Exif"), 0])] : []),
    ]),
  );
  const iref = exif ? [fullBox("iref", 0, box("cdsc", [...u16(2), ...u16(1), ...u16(1)]))] : [];
  const iloc = (data: number) =>
    fullBox(
      "iloc",
      0,
      cat([
        [0x44, 0x00],
        u16(items),
        u16(1),
        [0, 0],
        u16(1),
        u32(data),
        u32(coded.length),
        ...(exif ? [cat([u16(2), [0, 0], u16(1), u32(data + coded.length), u32(exif.length)])] : []),
      ]),
    );
  const metaBox = (data: number) => fullBox("meta", 0, cat([...raw("hdlr"), ...raw("pitm"), iloc(data), iinf, ...iref, ...raw("iprp")]));
  const head = b.subarray(0, ftyp.end);
  const data = head.length + metaBox(0).length + 8;
  return cat([head, metaBox(data), box("mdat", cat([coded, exif ?? []])), ...extraTop]);
}

// ---------------------------------------------------------------------------------------------------------------

const XMP = new Uint8Array(Buffer.from(PHONE_XMP, "utf8"));

/** Every case on a small picture and on one larger than the thumbnail box. */
export async function locationCorpus(): Promise<LocationFile[]> {
  const files: LocationFile[] = [];
  for (const s of [
    { width: 64, height: 48 },
    { width: 480, height: 360 },
  ]) {
    size = s;
    files.push(...(await cases(s.width > 400 ? " (large)" : "")));
  }
  return files;
}

async function cases(suffix: string): Promise<LocationFile[]> {
  const files: LocationFile[] = [];
  const add = (format: LocationFormat, klass: LocationFile["class"], name: string, bytes: Uint8Array) =>
    files.push({
      name: `${format}: ${name}${suffix}`,
      format,
      class: klass,
      bytes,
      filename: `${name.replace(/\W+/g, "-")}.${EXT[format]}`,
      mimetype: MIME[format],
    });

  // JPEG
  const jpeg = await base("jpeg");
  const exifApp = (header: string, tiff: Uint8Array) => app(0xe1, cat([latin(header), tiff]));
  add("jpeg", "exif-header", 'EXIF behind "Exif\\0\\x01"', intoJpeg(jpeg, [exifApp("Exif\0\x01", gpsInIfd0())]));
  add("jpeg", "exif-header", "EXIF behind a lower-case header", intoJpeg(jpeg, [exifApp("exif\0\0", gpsInIfd0())]));
  add("jpeg", "exif-header", 'EXIF behind bytes before "Exif"', intoJpeg(jpeg, [exifApp("ab\0Exif\0\0", gpsInIfd0())]));
  add("jpeg", "gps-pointer", "GPS pointer in the Exif sub-IFD", intoJpeg(jpeg, [exifApp("Exif\0\0", gpsInExifIfd())]));
  add("jpeg", "gps-pointer", "GPS pointer in IFD2", intoJpeg(jpeg, [exifApp("Exif\0\0", gpsInIfd2())]));
  add("jpeg", "xmp-header", "XMP as a bare xpacket", intoJpeg(jpeg, [app(0xe1, XMP)]));
  add("jpeg", "xmp-header", "XMP behind XMP\\0://", intoJpeg(jpeg, [app(0xe1, cat([latin("XMP\0://ns.adobe.com/xap/1.0/\0"), XMP]))]));
  const thumbnail = intoJpeg(
    await sharp({ create: { width: 16, height: 12, channels: 3, background: "#a72" } })
      .jpeg()
      .toBuffer()
      .then((x) => new Uint8Array(x)),
    [exifApp("Exif\0\0", gpsInIfd0())],
  );
  add(
    "jpeg",
    "thumbnail",
    "GPS in the IFD1 thumbnail",
    intoJpeg(jpeg, [exifApp("Exif\0\0", buildTiff({ entries: camera(), next: { entries: [{ tag: 0x0103, type: 3, count: 1, bytes: [0, 6] }], thumbnail } }))]),
  );
  add("jpeg", "thumbnail", "GPS in a JFXX thumbnail", intoJpeg(jpeg, [app(0xe0, cat([latin("JFXX\0"), [0x10], thumbnail]))]));

  // PNG
  const png = await base("png");
  add("png", "exif-header", 'eXIf behind "Exif\\0\\0"', intoPng(png, [pngChunk("eXIf", cat([latin("Exif\0\0"), gpsInIfd0()]))]));
  add("png", "gps-pointer", "eXIf with the GPS pointer in the Exif sub-IFD", intoPng(png, [pngChunk("eXIf", gpsInExifIfd())]));
  add("png", "gps-pointer", "eXIf with the GPS pointer in IFD2", intoPng(png, [pngChunk("eXIf", gpsInIfd2())]));
  add("png", "xmp-header", "XMP in a zTXt chunk", intoPng(png, [pngChunk("zTXt", cat([latin("XML:com.adobe.xmp\0"), [0], deflateSync(XMP)]))]));
  add("png", "xmp-header", "XMP in a Comment text chunk", intoPng(png, [pngChunk("tEXt", cat([latin("Comment\0"), XMP]))]));
  add(
    "png",
    "xmp-header",
    "EXIF hex profile in a Raw profile chunk",
    intoPng(png, [
      pngChunk(
        "tEXt",
        cat([
          latin("Raw profile type exif\0"),
          latin(`\nexif\n${gpsInIfd0().length + 6}\n${Buffer.from(cat([latin("Exif\0\0"), gpsInIfd0()])).toString("hex")}\n`),
        ]),
      ),
    ]),
  );
  add(
    "png",
    "thumbnail",
    "eXIf with GPS in the IFD1 thumbnail",
    intoPng(png, [pngChunk("eXIf", buildTiff({ entries: camera(), next: { entries: [{ tag: 0x0103, type: 3, count: 1, bytes: [0, 6] }], thumbnail } }))]),
  );

  // WebP (extended, EXIF flag set)
  const webp = await base("webp", true);
  add("webp", "exif-header", 'EXIF chunk behind "Exif\\0\\0"', intoWebp(webp, [riffChunk("EXIF", cat([latin("Exif\0\0"), gpsInIfd0()]))]));
  add("webp", "gps-pointer", "EXIF with the GPS pointer in the Exif sub-IFD", intoWebp(webp, [riffChunk("EXIF", gpsInExifIfd())]));
  add("webp", "gps-pointer", "EXIF with the GPS pointer in IFD2", intoWebp(webp, [riffChunk("EXIF", gpsInIfd2())]));
  add("webp", "xmp-header", "XMP chunk as a bare xpacket", intoWebp(webp, [riffChunk("XMP ", XMP)]));
  add(
    "webp",
    "thumbnail",
    "EXIF with GPS in the IFD1 thumbnail",
    intoWebp(webp, [riffChunk("EXIF", buildTiff({ entries: camera(), next: { entries: [{ tag: 0x0103, type: 3, count: 1, bytes: [0, 6] }], thumbnail } }))]),
  );

  // GIF
  const gif = await base("gif");
  add(
    "gif",
    "xmp-header",
    "XMP application extension",
    intoGif(gif, [cat([[0x21, 0xff, 11], latin("XMP DataXMP"), XMP, [1], Array.from({ length: 256 }, (_, i) => 255 - i), [0]])]),
  );
  add(
    "gif",
    "xmp-header",
    "XMP in sub-blocks of an unknown application extension",
    intoGif(gif, [cat([[0x21, 0xff, 11], latin("XMP Data   "), subBlocks(XMP)])]),
  );
  add("gif", "xmp-header", "XMP in a comment", intoGif(gif, [cat([[0x21, 0xfe], subBlocks(XMP)])]));

  // AVIF
  const exifItem = (header: string, tiff: Uint8Array) => cat([u32(header.length), latin(header), tiff]);
  add("avif", "exif-header", 'Exif item behind "Exif\\0\\x01"', await avifWith(exifItem("Exif\0\x01", gpsInIfd0())));
  add("avif", "exif-header", "Exif item without a header", await avifWith(exifItem("", gpsInIfd0())));
  add("avif", "gps-pointer", "Exif item with the GPS pointer in the Exif sub-IFD", await avifWith(exifItem("Exif\0\0", gpsInExifIfd())));
  add("avif", "gps-pointer", "Exif item with the GPS pointer in IFD2", await avifWith(exifItem("Exif\0\0", gpsInIfd2())));
  const XMP_UUID = [0xbe, 0x7a, 0xcf, 0xcb, 0x97, 0xa9, 0x42, 0xe8, 0x9c, 0x71, 0x99, 0x94, 0x91, 0xe3, 0xaf, 0xac];
  add("avif", "xmp-header", "XMP in a top-level uuid box", await avifWith(null, [box("uuid", cat([XMP_UUID, XMP]))]));
  add(
    "avif",
    "thumbnail",
    "Exif item with GPS in the IFD1 thumbnail",
    await avifWith(exifItem("Exif\0\0", buildTiff({ entries: camera(), next: { entries: [{ tag: 0x0103, type: 3, count: 1, bytes: [0, 6] }], thumbnail } }))),
  );
  return files;
}
