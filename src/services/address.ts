const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** The 8 groups of an IPv6 address (an embedded dotted IPv4 tail read as two), or null when it is not one. */
function ipv6Groups(address: string): number[] | null {
  if (!/^[0-9a-f:.]+$/.test(address) || address.split("::").length > 2) return null;
  const side = (part: string): number[] | null => {
    if (part === "") return [];
    const out: number[] = [];
    const pieces = part.split(":");
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!;
      const v4 = i === pieces.length - 1 ? IPV4.exec(piece) : null;
      if (v4) {
        const b = v4.slice(1).map(Number);
        if (b.some((n) => n > 255)) return null;
        out.push((b[0]! << 8) | b[1]!, (b[2]! << 8) | b[3]!);
      } else if (/^[0-9a-f]{1,4}$/.test(piece)) out.push(parseInt(piece, 16));
      else return null;
    }
    return out;
  };
  const [head, tail] = address.split("::") as [string, string | undefined];
  const left = side(head);
  const right = tail === undefined ? [] : side(tail);
  if (!left || !right) return null;
  if (tail === undefined) return left.length === 8 ? left : null;
  const missing = 8 - left.length - right.length;
  return missing >= 1 ? [...left, ...Array<number>(missing).fill(0), ...right] : null;
}

/**
 * The key every per-address bound counts a client under: an IPv4 address as itself; an IPv6 address by its /64
 * (`2001:db8:1:2::/64`), the block one subscriber is given, so that the 2^64 addresses of one network count as
 * one; an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) as its IPv4 address. Anything else (an empty or
 * unparsable address) is its own key, lower-cased.
 */
export function addressBucket(ip: string): string {
  let address = ip.trim().toLowerCase();
  if (address.startsWith("[") && address.includes("]")) address = address.slice(1, address.indexOf("]"));
  const zone = address.indexOf("%");
  if (zone >= 0) address = address.slice(0, zone);
  const v4 = IPV4.exec(address);
  if (v4) return v4.slice(1).every((n) => Number(n) <= 255) ? v4.slice(1).map(Number).join(".") : address;
  if (!address.includes(":")) return address;
  const groups = ipv6Groups(address);
  if (!groups) return address;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join(".");
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(":")}::/64`;
}
