/**
 * EXIF blocks (a TIFF structure: header, IFD0 → Exif/GPS/Interop sub-IFDs, IFD1 …): walked under the caps of
 * limits.ts, and cleaned by the metadata policy. The walk reaches every IFD a lenient reader reaches (the chain after
 * IFD0, the Exif, GPS and Interop sub-IFDs and SubIFDs, wherever their pointer sits), each at most once: an IFD
 * reached twice is a loop and the block is refused.
 */
import { ContainerRefused, LIMITS } from "./limits.ts";

const TAG_ORIENTATION = 0x0112;
const TAG_GPS_IFD = 0x8825;
const TAG_EXIF_IFD = 0x8769;
const TAG_INTEROP_IFD = 0xa005;
const TAG_SUB_IFDS = 0x014a;
const TAG_THUMBNAIL_OFFSET = 0x0201;
const TAG_THUMBNAIL_LENGTH = 0x0202;
const POINTER_TAGS = new Set([TAG_EXIF_IFD, TAG_GPS_IFD, TAG_INTEROP_IFD, TAG_SUB_IFDS]);
const TYPE_SIZES = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4, 0, 0, 8, 8, 8] as const;

interface Entry {
  entry: number;
  tag: number;
  type: number;
  count: number;
  /** Bytes of its value; where the value is (inside the entry when it fits in 4 bytes). */
  size: number;
  value: number;
}

interface Ifd {
  at: number;
  entries: Entry[];
  /** How it was reached: "chain" (IFD0, IFD1 …, by the next-IFD links) or by a pointer tag. */
  via: "chain" | number;
  /** Its place in the chain (0 for IFD0); -1 for a sub-IFD. */
  index: number;
}

/** Where a TIFF header starts: "II*\0" or "MM\0*". */
export const isTiffHeader = (b: Uint8Array, at: number) =>
  at + 8 <= b.length &&
  ((b[at] === 0x49 && b[at + 1] === 0x49 && b[at + 2] === 0x2a && b[at + 3] === 0) ||
    (b[at] === 0x4d && b[at + 1] === 0x4d && b[at + 2] === 0 && b[at + 3] === 0x2a));

/** An EXIF block a reader cannot follow (no header, an IFD outside it): not hostile, but not cleanable either. */
export class BrokenExif extends Error {}

class Tiff {
  readonly view: DataView;
  readonly little: boolean;
  constructor(readonly bytes: Uint8Array) {
    if (!isTiffHeader(bytes, 0)) throw new BrokenExif("no TIFF header");
    this.little = bytes[0] === 0x49;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  u16 = (at: number) => this.view.getUint16(at, this.little);
  u32 = (at: number) => this.view.getUint32(at, this.little);
  setU16 = (at: number, v: number) => this.view.setUint16(at, v, this.little);
  setU32 = (at: number, v: number) => this.view.setUint32(at, v, this.little);

  /**
   * Every IFD reachable, each once, under the caps: an IFD outside the block, reached twice (a loop), past the
   * IFD or entry caps, or values that together name more bytes than the block holds are a refusal.
   */
  walk(): Ifd[] {
    const found: Ifd[] = [];
    const seen = new Set<number>();
    let entries = 0;
    let named = 0;
    const queue: { at: number; via: Ifd["via"]; index: number }[] = [{ at: this.u32(4), via: "chain", index: 0 }];
    while (queue.length > 0) {
      const { at, via, index } = queue.shift()!;
      if (at === 0) continue;
      if (at < 8 || at + 2 > this.bytes.length) {
        if (via === "chain" && index > 0) continue; // a dangling next-IFD link: readers stop there
        throw new BrokenExif("an IFD outside the block");
      }
      if (seen.has(at)) throw new ContainerRefused("An EXIF block's IFDs form a loop.");
      seen.add(at);
      if (found.length >= LIMITS.tiffIfds) throw new ContainerRefused(`An EXIF block has more than ${LIMITS.tiffIfds} IFDs.`);
      const n = this.u16(at);
      if (n > LIMITS.tiffEntriesPerIfd) throw new ContainerRefused(`An EXIF IFD declares ${n} entries; at most ${LIMITS.tiffEntriesPerIfd} are accepted.`);
      entries += n;
      if (entries > LIMITS.tiffEntries) throw new ContainerRefused(`An EXIF block has more than ${LIMITS.tiffEntries} entries.`);
      if (at + 2 + n * 12 + 4 > this.bytes.length) throw new BrokenExif("an IFD past the end of the block");
      const list: Entry[] = [];
      for (let i = 0; i < n; i++) {
        const entry = at + 2 + i * 12;
        const type = this.u16(entry + 2);
        const count = this.u32(entry + 4);
        const size = (TYPE_SIZES[type] ?? 1) * count;
        const value = size > 4 ? this.u32(entry + 8) : entry + 8;
        if (size > 4) {
          named += size;
          if (named > this.bytes.length) throw new ContainerRefused("An EXIF block's values name more bytes than it holds.");
        }
        const e = { entry, tag: this.u16(entry), type, count, size, value };
        list.push(e);
        if (POINTER_TAGS.has(e.tag) && (type === 4 || type === 13) && count >= 1) {
          if (e.tag === TAG_SUB_IFDS && count > 1) {
            if (count > LIMITS.tiffIfds) throw new ContainerRefused(`An EXIF block has more than ${LIMITS.tiffIfds} IFDs.`);
            if (value + count * 4 > this.bytes.length) throw new BrokenExif("SubIFDs outside the block");
            for (let k = 0; k < count; k++) queue.push({ at: this.u32(value + 4 * k), via: e.tag, index: -1 });
          } else queue.push({ at: this.u32(entry + 8), via: e.tag, index: -1 });
        }
      }
      found.push({ at, entries: list, via, index });
      if (via === "chain") queue.push({ at: this.u32(at + 2 + n * 12), via: "chain", index: index + 1 });
    }
    return found;
  }

  zero(start: number, length: number) {
    if (start < 0 || start >= this.bytes.length || length <= 0) return;
    this.bytes.fill(0, start, Math.min(this.bytes.length, start + length));
  }

  /** Zeroes an IFD and the values it points at (its sub-IFDs are zeroed as IFDs of their own). */
  zeroIfd(ifd: Ifd) {
    for (const e of ifd.entries) if (e.size > 4) this.zero(e.value, e.size);
    const thumbnail = ifd.entries.find((e) => e.tag === TAG_THUMBNAIL_OFFSET);
    const length = ifd.entries.find((e) => e.tag === TAG_THUMBNAIL_LENGTH);
    if (thumbnail && length) this.zero(this.u32(thumbnail.entry + 8), this.u32(length.entry + 8));
    this.zero(ifd.at, 2 + ifd.entries.length * 12 + 4);
  }

  /** Removes the entries `remove` picks from an IFD, at the same length: later entries move up. */
  removeEntries(ifd: Ifd, remove: (e: Entry) => boolean): boolean {
    const keep = ifd.entries.filter((e) => !remove(e));
    if (keep.length === ifd.entries.length) return false;
    const next = this.u32(ifd.at + 2 + ifd.entries.length * 12);
    const kept = keep.map((e) => this.bytes.slice(e.entry, e.entry + 12));
    for (const e of ifd.entries) if (remove(e) && e.size > 4) this.zero(e.value, e.size);
    this.zero(ifd.at, 2 + ifd.entries.length * 12 + 4);
    this.setU16(ifd.at, keep.length);
    kept.forEach((entry, i) => {
      this.bytes.set(entry, ifd.at + 2 + i * 12);
    });
    this.setU32(ifd.at + 2 + keep.length * 12, ifd.via === "chain" ? next : 0);
    return true;
  }

  orientation(ifds: Ifd[]): number | null {
    const e = ifds[0]?.via === "chain" ? ifds[0].entries.find((x) => x.tag === TAG_ORIENTATION && x.type === 3) : undefined;
    return e ? this.u16(e.entry + 8) : null;
  }
}

/** Walks an EXIF block under the caps (a refusal when it breaks one); used before libvips reads a header. A broken block passes: readers stop at what they cannot follow. */
export function checkTiff(bytes: Uint8Array) {
  try {
    new Tiff(bytes).walk();
  } catch (e) {
    if (!(e instanceof BrokenExif)) throw e;
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

export type StripPolicy = "strip_location" | "strip_all";

/**
 * The EXIF cleaned by the policy; null when nothing of it should remain. strip_location edits a copy in place (same
 * length: offsets inside stay valid): every GPS pointer goes, wherever it sits (IFD0, the Exif sub-IFD, IFD2 …),
 * with the GPS IFD it names; IFD1 and the IFDs chained after it (the embedded thumbnail, a JPEG that may carry EXIF
 * of its own) are unlinked and zeroed. strip_all keeps only the orientation. A refusal when the block breaks a cap.
 */
export function cleanExif(tiffBytes: Uint8Array, policy: StripPolicy, removed: Set<string>): Uint8Array | null {
  const tiff = new Tiff(tiffBytes.slice());
  const ifds = tiff.walk();
  if (policy === "strip_all") {
    removed.add("EXIF");
    return minimalExif(tiff.orientation(ifds), tiff.little);
  }
  let gps = false;
  // the GPS IFDs (and whatever hangs under them) first: zeroed whole
  const gpsIfds = new Set<number>();
  for (const ifd of ifds) for (const e of ifd.entries) if (e.tag === TAG_GPS_IFD && (e.type === 4 || e.type === 13)) gpsIfds.add(tiff.u32(e.entry + 8));
  for (const ifd of ifds) if (gpsIfds.has(ifd.at)) tiff.zeroIfd(ifd);
  for (const ifd of ifds) {
    if (gpsIfds.has(ifd.at)) continue;
    if (tiff.removeEntries(ifd, (e) => e.tag === TAG_GPS_IFD)) gps = true;
  }
  if (gps) removed.add("EXIF GPS");
  // the chain after IFD0 (the thumbnail's IFD1, and any further IFD): unlinked and zeroed
  const later = ifds.filter((ifd) => ifd.via === "chain" && ifd.index > 0);
  if (later.length > 0) {
    const ifd0 = ifds[0]!;
    const count = tiff.u16(ifd0.at);
    tiff.setU32(ifd0.at + 2 + count * 12, 0);
    for (const ifd of later) tiff.zeroIfd(ifd);
    removed.add("EXIF thumbnail");
  }
  return tiff.bytes;
}
