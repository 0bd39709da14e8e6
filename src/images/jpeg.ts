/**
 * A JPEG's segments as libjpeg walks the stream: one walker for everything that must see what the decoder will see
 * (the scan count that bounds decode cost, the metadata policy's segment surgery), so that no byte pattern reads one
 * way to us and another to the decoder. Between segments the decoder skips any byte that is not 0xFF ("extraneous
 * bytes before marker" is only a warning), runs of 0xFF fill bytes and a stuffed 0xFF00, and parameterless markers
 * (TEM, RSTn; a second SOI is the decoder's error); inside entropy-coded data a 0xFF followed by fill bytes and then
 * 0x00 is data, a restart marker is consumed, and anything else is the next marker. The walk ends at EOI or at the
 * end of the bytes, as the decoder's does.
 */
export interface JpegSegment {
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

export function* jpegSegments(b: Uint8Array): Generator<JpegSegment> {
  const n = b.length;
  let pos = 2; // after SOI
  for (;;) {
    // next_marker(): skip non-0xFF bytes, then fill bytes; 0xFF00 is no marker
    while (pos < n && b[pos] !== 0xff) pos++;
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
    pos = buffer.indexOf(0xff, pos);
    if (pos < 0) return n;
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
