/**
 * GET/HEAD /i/<path>[?w=…&format=…]: parses the address, asks the object server (services/serving/) and answers
 * with http/object-response.ts. Registered in the app, and given to Bun's own router by server.ts (no middleware
 * on the hot path): both share the one object server of the app's services.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Deps } from "../../deps.ts";
import { clientAddress, socketAddress } from "../../http/auth.ts";
import { methodNotAllowed, notFound, objectErrorResponse, objectResponse } from "../../http/object-response.ts";
import type { AppEnv } from "../../http/types.ts";
import type { ObjectServer } from "../../services/serving/object-server.ts";
import { parseVariantQuery, type VariantQuery } from "../../services/variants/query.ts";

const storedPathShape = /^[A-Za-z0-9_./-]{1,300}$/;

/** What the handler reads of Bun's server (passed to a route handler as its second argument): the socket's address. */
interface SocketInfo {
  requestIP(request: Request): { address: string } | null;
}

type ObjectHandler = (request: Request, server?: SocketInfo) => Promise<Response>;

export function objectHandler(deps: Deps, objects: ObjectServer): ObjectHandler {
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
        return objectErrorResponse(deps, e);
      }
    }
    // stored paths are ours: date folders and base64url names; anything else cannot be a stored object
    if (!storedPathShape.test(path) || path.split("/").includes("..")) return notFound();
    const now = deps.clock();
    const found = objects.find(path, now);
    const facts = found instanceof Promise ? await found : found;
    if (!facts) return notFound();
    if (!query) return objectResponse(request, await objects.original(path, facts), now);
    // the client as every per-address bound sees it (X-Forwarded-For behind TRUST_PROXY proxies, else the socket)
    const address = () =>
      clientAddress(deps.config.trustedProxies, request.headers.get("x-forwarded-for"), () => {
        try {
          return server?.requestIP(request)?.address ?? "";
        } catch {
          return "";
        }
      });
    try {
      return objectResponse(request, await objects.variant(path, facts, query, request.headers.get("accept"), address), now);
    } catch (e) {
      return objectErrorResponse(deps, e);
    }
  };
}

export function register(app: OpenAPIHono<AppEnv>) {
  app.all("/i/*", (c) => objectHandler(c.get("deps"), c.get("services").objects)(c.req.raw, { requestIP: () => ({ address: socketAddress(c) }) }));
}
