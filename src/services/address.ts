import { parseV6 } from "../webhooks/ip.ts";

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

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
  const bytes = parseV6(address);
  if (!bytes) return address;
  if (bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return bytes.subarray(12).join(".");
  const group = (i: number) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16);
  return `${[0, 1, 2, 3].map(group).join(":")}::/64`;
}
