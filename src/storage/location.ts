/**
 * What a storage location IS, as opposed to how its configuration spells it. Two strategies may reach the same
 * objects through different spellings: a local root that is a symlink to (or a bind mount of) another's, a root
 * written with `..`, an S3 endpoint written `localhost` in one and `127.0.0.1/` in the other, or the default AWS
 * endpoint in one and `https://s3.us-east-1.amazonaws.com` in the other. Anything that compares locations (the
 * reconciler, the restore's refusals) compares these identities, never the configured strings.
 *
 * Local: the root's real path (realpath of its deepest existing ancestor, the rest appended: a root not created
 * yet still has an identity) and, for that ancestor and each of its parents, its device and inode. Two roots are
 * related when one's chain holds the other's anchor: that sees through symlinks (the real path), `..` (resolved
 * first, as the driver resolves it) and bind mounts (the same directory has the same device and inode wherever it
 * is mounted).
 *
 * S3: the endpoint normalised (scheme's default port made explicit, host lower-cased without a trailing dot, every
 * loopback name — localhost, 127.0.0.0/8, ::1 — as one host, trailing slashes dropped, AWS's regional spellings
 * and the default endpoint for the region as one) with the bucket, then the key prefix.
 */
import { lstat, realpath, stat } from "node:fs/promises";
import { basename, dirname, resolve, sep } from "node:path";

interface LocalIdentity {
  kind: "local";
  /** The root's real path (symlinks and `..` resolved; parts not created yet appended as written). */
  real: string;
  /** Device and inode (`dev:ino`) of the deepest existing directory of the root's path. */
  anchor: string;
  /** The root below the anchor: the path segments not created yet. */
  suffix: string[];
  /** For the anchor and each of its parents, `dev:ino` → the root's path below it, in segments. */
  chain: Map<string, string[]>;
}

interface S3Identity {
  kind: "s3";
  /** Normalised endpoint and bucket, e.g. `loopback:9000/images` or `s3.eu-west-1.amazonaws.com:443/images`. */
  store: string;
  /** The key prefix, '' or ending in '/'. */
  prefix: string;
}

export type LocationIdentity = LocalIdentity | S3Identity;

/**
 * How location `b` stands to location `a`: the same place, inside it (b = a + offset), containing it
 * (a = b + offset), or apart. `offset` is a '/'-separated relative path, never empty.
 */
export type Relation = { kind: "same" } | { kind: "inside" | "contains"; offset: string } | { kind: "apart" };

export class LocationError extends Error {}

/**
 * The real location of `path`: realpath of its deepest existing ancestor, the missing rest appended. Refuses a path
 * through a dangling symlink (it would write wherever the link is later made to point) or through a file.
 */
export async function realLocation(path: string): Promise<{ real: string; existing: string; missing: string[] }> {
  const missing: string[] = [];
  let at = resolve(path);
  for (;;) {
    let info;
    try {
      info = await lstat(at);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT" && dirname(at) !== at) {
        missing.unshift(basename(at));
        at = dirname(at);
        continue;
      }
      if (code === "ENOTDIR") throw new LocationError(`${path}: a part of it is a file, not a directory`);
      throw new LocationError(`${path}: ${(e as Error).message}`);
    }
    let existing: string;
    try {
      existing = await realpath(at);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (info.isSymbolicLink() && (code === "ENOENT" || code === "ELOOP")) {
        throw new LocationError(`${path}: ${at} is a symbolic link to nowhere (dangling), so where it leads is unknown`);
      }
      throw new LocationError(`${path}: ${(e as Error).message}`);
    }
    if (missing.length > 0 && !(await stat(existing)).isDirectory()) throw new LocationError(`${path}: ${existing} is a file, not a directory`);
    const real = missing.length === 0 ? existing : `${existing === sep ? "" : existing}${sep}${missing.join(sep)}`;
    return { real, existing, missing };
  }
}

/** Whether `child` is `parent` or below it (both absolute, normalised). */
export function isWithin(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

/** The identity of a local root (see the file's comment). */
export async function localIdentity(root: string): Promise<LocalIdentity> {
  const { real, existing, missing } = await realLocation(root);
  const chain = new Map<string, string[]>();
  let anchor = "";
  let below = [...missing];
  for (let dir = existing; ; dir = dirname(dir)) {
    const info = await stat(dir, { bigint: true });
    const key = `${info.dev}:${info.ino}`;
    if (!anchor) anchor = key;
    if (!chain.has(key)) chain.set(key, below);
    if (dirname(dir) === dir) break;
    below = [basename(dir), ...below];
  }
  return { kind: "local", real, anchor, suffix: missing, chain };
}

const LOOPBACK =
  /^(?:localhost|[\w-]+\.localhost|127(?:\.\d{1,3}){3}|\[::1\]|\[::ffff:127(?:\.\d{1,3}){3}\]|\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]|\[0*:0*:0*:0*:0*:0*:0*:0*1\])$/;
/** AWS's spellings of a regional S3 endpoint: s3.REGION, s3-REGION, s3.dualstack.REGION; s3 / s3-external-1 are us-east-1. */
const AWS_HOST = /^s3(?:[.-]dualstack)?(?:[.-]([a-z0-9-]+))?\.amazonaws\.com$/;

/**
 * The normalised endpoint of an S3 strategy (`host:port/path`): without an endpoint, the client's default, AWS in
 * the region (us-east-1 when none is set).
 */
export function normaliseS3Endpoint(endpoint: string | undefined, region: string | undefined): string {
  const url = new URL(endpoint ?? `https://s3.${region || "us-east-1"}.amazonaws.com`);
  let host = url.hostname.replace(/\.$/, "");
  const port = url.port || (url.protocol === "http:" ? "80" : "443");
  const aws = AWS_HOST.exec(host);
  if (aws) {
    const named = aws[1] && aws[1] !== "external-1" ? aws[1] : "us-east-1";
    // the regional endpoint answers on 80 and 443 alike: the scheme does not change the place
    return `s3.${named}.amazonaws.com:443${url.pathname.replace(/\/+$/, "")}`;
  }
  if (LOOPBACK.test(host)) host = "loopback";
  return `${host}:${port}${url.pathname.replace(/\/+$/, "")}`;
}

/**
 * A strategy's key prefix as the keys it makes: '' or one segment path ending in '/'. Bun's client drops a key's
 * leading slashes (`/site-a/x` is stored as `site-a/x`), so they are dropped here too.
 */
export function normaliseKeyPrefix(prefix: string | undefined): string {
  const trimmed = (prefix ?? "").replace(/^\/+|\/+$/g, "");
  return trimmed ? `${trimmed}/` : "";
}

export function s3Identity(config: { endpoint?: string; region?: string; bucket: string; prefix?: string }): S3Identity {
  return { kind: "s3", store: `${normaliseS3Endpoint(config.endpoint, config.region)}/${config.bucket}`, prefix: normaliseKeyPrefix(config.prefix) };
}

const startsWithSegments = (long: string[], short: string[]) => short.every((s, i) => long[i] === s);

/** How `b` stands to `a` (see Relation). */
export function relate(a: LocationIdentity, b: LocationIdentity): Relation {
  if (a.kind === "s3" && b.kind === "s3") {
    if (a.store !== b.store) return { kind: "apart" };
    if (a.prefix === b.prefix) return { kind: "same" };
    if (b.prefix.startsWith(a.prefix)) return { kind: "inside", offset: b.prefix.slice(a.prefix.length, -1) };
    if (a.prefix.startsWith(b.prefix)) return { kind: "contains", offset: a.prefix.slice(b.prefix.length, -1) };
    return { kind: "apart" };
  }
  if (a.kind === "local" && b.kind === "local") {
    // b's chain holds a's anchor: b = anchor/r and a = anchor/a.suffix
    const r = b.chain.get(a.anchor);
    if (r) return compareBelow(a.suffix, r);
    // a's chain holds b's anchor: a = anchor/r and b = anchor/b.suffix
    const q = a.chain.get(b.anchor);
    if (q) return invert(compareBelow(b.suffix, q));
    return { kind: "apart" };
  }
  return { kind: "apart" };
}

/** a = X/aPath, b = X/bPath: how b stands to a. */
function compareBelow(aPath: string[], bPath: string[]): Relation {
  if (aPath.length === bPath.length && startsWithSegments(bPath, aPath)) return { kind: "same" };
  if (bPath.length > aPath.length && startsWithSegments(bPath, aPath)) return { kind: "inside", offset: bPath.slice(aPath.length).join("/") };
  if (aPath.length > bPath.length && startsWithSegments(aPath, bPath)) return { kind: "contains", offset: aPath.slice(bPath.length).join("/") };
  return { kind: "apart" };
}

function invert(r: Relation): Relation {
  if (r.kind === "inside") return { kind: "contains", offset: r.offset };
  if (r.kind === "contains") return { kind: "inside", offset: r.offset };
  return r;
}

/** A path of location `a` as the same object's path in location `b`, or null when `b` does not hold it. */
export function translatePath(path: string, relation: Relation): string | null {
  switch (relation.kind) {
    case "same":
      return path;
    case "inside": // b = a/offset
      return path.startsWith(`${relation.offset}/`) ? path.slice(relation.offset.length + 1) : null;
    case "contains": // a = b/offset
      return `${relation.offset}/${path}`;
    default:
      return null;
  }
}

/** Short text for reports: where the location really is. */
export function describeIdentity(id: LocationIdentity): string {
  return id.kind === "local" ? id.real : `s3://${id.store}/${id.prefix}`;
}
