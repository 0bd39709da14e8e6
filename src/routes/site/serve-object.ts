import type { OpenAPIHono } from "@hono/zod-openapi";
import { findImageByStoredPath } from "../../db/repositories/images.ts";
import { failure } from "../../http/envelope.ts";
import type { Strategy } from "../../db/repositories/strategies.ts";
import type { Deps } from "../../deps.ts";
import { perDeps } from "../../services/per-deps.ts";
import type { AppEnv } from "../../http/types.ts";
import { parseRange } from "../../http/range.ts";

const ONE_YEAR = 31_536_000;
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
}

const CACHED_OBJECTS = 50_000;

/**
 * Serves objects of local strategies at BASE_URL/i/<path>, with validators and ranges. The record's facts are
 * looked up once and kept: a stored name is never reused, and what a request must not get wrong is checked on
 * every request without the database — the file must still exist (a delete removes it before it answers, on every
 * instance sharing the volume) and the expiry, kept with the facts, must not have passed.
 */
export function objectServer(deps: Deps): (request: Request) => Promise<Response> {
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
    };
    if (known.size >= CACHED_OBJECTS) known.delete(known.keys().next().value!);
    known.set(path, facts);
    return facts;
  }

  return async (request) => {
    if (request.method !== "GET" && request.method !== "HEAD") return methodNotAllowed();
    const url = new URL(request.url);
    let path: string;
    try {
      path = decodeURIComponent(url.pathname.slice(3));
    } catch {
      return notFound();
    }
    // stored paths are ours: date folders and base64url names; anything else cannot be a stored object
    if (!storedPathShape.test(path) || path.split("/").includes("..")) return notFound();
    const facts = await factsOf(path);
    if (!facts) return notFound();
    const now = deps.clock();
    if (facts.expiredAt && facts.expiredAt.getTime() <= now.getTime()) return notFound();
    const blob = deps.storage.for(facts.strategy).readableFile(path);
    if (!blob || !(await blob.exists())) {
      known.delete(path);
      return notFound();
    }

    const maxAge = facts.expiredAt ? Math.max(0, Math.floor((facts.expiredAt.getTime() - now.getTime()) / 1000)) : ONE_YEAR;
    const headers: Record<string, string> = {
      ...securityHeaders,
      "content-type": facts.mimetype,
      etag: facts.etag,
      "last-modified": facts.lastModified.toUTCString(),
      "cache-control": facts.expiredAt ? `public, max-age=${maxAge}` : `public, max-age=${ONE_YEAR}, immutable`,
    };

    // objects never change under a name, so the facts alone answer a revalidation
    const ifNoneMatch = request.headers.get("if-none-match");
    const ifModifiedSince = request.headers.get("if-modified-since");
    const notModified = ifNoneMatch
      ? ifNoneMatch.split(",").some((t) => t.trim() === facts.etag || t.trim() === `W/${facts.etag}` || t.trim() === "*")
      : ifModifiedSince !== null && Date.parse(ifModifiedSince) >= facts.lastModified.getTime();
    if (notModified) return new Response(null, { status: 304, headers });

    const size = blob.size;
    const rangeHeader = request.headers.get("range");
    const ifRange = request.headers.get("if-range");
    // ranges are defined for GET only (RFC 9110): a HEAD answers the whole representation's headers
    const range = request.method === "GET" && rangeHeader && (!ifRange || ifRange === facts.etag) ? parseRange(rangeHeader, size) : null;
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
  };
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
  app.all("/i/*", (c) => objectServerFor(c.get("deps"))(c.req.raw));
}
