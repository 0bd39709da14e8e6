import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { parseIp, parseV6 } from "./ip.ts";

/**
 * The SSRF guard of outgoing webhooks. A webhook URL is chosen by a user, but the POST leaves from inside the
 * service's network, so without a guard a user could make the service talk to its own database, an admin port on
 * loopback or the cloud's metadata endpoint (169.254.169.254, fd00:ec2::254), and read the answer back in the
 * delivery log. Every address a URL's host name resolves to is judged here, at every send (a name may resolve
 * to a public address when the subscription is made and to 10.0.0.5 a minute later); send.ts then connects to
 * exactly the address judged. IPv6 forms that carry an IPv4 address (::ffff:127.0.0.1, 64:ff9b::7f00:1, 2002:7f00:1::)
 * are judged by that IPv4 address, since the kernel or a translator on the path delivers them there.
 * The operator's WEBHOOK_ALLOW lets chosen internal receivers through (a purge endpoint, a chat relay).
 */

/** WEBHOOK_ALLOW, parsed: exact host names (lower case, no trailing dot) and address ranges. */
export interface AllowList {
  readonly hosts: ReadonlySet<string>;
  readonly ranges: readonly Range[];
}

interface Range {
  /** 4 or 16 bytes. */
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

/** The addresses a host name resolves to, in the order to try them. */
export type Resolver = (hostname: string) => Promise<string[]>;

/**
 * A refusal carries two texts: `reason`, for the operator's log (it may name the addresses a host name resolved to),
 * and `shown`, for the endpoint's owner (it never does: a user must not learn through us what an internal name
 * resolves to).
 */
type Destination = { ok: true; address: string; family: 4 | 6 } | { ok: false; reason: string; shown: string };

/** What the owner of an endpoint is told of an address that is not public, whatever it is. */
export const NOT_PUBLIC = "the address is private or internal; webhooks can only be sent to public addresses";

/** No host beyond the public addresses: a user's endpoint whose group has no webhook_allow_internal. */
export const PUBLIC_ONLY: AllowList = { hosts: new Set(), ranges: [] };

const MAX_URL_LENGTH = 2048;

/** The system's resolver (getaddrinfo, so /etc/hosts counts), every answer in the order given. */
export const defaultResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

// ---------------------------------------------------------------------------------------------------------------
// Addresses

function inRange(bytes: Uint8Array, base: Uint8Array, prefix: number): boolean {
  if (bytes.length !== base.length) return false;
  for (let bit = 0; bit < prefix; bit += 8) {
    const take = Math.min(8, prefix - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((bytes[bit / 8]! & mask) !== (base[bit / 8]! & mask)) return false;
  }
  return true;
}

function cidr(text: string): Range {
  const [address, prefix] = text.split("/") as [string, string];
  return { bytes: parseIp(address)!, prefix: Number(prefix) };
}

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d) stands for, or null. */
function unmapped(bytes: Uint8Array): Uint8Array | null {
  return bytes.length === 16 && inRange(bytes, MAPPED.bytes, MAPPED.prefix) ? bytes.slice(12) : null;
}

/** Whether two texts name the same address (`::ffff:127.0.0.1` and `127.0.0.1` do). */
export function sameAddress(a: string, b: string): boolean {
  const x = parseIp(a);
  const y = parseIp(b);
  if (!x || !y) return false;
  const [p, q] = [unmapped(x) ?? x, unmapped(y) ?? y];
  return p.length === q.length && p.every((byte, i) => byte === q[i]);
}

/** Most specific first: the first range an address falls in names it. */
const V4_TABLE: Array<[Range, string]> = (
  [
    ["255.255.255.255/32", "broadcast"],
    ["169.254.169.254/32", "metadata"],
    ["0.0.0.0/8", "unspecified"],
    ["10.0.0.0/8", "private"],
    ["100.64.0.0/10", "carrier-grade NAT"],
    ["127.0.0.0/8", "loopback"],
    ["169.254.0.0/16", "link-local"],
    ["172.16.0.0/12", "private"],
    ["192.0.0.0/24", "reserved"],
    ["192.0.2.0/24", "documentation"],
    ["192.88.99.0/24", "reserved"],
    ["192.168.0.0/16", "private"],
    ["198.18.0.0/15", "benchmarking"],
    ["198.51.100.0/24", "documentation"],
    ["203.0.113.0/24", "documentation"],
    ["224.0.0.0/4", "multicast"],
    ["240.0.0.0/4", "reserved"],
  ] as const
).map(([range, reason]) => [cidr(range), reason]);

const MAPPED = { bytes: parseV6("::ffff:0:0")!, prefix: 96 };

/** IPv6 ranges whose last 32 bits (or, for 6to4, bits 16–47) are an IPv4 address that decides. */
const V6_EMBEDDING: Array<[Range, string, (b: Uint8Array) => Uint8Array]> = [
  [MAPPED, "IPv4-mapped", (b) => b.slice(12)],
  [cidr("::/96"), "IPv4-compatible", (b) => b.slice(12)],
  [cidr("64:ff9b::/96"), "NAT64", (b) => b.slice(12)],
  [cidr("2002::/16"), "6to4", (b) => b.slice(2, 6)],
];

const V6_TABLE: Array<[Range, string]> = (
  [
    ["fd00:ec2::254/128", "metadata"],
    ["64:ff9b:1::/48", "local NAT64"],
    ["100::/64", "discard-only"],
    ["fe80::/10", "link-local"],
    ["fec0::/10", "site-local"],
    ["fc00::/7", "unique-local"],
    ["ff00::/8", "multicast"],
    ["2001:db8::/32", "documentation"],
    ["3fff::/20", "documentation"],
    ["2001::/32", "Teredo"],
    ["2001::/23", "reserved"],
  ] as const
).map(([range, reason]) => [cidr(range), reason]);

const GLOBAL_UNICAST_V6 = cidr("2000::/3");

function v4Reason(bytes: Uint8Array): string | null {
  return V4_TABLE.find(([range]) => inRange(bytes, range.bytes, range.prefix))?.[1] ?? null;
}

/**
 * Why a webhook must not be sent to this address ("loopback", "private", "metadata", "IPv4-mapped loopback", …),
 * or null for an ordinary public unicast address. Anything that is not an IP address is refused too.
 */
export function forbiddenReason(ip: string): string | null {
  const bytes = parseIp(ip);
  if (!bytes) return "not an IP address";
  if (bytes.length === 4) return v4Reason(bytes);
  if (bytes.every((b) => b === 0)) return "unspecified";
  if (bytes.slice(0, 15).every((b) => b === 0) && bytes[15] === 1) return "loopback";
  for (const [range, kind, embedded] of V6_EMBEDDING) {
    if (!inRange(bytes, range.bytes, range.prefix)) continue;
    const reason = v4Reason(embedded(bytes));
    return reason === null ? null : `${kind} ${reason}`;
  }
  const named = V6_TABLE.find(([range]) => inRange(bytes, range.bytes, range.prefix));
  if (named) return named[1];
  // outside 2000::/3 nothing is assigned for ordinary use
  return inRange(bytes, GLOBAL_UNICAST_V6.bytes, GLOBAL_UNICAST_V6.prefix) ? null : "reserved";
}

// ---------------------------------------------------------------------------------------------------------------
// The operator's allow list

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

function normaliseHost(host: string): string {
  let name = host.trim().toLowerCase();
  if (name.startsWith("[") && name.endsWith("]")) name = name.slice(1, -1);
  return name.endsWith(".") ? name.slice(0, -1) : name;
}

/** ::ffff:127.0.0.1 or ::ffff:10.0.0.0/104 as the IPv4 range it stands for, since addresses are compared unmapped. */
function unmappedRange(range: Range): Range {
  const v4 = range.prefix >= 96 ? unmapped(range.bytes) : null;
  return v4 ? { bytes: v4, prefix: range.prefix - 96 } : range;
}

function parseEntry(entry: string): { host: string } | { range: Range } {
  const bad = (why: string) => new Error(`WEBHOOK_ALLOW: "${entry}" ${why}`);
  const slash = entry.indexOf("/");
  if (slash >= 0) {
    const bytes = parseIp(entry.slice(0, slash));
    const prefixText = entry.slice(slash + 1);
    if (!bytes) throw bad("is not a CIDR range: the part before / is not an IP address");
    const max = bytes.length * 8;
    if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) {
      throw bad(`is not a CIDR range: the prefix length must be a number from 0 to ${max}`);
    }
    return { range: unmappedRange({ bytes, prefix: Number(prefixText) }) };
  }
  const bytes = parseIp(entry);
  if (bytes) return { range: unmappedRange({ bytes, prefix: bytes.length * 8 }) };
  const name = normaliseHost(entry);
  if (name.includes(":")) throw bad("is not a valid IPv6 address");
  const labels = name.split(".");
  if (name.length === 0 || name.length > 253 || !labels.every((l) => LABEL.test(l))) {
    throw bad("is neither a host name, an IP address nor a CIDR range (like 10.20.0.0/16)");
  }
  // a URL parser reads a host whose last label is numeric as an IPv4 address, so such a name could never match
  if (/^(\d+|0x[0-9a-f]*)$/.test(labels[labels.length - 1]!)) throw bad("is not a valid IPv4 address");
  return { host: name };
}

/**
 * WEBHOOK_ALLOW: entries separated by commas or white space, each an exact host name (`purge.internal`, any case),
 * an IP address (`127.0.0.1`, `::1`) or a CIDR range (`10.20.0.0/16`, `fd00::/8`). Throws on the first entry that
 * is none of these. Empty or unset allows nothing beyond public addresses.
 */
export function parseAllowList(text: string | undefined): AllowList {
  const hosts = new Set<string>();
  const ranges: Range[] = [];
  for (const entry of (text ?? "").split(/[\s,]+/)) {
    if (entry === "") continue;
    const parsed = parseEntry(entry);
    if ("host" in parsed) hosts.add(parsed.host);
    else ranges.push(parsed.range);
  }
  return { hosts, ranges };
}

/** Whether the operator allows this URL host name, or the address it resolved to. */
export function isAllowed(allow: AllowList, host: string, ip: string): boolean {
  if (allow.hosts.has(normaliseHost(host))) return true;
  const bytes = parseIp(ip);
  if (!bytes) return false;
  const forms = [bytes, unmapped(bytes)].filter((b): b is Uint8Array => b !== null);
  return allow.ranges.some((range) => forms.some((b) => inRange(b, range.bytes, range.prefix)));
}

// ---------------------------------------------------------------------------------------------------------------
// URLs

function article(reason: string): string {
  return /^(?:[aeio]|un(?!i)|ipv)/i.test(reason) ? "an" : "a";
}

function syntaxProblem(url: URL): string | null {
  if (url.protocol !== "http:" && url.protocol !== "https:") return `the scheme ${url.protocol} is not allowed (only http and https)`;
  if (url.username !== "" || url.password !== "") return "the URL must not contain a user name or password";
  if (url.hostname === "") return "the URL has no host";
  return null;
}

/** For the subscription form: null when the URL may be stored, else why not. Nothing is resolved here. */
export function checkUrlSyntax(text: string): string | null {
  if (text.length > MAX_URL_LENGTH) return `the URL is longer than ${MAX_URL_LENGTH} characters`;
  if (/[\s\u0000-\u001f\u007f]/.test(text)) return "the URL must not contain white space or control characters";
  // the URL parser would also take "http:example.com" or "//example.com" relative to something
  if (!/^https?:\/\//i.test(text)) {
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(text)?.[1]?.toLowerCase();
    return scheme && scheme !== "http" && scheme !== "https"
      ? `the scheme ${scheme}: is not allowed (only http and https)`
      : "not an absolute URL (it must start with http:// or https://)";
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "not a valid URL";
  }
  return syntaxProblem(url);
}

/**
 * Where a webhook to this URL may go, decided now: every address the host name resolves to must be public or
 * allowed by the operator (one bad answer refuses the whole name, since a later connection could get it). The
 * caller must connect to the address returned and nowhere else.
 */
export async function checkDestination(url: URL, allow: AllowList, resolve: Resolver = defaultResolver): Promise<Destination> {
  const problem = syntaxProblem(url);
  if (problem) return { ok: false, reason: problem, shown: problem };
  const host = normaliseHost(url.hostname);
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = await resolve(host);
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      const reason = `cannot resolve ${host}${typeof code === "string" ? ` (${code})` : ""}`;
      return { ok: false, reason, shown: reason };
    }
    if (addresses.length === 0) return { ok: false, reason: `${host} resolves to no address`, shown: `${host} resolves to no address` };
  }
  for (const address of addresses) {
    const reason = forbiddenReason(address);
    if (reason !== null && !isAllowed(allow, host, address)) {
      return {
        ok: false,
        reason: reason === "not an IP address" ? `${host} resolved to "${address}", not an IP address` : `${address} is ${article(reason)} ${reason} address`,
        shown: reason === "not an IP address" ? `${host} did not resolve to an IP address` : NOT_PUBLIC,
      };
    }
  }
  const address = addresses[0]!;
  const family = isIP(address.replace(/%.*$/, ""));
  if (family !== 4 && family !== 6)
    return { ok: false, reason: `${host} resolved to "${address}", not an IP address`, shown: `${host} did not resolve to an IP address` };
  return { ok: true, address, family };
}
