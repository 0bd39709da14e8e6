/**
 * A JPEG's segments as libjpeg walks the stream: one walker for everything that must see what the decoder will see
 * (the scan count that bounds decode cost, the metadata policy's segment surgery), so that no byte pattern reads one
 * way to us and another to the decoder. Between segments the decoder skips any byte that is not 0xFF ("extraneous
 * bytes before marker" is only a warning), runs of 0xFF fill bytes and a stuffed 0xFF00, and parameterless markers
 * (TEM, RSTn; a second SOI is the decoder's error); inside entropy-coded data a 0xFF followed by fill bytes and then
 * 0x00 is data, a restart marker is consumed, and anything else is the next marker. The walk ends at EOI or at the
 * end of the bytes, as the decoder's does.
 */
import { ContainerRefused, LIMITS, unitCap } from "./metadata/limits.ts";

interface JpegSegment {
  marker: number;
  /** The 0xFF before the marker code. */
  at: number;
  /** The value of the length field (it counts its own two bytes); 0 for EOI. */
  length: number;
  /** Where the payload starts (after the length field). */
  start: number;
  /** Just after the payload (for EOI: after the marker). May lie beyond the bytes when the length lies. */
  end: number;
}

export const SOS = 0xda;
export const EOI = 0xd9;

/**
 * The walk is linear in the bytes (stray bytes and entropy data skipped with memchr) and its segments are capped by
 * the file's size (limits.ts): a file made of tiny segments is refused before their number costs more than its bytes.
 */
export function* jpegSegments(b: Uint8Array): Generator<JpegSegment> {
  const n = b.length;
  const buffer = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const cap = unitCap(n, LIMITS.jpegSegmentsBase, LIMITS.jpegBytesPerSegment);
  let segments = 0;
  let pos = 2; // after SOI
  for (;;) {
    // next_marker(): skip non-0xFF bytes, then fill bytes; 0xFF00 is no marker
    if (pos < n && b[pos] !== 0xff) pos = buffer.indexOf(0xff, pos);
    if (pos < 0) return;
    while (pos < n && b[pos] === 0xff) pos++;
    if (pos >= n) return;
    const at = pos - 1;
    const marker = b[pos++]!;
    if (marker === EOI) {
      yield { marker, at, length: 0, start: pos, end: pos };
      return;
    }
    if (marker === 0x00 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) continue;
    if (pos + 1 >= n) return;
    const length = (b[pos]! << 8) | b[pos + 1]!;
    const end = pos + length;
    if (++segments > cap) throw new ContainerRefused(`The JPEG has more than ${cap} segments; at most that many are accepted for its size.`);
    yield { marker, at, length, start: pos + 2, end };
    pos = marker === SOS ? entropyEnd(b, end) : end;
  }
}

/** The end of entropy-coded data starting at `pos`: the 0xFF of the next marker (or the end of the bytes). */
function entropyEnd(b: Uint8Array, pos: number): number {
  const n = b.length;
  // Buffer's indexOf is a memchr: an order of magnitude faster than a loop over a few MB of scan data
  const buffer = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  for (;;) {
    // the next 0xFF: a few bytes looked at here first (dense stuffing or restart markers would otherwise pay a native
    // call per pair), then memchr for a long run of data
    for (let k = 0; k < 8 && pos < n && b[pos] !== 0xff; k++) pos++;
    if (pos < n && b[pos] !== 0xff) pos = buffer.indexOf(0xff, pos);
    if (pos < 0 || pos >= n) return n;
    let next = pos;
    while (next < n && b[next] === 0xff) next++;
    if (next >= n) return n;
    const code = b[next]!;
    if (code === 0x00 || (code >= 0xd0 && code <= 0xd7)) {
      pos = next + 1;
      continue;
    }
    return next - 1;
  }
}

/** The IJG (libjpeg) standard luminance quantization table, the one encoders scale by quality. */
const IJG_LUMINANCE = [
  16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103,
  77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];
const DQT = 0xdb;

/** The sum of the IJG luminance table scaled to quality q (1-100), as libjpeg's jpeg_quality_scaling does it. */
const scaledSum = (q: number) => {
  const scale = q < 50 ? Math.floor(5000 / q) : 200 - q * 2;
  let sum = 0;
  for (const v of IJG_LUMINANCE) sum += Math.min(255, Math.max(1, Math.floor((v * scale + 50) / 100)));
  return sum;
};
const SCALED_SUMS = Array.from({ length: 100 }, (_, i) => scaledSum(i + 1));

/**
 * The quality (1-100) a JPEG was most likely saved at: its luminance table (table 0) compared, by the sum of its 64
 * entries (independent of their order), with the IJG table scaled to each quality; the closest wins. Read from the
 * header, without decoding. Null when the stream has no table 0. An encoder with tables of its own (some cameras)
 * gets the quality whose IJG table is closest, which is what "above a quality" can mean for it.
 */
export function jpegQuality(b: Uint8Array): number | null {
  for (const segment of jpegSegments(b)) {
    if (segment.marker === SOS || segment.marker === EOI) return null;
    if (segment.marker !== DQT) continue;
    for (let pos = segment.start; pos < Math.min(segment.end, b.length); ) {
      const precision = b[pos]! >> 4;
      const id = b[pos]! & 0x0f;
      const bytes = precision ? 128 : 64;
      if (pos + 1 + bytes > b.length) return null;
      if (id === 0) {
        let sum = 0;
        for (let i = 0; i < 64; i++) sum += precision ? (b[pos + 1 + 2 * i]! << 8) | b[pos + 2 + 2 * i]! : b[pos + 1 + i]!;
        let best = 1;
        for (let q = 1; q <= 100; q++) if (Math.abs(SCALED_SUMS[q - 1]! - sum) < Math.abs(SCALED_SUMS[best - 1]! - sum)) best = q;
        return best;
      }
      pos += 1 + bytes;
    }
  }
  return null;
}
