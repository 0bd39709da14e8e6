import type { OpenAPIHono } from "@hono/zod-openapi";
import type { BunFile } from "bun";
import { findImageByStoredPath } from "../../db/repositories/images.ts";
import { failure } from "../../http/envelope.ts";
import type { Strategy } from "../../db/repositories/strategies.ts";
import type { Deps } from "../../deps.ts";
import { perDeps } from "../../services/per-deps.ts";
import type { AppEnv } from "../../http/types.ts";
import { parseRange } from "../../http/range.ts";
import { clientAddress, socketAddress } from "../../http/auth.ts";
import { AppError } from "../../errors.ts";
import { logFor } from "../../observability/log.ts";
import {
  fallbackFormats,
  parseVariantQuery,
  resolveVariant,
  type VariantQuery,
  type VariantSource,
  VariantUnavailable,
  variantKey,
  variantMime,
  variantsFor,
} from "../../services/variants.ts";
import type { VariantFormat } from "../../db/schema.ts";
import type { VariantRow } from "../../db/repositories/variants.ts";
import sharp from "sharp";

const ONE_YEAR = 31_536_000;
/**
 * A fallback (served when a variant cannot be had now) is cached this long only, never `immutable`: the better
 * format, made in the background, replaces it at the same address (docs/decisions/variant-fallback.md).
 */
export const FALLBACK_MAX_AGE = 60;
const storedPathShape = /^[A-Za-z0-9_.\/-]{1,300}$/;
const securityHeaders = {
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox",
  "cross-origin-resource-policy": "cross-origin",
  "accept-ranges": "bytes",
};

/** What serving an object needs to know of its record: facts fixed at upload, so they can be kept. */
interface ObjectFacts {
  strategy: Pick<Strategy, "id" | "driver" | "config">;
  mimetype: string;
  etag: string;
  lastModified: Date;
  expiredAt: Date | null;
  /** An original (not a thumbnail): what its variants are made of. */
  source: (VariantSource & { sha1: string; animationRead?: boolean }) | null;
}

const CACHED_OBJECTS = 50_000;

/**
 * Serves objects of local strategies at BASE_URL/i/<path>, with validators and ranges. The record's facts are
 * looked up once and kept: a stored name is never reused, and what a request must not get wrong is checked on
 * every request without the database — the file must still exist (a delete removes it before it answers, on every
 * instance sharing the volume) and the expiry, kept with the facts, must not have passed.
 */
/** What the object server reads of Bun's server (passed to a route handler as its second argument): the socket's address. */
interface SocketInfo {
  requestIP(request: Request): { address: string } | null;
}

export function objectServer(deps: Deps): (request: Request, server?: SocketInfo) => Promise<Response> {
  const known = new Map<string, ObjectFacts>();

  async function factsOf(path: string): Promise<ObjectFacts | null> {
    const cached = known.get(path);
    if (cached) return cached;
    const found = await findImageByStoredPath(deps.db, path);
    if (!found) return null;
    const { image, strategy } = found;
    const isThumbnail = path !== image.path;
    const facts = {
      strategy,
      mimetype: isThumbnail ? "image/webp" : image.mimetype,
      etag: `"${isThumbnail ? "t-" : ""}${image.sha1}"`,
      lastModified: new Date(Math.floor(image.createdAt.getTime() / 1000) * 1000),
      expiredAt: image.expiredAt,
      source: isThumbnail
        ? null
        : {
            image: { id: image.id, path: image.path, mimetype: image.mimetype, width: image.width, height: image.height, userId: image.userId },
            strategy,
            animated: false,
            sha1: image.sha1,
          },
    };

    if (known.size >= CACHED_OBJECTS) known.delete(known.keys().next().value!);
    known.set(path, facts);
    return facts;
  }

  /** Variants known to exist, by variantKey: their rows, fixed once made (a lost object drops the entry). */
  const knownVariants = new Map<string, VariantRow>();

  /**
   * A variant (issue 17 §3): the query was parsed (a 400 before the database for anything outside the grammar); made
   * on its first request, then served like an original from the image's own storage — or, where the storage serves
   * its own addresses (S3), by a redirect to the stored object, as the image's own `url` points there. A variant
   * that cannot be had now is answered with a fallback (serveFallback), never an error the client cannot fix.
   */
  async function serveVariant(request: Request, path: string, facts: ObjectFacts, query: VariantQuery, now: Date, client: () => string) {
    const source = facts.source;
    if (!source) throw new AppError("bad_request", "Variants are made of images, not of their thumbnails.");
    // a GIF of several frames: its variants keep the animation (a header read, once per image, on its first variant)
    if (source.image.mimetype === "image/gif" && !source.animationRead) {
      source.animated = await isAnimated(deps, facts.strategy, path);
      source.animationRead = true;
    }
    const vary = query.format === "auto" ? { vary: "Accept" } : undefined;
    const resolved = resolveVariant(source, query, request.headers.get("accept"));
    const storage = deps.storage.for(facts.strategy);
    // a storage that serves its own addresses (S3): nothing here can see its object vanish, so before pointing at it,
    // the record must still be there (one query) — a deleted image's variants stop at once on every instance
    const gone = async () => {
      if (await findImageByStoredPath(deps.db, path)) return false;
      known.delete(path);
      for (const k of knownVariants.keys()) if (k.startsWith(`${source.image.id}:`)) knownVariants.delete(k);
      return true;
    };
    if (resolved.original) {
      const blob = storage.readableFile(path);
      if (!blob) return (await gone()) ? notFound() : redirect(storage.url(path), vary);
      if (!(await blob.exists())) {
        known.delete(path);
        return notFound();
      }
      return serveFile(request, blob, facts, now, { "content-type": facts.mimetype, etag: facts.etag, "last-modified": facts.lastModified.toUTCString(), ...vary });
    }
    const key = variantKey(source.image.id, resolved.width, resolved.format);
    const variants = variantsFor(deps);
    for (let attempt = 0; ; attempt++) {
      let row = knownVariants.get(key);
      if (!row) {
        try {
          row = await variants.obtain(source, resolved.width, resolved.format, client());
        } catch (e) {
          if (!(e instanceof VariantUnavailable)) throw e;
          return serveFallback(request, path, facts, source, resolved.width, resolved.format, now, vary, gone);
        }
      }
      const blob = storage.readableFile(row.path);
      if (!blob) {
        if (await gone()) return notFound();
        remember(key, row);
        return redirect(storage.url(row.path), vary);
      }
      if (!(await blob.exists())) {
        knownVariants.delete(key);
        known.delete(path);
        // the image was deleted (its facts are stale), or the variant's object was lost: made again, once
        if (attempt > 0 || !(await findImageByStoredPath(deps.db, path))) return notFound();
        await variants.forget(row);
        continue;
      }
      remember(key, row);
      const etag = `"v-${source.sha1}-${resolved.width}-${resolved.format}"`;
      const lastModified = new Date(Math.floor(row.createdAt.getTime() / 1000) * 1000);
      return serveFile(request, blob, facts, now, { "content-type": variantMime(resolved.format), etag, "last-modified": lastModified.toUTCString(), ...vary });
    }
  }

  /**
   * What stands in for a variant that cannot be had now: the stored variant of the next format down the chain
   * (AVIF, then WebP, then the original's format) at the same width, else the original itself; never generated
   * here (the background does that), so a fallback costs what serving a stored object costs. Cached FALLBACK_MAX_AGE
   * seconds, not remembered as the variant.
   */
  async function serveFallback(
    request: Request,
    path: string,
    facts: ObjectFacts,
    source: NonNullable<ObjectFacts["source"]>,
    width: number,
    format: VariantFormat,
    now: Date,
    vary: { vary: string } | undefined,
    gone: () => Promise<boolean>,
  ) {
    const storage = deps.storage.for(facts.strategy);
    const variants = variantsFor(deps);
    for (const f of fallbackFormats(source, format)) {
      const key = variantKey(source.image.id, width, f);
      const row = knownVariants.get(key) ?? (await variants.stored(source, width, f).catch(() => null));
      if (!row) continue;
      const blob = storage.readableFile(row.path);
      if (!blob) {
        if (await gone()) return notFound();
        return redirect(storage.url(row.path), vary, FALLBACK_MAX_AGE);
      }
      if (!(await blob.exists())) continue;
      remember(key, row);
      const etag = `"v-${source.sha1}-${width}-${f}"`;
      const lastModified = new Date(Math.floor(row.createdAt.getTime() / 1000) * 1000);
      return serveFile(request, blob, facts, now, { "content-type": variantMime(f), etag, "last-modified": lastModified.toUTCString(), ...vary }, FALLBACK_MAX_AGE);
    }
    const blob = storage.readableFile(path);
    if (!blob) return (await gone()) ? notFound() : redirect(storage.url(path), vary, FALLBACK_MAX_AGE);
    if (!(await blob.exists())) {
      known.delete(path);
      return notFound();
    }
    return serveFile(request, blob, facts, now, { "content-type": facts.mimetype, etag: facts.etag, "last-modified": facts.lastModified.toUTCString(), ...vary }, FALLBACK_MAX_AGE);
  }

  function remember(key: string, row: VariantRow) {
    if (knownVariants.has(key)) return;
    if (knownVariants.size >= CACHED_OBJECTS) knownVariants.delete(knownVariants.keys().next().value!);
    knownVariants.set(key, row);
  }

  return async (request, server) => {
    if (request.method !== "GET" && request.method !== "HEAD") return methodNotAllowed();
    const url = new URL(request.url);
    let path: string;
    try {
      path = decodeURIComponent(url.pathname.slice(3));
    } catch {
      return notFound();
    }
    // a query asks for a variant: its grammar is checked before anything else (no database, nothing stored)
    let query: VariantQuery | null = null;
    if (url.search !== "") {
      try {
        query = parseVariantQuery(url.search);
      } catch (e) {
        return errorResponse(deps, e);
      }
    }
    // stored paths are ours: date folders and base64url names; anything else cannot be a stored object
    if (!storedPathShape.test(path) || path.split("/").includes("..")) return notFound();
    const facts = await factsOf(path);
    if (!facts) return notFound();
    const now = deps.clock();
    if (facts.expiredAt && facts.expiredAt.getTime() <= now.getTime()) return notFound();
    if (query) {
      // the client as every per-address bound sees it (X-Forwarded-For behind TRUST_PROXY proxies, else the socket)
      const address = () =>
        clientAddress(deps.config.trustedProxies, request.headers.get("x-forwarded-for"), () => {
          try {
            return server?.requestIP(request)?.address ?? "";
          } catch {
            return "";
          }
        });
      return serveVariant(request, path, facts, query, now, address).catch((e) => errorResponse(deps, e));
    }
    const blob = deps.storage.for(facts.strategy).readableFile(path);
    if (!blob || !(await blob.exists())) {
      known.delete(path);
      return notFound();
    }
    return serveFile(request, blob, facts, now, { "content-type": facts.mimetype, etag: facts.etag, "last-modified": facts.lastModified.toUTCString() });
  };
}

/** The object's answer: validators, ranges, caching until its expiry, script-free headers. */
function serveFile(
  request: Request,
  blob: BunFile,
  facts: ObjectFacts,
  now: Date,
  own: { "content-type": string; etag: string; "last-modified": string; vary?: string },
  /** A fallback's lifetime in seconds (never immutable); the object's own otherwise. */
  shortMaxAge?: number,
): Response {
  const maxAge = facts.expiredAt ? Math.max(0, Math.floor((facts.expiredAt.getTime() - now.getTime()) / 1000)) : ONE_YEAR;
  const headers: Record<string, string> = {
    ...securityHeaders,
    ...own,
    "cache-control":
      shortMaxAge !== undefined
        ? `public, max-age=${Math.min(shortMaxAge, maxAge)}`
        : facts.expiredAt
          ? `public, max-age=${maxAge}`
          : `public, max-age=${ONE_YEAR}, immutable`,
  };
  const etag = own.etag;

  // objects never change under a name, so the facts alone answer a revalidation
  const ifNoneMatch = request.headers.get("if-none-match");
  const ifModifiedSince = request.headers.get("if-modified-since");
  const notModified = ifNoneMatch
    ? ifNoneMatch.split(",").some((t) => t.trim() === etag || t.trim() === `W/${etag}` || t.trim() === "*")
    : ifModifiedSince !== null && Date.parse(ifModifiedSince) >= Date.parse(own["last-modified"]);
  if (notModified) return new Response(null, { status: 304, headers });

  const size = blob.size;
  const rangeHeader = request.headers.get("range");
  const ifRange = request.headers.get("if-range");
  // ranges are defined for GET only (RFC 9110): a HEAD answers the whole representation's headers
  const range = request.method === "GET" && rangeHeader && (!ifRange || ifRange === etag) ? parseRange(rangeHeader, size) : null;
  if (range === "unsatisfiable") {
    return new Response(null, { status: 416, headers: { ...headers, "content-range": `bytes */${size}` } });
  }
  const body = request.method === "HEAD" ? null : range ? blob.slice(range[0], range[1] + 1) : blob;
  if (range) {
    return new Response(body, {
      status: 206,
      headers: { ...headers, "content-range": `bytes ${range[0]}-${range[1]}/${size}`, "content-length": String(range[1] - range[0] + 1) },
    });
  }
  return new Response(body, { status: 200, headers: { ...headers, "content-length": String(size) } });
}

/** Whether a GIF has several frames, from its header (the stored object of a local strategy, or its address). */
async function isAnimated(deps: Deps, strategy: ObjectFacts["strategy"], path: string): Promise<boolean> {
  try {
    const storage = deps.storage.for(strategy);
    const file = storage.readableFile(path);
    const input = file ? file.name! : new Uint8Array(await (await fetch(storage.url(path))).arrayBuffer());
    return ((await sharp(input, { limitInputPixels: false }).metadata()).pages ?? 1) > 1;
  } catch {
    return true; // unreadable here: the stricter answer (only animation-keeping formats)
  }
}

/** A variant on a storage that serves its own addresses: the stored object's address (the image's `url` is there too). */
const redirect = (location: string, vary?: { vary: string }, maxAge = 86400) =>
  new Response(null, {
    status: 302,
    headers: { location, "cache-control": `public, max-age=${maxAge}`, "x-content-type-options": "nosniff", ...vary },
  });

/** An AppError as the API's envelope with its status and headers (Retry-After); anything else a logged 500. */
function errorResponse(deps: Deps, e: unknown): Response {
  if (e instanceof AppError && e.status !== 500) {
    return new Response(JSON.stringify(failure(e.message, e.errors)), {
      status: e.status,
      headers: { "content-type": "application/json", "x-content-type-options": "nosniff", ...e.headers },
    });
  }
  logFor(deps).error({ err: e instanceof AppError ? (e.cause ?? e) : e }, "variant: failed");
  return new Response(JSON.stringify(failure(e instanceof AppError ? e.message : "Internal server error.")), {
    status: 500,
    headers: { "content-type": "application/json", "x-content-type-options": "nosniff" },
  });
}

const notFound = () =>
  new Response(JSON.stringify(failure("Not found.")), {
    status: 404,
    headers: { "content-type": "application/json", "x-content-type-options": "nosniff" },
  });

/** Objects are read-only here: uploads and deletes go through the API. */
const methodNotAllowed = () =>
  new Response(JSON.stringify(failure("Method not allowed: images are read with GET or HEAD; upload and delete them through /api/v1.")), {
    status: 405,
    headers: { "content-type": "application/json", "x-content-type-options": "nosniff", allow: "GET, HEAD" },
  });

/** One object server per set of dependencies: the app's route and Bun's own router share its cache. */
export const objectServerFor = perDeps(objectServer);

export function register(app: OpenAPIHono<AppEnv>) {
  app.all("/i/*", (c) => objectServerFor(c.get("deps"))(c.req.raw, { requestIP: () => ({ address: socketAddress(c) }) }));
}
