/**
 * The HTTP form of a stored object's answer (services/serving/object-server.ts decides what it is): validators,
 * ranges, caching until its expiry, script-free headers; and the few JSON answers of the /i/ addresses.
 */
import type { Deps } from "../deps.ts";
import { AppError } from "../errors.ts";
import { logFor } from "../observability/log.ts";
import type { Served } from "../services/serving/object-server.ts";
import { failure } from "./envelope.ts";
import { parseRange } from "./range.ts";

const ONE_YEAR = 31_536_000;
const securityHeaders = {
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox",
  "cross-origin-resource-policy": "cross-origin",
  "accept-ranges": "bytes",
};

/** The answer to `request` for what the object server found. */
export function objectResponse(request: Request, served: Served, now: Date): Response {
  if (served.kind === "missing") return notFound();
  if (served.kind === "redirect") return redirect(served.location, served.vary, served.maxAge);
  return serveFile(request, served, now);
}

/** The object's answer: validators, ranges, caching until its expiry, script-free headers. */
function serveFile(request: Request, { blob, facts, own, shortMaxAge }: Extract<Served, { kind: "file" }>, now: Date): Response {
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

/** A variant on a storage that serves its own addresses: the stored object's address (the image's `url` is there too). */
const redirect = (location: string, vary?: { vary: string }, maxAge = 86400) =>
  new Response(null, {
    status: 302,
    headers: { location, "cache-control": `public, max-age=${maxAge}`, "x-content-type-options": "nosniff", ...vary },
  });

/** An AppError as the API's envelope with its status and headers (Retry-After); anything else a logged 500. */
export function objectErrorResponse(deps: Deps, e: unknown): Response {
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

export const notFound = () =>
  new Response(JSON.stringify(failure("Not found.")), {
    status: 404,
    headers: { "content-type": "application/json", "x-content-type-options": "nosniff" },
  });

/** Objects are read-only here: uploads and deletes go through the API. */
export const methodNotAllowed = () =>
  new Response(JSON.stringify(failure("Method not allowed: images are read with GET or HEAD; upload and delete them through /api/v1.")), {
    status: 405,
    headers: { "content-type": "application/json", "x-content-type-options": "nosniff", allow: "GET, HEAD" },
  });
