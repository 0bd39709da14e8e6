import type { OpenAPIHono } from "@hono/zod-openapi";
import { findImageByStoredPath } from "../../db/repositories/images.ts";
import { failure } from "../../http/envelope.ts";
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

/** Serves objects of local strategies at BASE_URL/i/<path>, with validators and ranges. */
export function register(app: OpenAPIHono<AppEnv>) {
  app.get("/i/*", async (c) => {
    const deps = c.get("deps");
    const notFound = () => c.json(failure("Not found."), 404, { "x-content-type-options": "nosniff" });
    let path: string;
    try {
      path = decodeURIComponent(c.req.path.slice(3));
    } catch {
      return notFound();
    }
    // stored paths are ours: date folders and base64url names; anything else cannot be a stored object
    if (!storedPathShape.test(path) || path.split("/").includes("..")) return notFound();
    const found = await findImageByStoredPath(deps.db, path);
    if (!found) return notFound();
    const { image, strategy } = found;
    const now = deps.clock();
    if (image.expiredAt && image.expiredAt.getTime() <= now.getTime()) return notFound();

    const blob = deps.storage.for(strategy).readableFile(path);
    if (!blob) return notFound();

    const isThumbnail = path !== image.path;
    const etag = `"${isThumbnail ? "t-" : ""}${image.sha1}"`;
    const lastModified = new Date(Math.floor(image.createdAt.getTime() / 1000) * 1000);
    const maxAge = image.expiredAt ? Math.max(0, Math.floor((image.expiredAt.getTime() - now.getTime()) / 1000)) : ONE_YEAR;
    const headers: Record<string, string> = {
      ...securityHeaders,
      "content-type": isThumbnail ? "image/webp" : image.mimetype,
      etag,
      "last-modified": lastModified.toUTCString(),
      "cache-control": image.expiredAt ? `public, max-age=${maxAge}` : `public, max-age=${ONE_YEAR}, immutable`,
    };

    // objects never change under a name, so the record alone answers a revalidation
    const ifNoneMatch = c.req.header("if-none-match");
    const ifModifiedSince = c.req.header("if-modified-since");
    const notModified = ifNoneMatch
      ? ifNoneMatch.split(",").some((t) => t.trim() === etag || t.trim() === `W/${etag}` || t.trim() === "*")
      : ifModifiedSince !== undefined && Date.parse(ifModifiedSince) >= lastModified.getTime();
    if (notModified) return new Response(null, { status: 304, headers });

    if (!(await blob.exists())) return notFound();
    const size = blob.size;

    const rangeHeader = c.req.header("range");
    const ifRange = c.req.header("if-range");
    const range = rangeHeader && (!ifRange || ifRange === etag) ? parseRange(rangeHeader, size) : null;
    if (range === "unsatisfiable") {
      return new Response(null, { status: 416, headers: { ...headers, "content-range": `bytes */${size}` } });
    }
    const body = c.req.method === "HEAD" ? null : range ? blob.slice(range[0], range[1] + 1) : blob;
    if (range) {
      return new Response(body, {
        status: 206,
        headers: { ...headers, "content-range": `bytes ${range[0]}-${range[1]}/${size}`, "content-length": String(range[1] - range[0] + 1) },
      });
    }
    return new Response(body, { status: 200, headers: { ...headers, "content-length": String(size) } });
  });
}
