/**
 * Textual IP addresses to bytes: the one parser behind the webhook address guard (address-guard.ts) and the
 * per-address buckets of the caller bounds (services/address.ts).
 */

const DOTTED_QUAD = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/;

/** The 4 bytes of a dotted IPv4 address (no leading zeros: some resolvers read them as octal), or null. */
function parseV4(text: string): Uint8Array | null {
  const m = DOTTED_QUAD.exec(text);
  if (!m) return null;
  const bytes = m.slice(1).map(Number);
  return bytes.every((b) => b <= 255) ? Uint8Array.from(bytes) : null;
}

/** The 16 bytes of an IPv6 address (lower case, no brackets or zone; a dotted IPv4 tail allowed), or null. */
export function parseV6(text: string): Uint8Array | null {
  if (!/^[0-9a-f:.]+$/.test(text)) return null;
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string, last: boolean): number[] | null => {
    if (part === "") return [];
    const out: number[] = [];
    const pieces = part.split(":");
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!;
      if (last && i === pieces.length - 1 && piece.includes(".")) {
        const v4 = parseV4(piece);
        if (!v4) return null;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else if (/^[0-9a-f]{1,4}$/.test(piece)) out.push(parseInt(piece, 16));
      else return null;
    }
    return out;
  };
  let all: number[];
  if (halves.length === 1) {
    const only = groups(halves[0]!, true);
    if (only?.length !== 8) return null;
    all = only;
  } else {
    const left = groups(halves[0]!, false);
    const right = groups(halves[1]!, true);
    if (!left || !right) return null;
    const missing = 8 - left.length - right.length;
    if (missing < 1) return null;
    all = [...left, ...Array<number>(missing).fill(0), ...right];
  }
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}

/** The bytes of an IPv4 (4) or IPv6 (16) address; brackets and an IPv6 zone (`%eth0`) are ignored. */
export function parseIp(text: string): Uint8Array | null {
  let address = text.trim().toLowerCase();
  if (address.startsWith("[") && address.endsWith("]")) address = address.slice(1, -1);
  if (!address.includes(":")) return parseV4(address);
  const zone = address.indexOf("%");
  if (zone >= 0) address = address.slice(0, zone);
  return parseV6(address);
}
