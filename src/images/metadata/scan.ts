/**
 * The verification behind every strip policy: an independent, lenient scanner of the bytes about to be stored. It
 * does not walk the container the way the surgery does (which would repeat the surgery's blind spots): it looks
 * for location anywhere in the bytes, as the most lenient reader would find it —
 * - any TIFF structure ("II*\0" / "MM\0*" at any offset: behind any EXIF header spelling, inside an embedded
 *   thumbnail or a JFXX thumbnail) whose IFDs, followed every way a reader follows them, hold a GPS pointer;
 * - any XMP packet (by its tags, with or without the Adobe header) other than the empty packet the AVIF surgery
 *   leaves; a Photoshop IPTC resource (City, Province, Country live there);
 * - QuickTime/ISO-BMFF location boxes (©xyz, loci) and Apple's ISO6709 location key;
 * - in PNG, text chunks that readers turn into tags (any keyword but the plain ones PNG defines) and compressed
 *   text, inflated (bounded), holding any of the above or a hex-encoded profile.
 * Linear in the bytes, with caps: at most MAX_TIFF_HEADERS TIFF headers are followed (more is itself a finding).
 */
import { inflateSync } from "node:zlib";

export interface Finding {
  /** Where in the bytes it starts. */
  at: number;
  what: string;
}

const MAX_TIFF_HEADERS = 256;
const MAX_IFDS = 64;
const MAX_ENTRIES = 2048;
const INFLATE_MAX = 4 * 1024 * 1024;

const GPS_POINTER = 0x8825;
const FOLLOWED = new Set([0x8769, 0x8825, 0xa005, 0x014a]);

/** Whether the TIFF structure at `start` reaches a GPS pointer (its offsets relative to `start`). */
function tiffHasGps(b: Uint8Array, start: number): boolean {
  const little = b[start] === 0x49;
  const view = new DataView(b.buffer, b.byteOffset + start, b.byteLength - start);
  const n = view.byteLength;
  const u16 = (at: number) => view.getUint16(at, little);
  const u32 = (at: number) => view.getUint32(at, little);
  const queue = [u32(4)];
  const seen = new Set<number>();
  let entries = 0;
  while (queue.length > 0 && seen.size < MAX_IFDS) {
    const at = queue.pop()!;
    if (at < 8 || at + 2 > n || seen.has(at)) continue;
    seen.add(at);
    const count = u16(at);
    for (let i = 0; i < count && entries < MAX_ENTRIES; i++, entries++) {
      const entry = at + 2 + i * 12;
      if (entry + 12 > n) break;
      const tag = u16(entry);
      if (tag === GPS_POINTER) return true;
      if (FOLLOWED.has(tag)) queue.push(u32(entry + 8));
    }
    const next = at + 2 + count * 12;
    if (next + 4 <= n) queue.push(u32(next));
  }
  return false;
}

const XMP_MARKS = ["<x:xmpmeta", "<x:xapmeta", "<?xpacket", "<rdf:RDF", "http://ns.adobe.com/xap/1.0/"].map((s) => Buffer.from(s, "latin1"));
const EMPTY_XMP = Buffer.from('<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"/><?xpacket end="w"?>', "latin1");
const OTHER_MARKS: [Buffer, string][] = [
  [Buffer.from("8BIM\x04\x04", "latin1"), "IPTC"],
  [Buffer.from("\xa9xyz", "latin1"), "QuickTime location"],
  [Buffer.from("loci", "latin1"), "3GPP location"],
  [Buffer.from("location.ISO6709", "latin1"), "QuickTime location"],
];
const TIFF_MARKS = [Buffer.from([0x49, 0x49, 0x2a, 0x00]), Buffer.from([0x4d, 0x4d, 0x00, 0x2a])];
/** A TIFF header written as hex (ImageMagick's "Raw profile type exif"), in either case. */
const HEX_TIFF = ["49492a00", "4d4d002a", "49492A00", "4D4D002A"].map((s) => Buffer.from(s, "latin1"));

/** Every place location may be read from in `bytes` (empty: none found). */
export function findLocation(bytes: Uint8Array, mimetype: string): Finding[] {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const findings: Finding[] = [];
  let headers = 0;
  for (const mark of TIFF_MARKS) {
    for (let at = b.indexOf(mark); at >= 0; at = b.indexOf(mark, at + 1)) {
      if (++headers > MAX_TIFF_HEADERS) {
        findings.push({ at, what: "too many TIFF structures to verify" });
        break;
      }
      if (tiffHasGps(bytes, at)) findings.push({ at, what: "EXIF GPS" });
    }
  }
  // the empty packet the AVIF surgery writes in place of an XMP item holds nothing
  const empty: number[] = [];
  for (let at = b.indexOf(EMPTY_XMP); at >= 0; at = b.indexOf(EMPTY_XMP, at + EMPTY_XMP.length)) empty.push(at);
  const inEmpty = (at: number) => {
    // the last empty packet starting at or before `at` (binary search: the list is sorted)
    let lo = 0;
    let hi = empty.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (empty[mid]! <= at) lo = mid + 1;
      else hi = mid - 1;
    }
    return hi >= 0 && at < empty[hi]! + EMPTY_XMP.length;
  };
  for (const mark of XMP_MARKS) {
    for (let at = b.indexOf(mark); at >= 0; at = b.indexOf(mark, at + mark.length)) {
      if (!inEmpty(at)) findings.push({ at, what: "XMP" });
    }
  }
  for (const [mark, what] of OTHER_MARKS) for (let at = b.indexOf(mark); at >= 0; at = b.indexOf(mark, at + 1)) findings.push({ at, what });
  if (mimetype === "image/png") findings.push(...pngTextFindings(b));
  return findings;
}

/** The keywords PNG defines for plain text: readers show them as such, never as a location. */
const PLAIN_KEYWORDS = new Set(["Title", "Author", "Description", "Copyright", "Creation Time", "Software", "Disclaimer", "Warning", "Source", "Comment"]);
export const isPlainPngKeyword = (keyword: string) => PLAIN_KEYWORDS.has(keyword);

/** PNG text chunks: a keyword a reader would turn into a tag of its own, or compressed text holding metadata. */
function pngTextFindings(b: Buffer): Finding[] {
  const findings: Finding[] = [];
  let chunks = 0;
  // what inflating may produce in all: past it, compressed text is a finding unread (no inflate bomb costs more)
  let inflateBudget = INFLATE_MAX;
  for (let pos = 8; pos + 12 <= b.length && chunks < 1_000_000; chunks++) {
    const length = b.readUInt32BE(pos);
    const type = b.toString("latin1", pos + 4, pos + 8);
    const end = pos + 12 + length;
    if (end > b.length) break;
    if (type === "tEXt" || type === "zTXt" || type === "iTXt") {
      const data = b.subarray(pos + 8, pos + 8 + length);
      const zero = data.indexOf(0);
      const keyword = data.toString("latin1", 0, zero < 0 ? Math.min(80, data.length) : zero);
      if (!PLAIN_KEYWORDS.has(keyword)) findings.push({ at: pos, what: `text ${keyword}` });
      else {
        let text: Buffer | null = null;
        try {
          const inflate = (from: number) => {
            if (inflateBudget <= 0) throw new Error("over the inflate budget");
            const out = inflateSync(data.subarray(from), { maxOutputLength: inflateBudget });
            inflateBudget -= out.length;
            return out;
          };
          if (type === "zTXt") text = inflate(zero + 2);
          else if (type === "iTXt" && data[zero + 1] === 1) {
            // keyword\0 flag method language\0 translated\0 text
            const lang = data.indexOf(0, zero + 3);
            const translated = lang < 0 ? -1 : data.indexOf(0, lang + 1);
            if (translated < 0) throw new Error("a broken iTXt chunk");
            text = inflate(translated + 1);
          } else text = data;
        } catch {
          findings.push({ at: pos, what: "compressed text that cannot be read" });
        }
        if (text && [...HEX_TIFF, ...XMP_MARKS, ...TIFF_MARKS].some((m) => text.includes(m))) {
          findings.push({ at: pos, what: `text ${keyword}` });
        }
      }
    }
    pos = end;
  }
  return findings;
}
