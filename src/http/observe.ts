import type { Context } from "hono";
import { matchedRoutes } from "hono/route";
import type { Deps } from "../deps.ts";
import { defaultLogger, type Logger, withLogger } from "../observability/log.ts";
import type { Caller } from "../services/caller.ts";
import { clientIp } from "./auth.ts";
import type { AppEnv, RequestEnv } from "./types.ts";
import { servicesOf } from "../services/index.ts";

/** Probes polled by load balancers and scrapers: logged at debug, not info, so they do not drown the access log. */
const PROBES = new Set(["/health", "/health/ready", "/metrics"]);

interface RequestFacts {
  requestId: string;
  method: string;
  route: string;
  status: number;
  startedAt: number;
  bytesIn: number | null;
  bytesOut: number | null;
  caller?: number | "guest" | "temporary" | "admin";
  userId?: number;
  client: string;
}

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
/** A client may send any method token: the metrics' label takes the usual ones, `other` for the rest (bounded series). */
const methodLabel = (method: string) => (METHODS.has(method) ? method : "other");

/** The access-log line and the request metrics of one answered request. */
function recordRequest(deps: Deps, log: Logger, facts: RequestFacts) {
  const seconds = (performance.now() - facts.startedAt) / 1000;
  const metrics = servicesOf(deps).metrics;
  const method = methodLabel(facts.method);
  metrics.requests.inc({ route: facts.route, method, status: facts.status });
  metrics.requestDuration.observe({ route: facts.route, method }, seconds);
  const level = facts.status >= 500 ? "error" : PROBES.has(facts.route) ? "debug" : "info";
  if (!log.isLevelEnabled(level)) return;
  const durationMs = Math.round(seconds * 10_000) / 10;
  log[level](
    {
      method: facts.method,
      route: facts.route,
      status: facts.status,
      duration_ms: durationMs,
      bytes_in: facts.bytesIn,
      bytes_out: facts.bytesOut,
      caller: facts.caller ?? null,
      ...(facts.userId !== undefined ? { user_id: facts.userId } : {}),
      client: facts.client,
    },
    `${facts.method} ${facts.route} ${facts.status} ${durationMs} ms`,
  );
}

/** A client's (or an edge proxy's) X-Request-Id, cleaned and cut to 64 characters; a fresh UUID without one. */
const requestIdFrom = (header: string | null | undefined) => header?.slice(0, 64).replace(/[^\w.:-]/g, "") || crypto.randomUUID();

const lengthOf = (value: string | null | undefined) => (value == null || value === "" ? null : Number(value));

function callerOf(caller: Caller | undefined, signedInUserId: number | undefined): Pick<RequestFacts, "caller" | "userId"> {
  if (caller?.kind === "guest") return { caller: "guest" };
  if (caller?.kind === "user") {
    return caller.tokenKind === "temporary" ? { caller: "temporary", userId: caller.user.id } : { caller: caller.user.id };
  }
  return signedInUserId !== undefined ? { caller: signedInUserId } : {};
}

/** The route pattern that answered (`/api/v1/images/:key`), or `unmatched` for a 404 of no route. */
function routeOf(c: Context): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    if (routes[i]!.method !== "ALL") return routes[i]!.path;
  }
  return "unmatched";
}

const TEXT_BODY = /^(application\/json|text\/)/;

/**
 * Hono middleware, first of the app: the request's id and logger (every log line of the work it causes carries the
 * `request_id`), then the access-log line and metrics once the answer is known. JSON and text answers get their
 * Content-Length here (they are small and already in memory), so the log can count what was sent.
 */
export function observeRequests(deps: Deps) {
  const root = deps.log ?? defaultLogger();
  return async (c: Context<AppEnv>, next: () => Promise<void>) => {
    const startedAt = performance.now();
    const requestId = requestIdFrom(c.req.header("x-request-id"));
    const log = root.child({ request_id: requestId });
    c.set("requestId", requestId);
    await withLogger(log, next);
    c.header("X-Request-Id", requestId);
    let bytesOut = lengthOf(c.res.headers.get("content-length"));
    if (bytesOut === null && c.res.body && c.req.method !== "HEAD" && TEXT_BODY.test(c.res.headers.get("content-type") ?? "")) {
      const body = await c.res.arrayBuffer();
      c.res = new Response(body, c.res);
      c.res.headers.set("content-length", String(body.byteLength));
      bytesOut = body.byteLength;
    }
    const vars = c.var as Partial<RequestEnv["Variables"]> & { caller?: Caller; signedIn?: { user: { id: number } } };
    const route = routeOf(c);
    const who = callerOf(vars.caller, vars.signedIn?.user.id);
    if (who.caller === undefined && route.startsWith("/api/admin/") && c.res.status !== 401 && c.res.status !== 429) who.caller = "admin";
    recordRequest(deps, log, {
      requestId,
      method: c.req.method,
      route,
      status: c.res.status,
      startedAt,
      bytesIn: lengthOf(c.req.header("content-length")) ?? vars.bytesIn ?? null,
      bytesOut: c.req.method === "HEAD" ? 0 : bytesOut,
      ...who,
      client: clientIp(c),
    });
  };
}

/**
 * The same for the object server, which Bun.serve routes to directly (no Hono): `/i/*` is its route pattern.
 * This is the hot path of the service, so it does only what the line and the metrics need: the metric series are
 * looked up once per method and status, and no request logger is made (serving an object logs nothing else).
 * Objects are answered with their length, so nothing is buffered.
 */
export function observeObjects<S>(
  deps: Deps,
  serve: (request: Request, server: S) => Promise<Response>,
  clientOf: (request: Request) => string,
  options: { log: boolean } = { log: true },
): (request: Request, server: S) => Promise<Response> {
  const root = deps.log ?? defaultLogger();
  const metrics = servicesOf(deps).metrics;
  const series = new Map<string, { count: { inc(): void }; duration: { observe(v: number): void } }>();
  const seriesOf = (method: string, status: number) => {
    const key = `${method} ${status}`;
    let found = series.get(key);
    if (!found) {
      found = {
        count: metrics.requests.labels({ route: "/i/*", method, status }),
        duration: metrics.requestDuration.labels({ route: "/i/*", method }),
      };
      series.set(key, found);
    }
    return found;
  };
  return async (request, server) => {
    const startedAt = performance.now();
    const response = await serve(request, server);
    const seconds = (performance.now() - startedAt) / 1000;
    const { count, duration } = seriesOf(methodLabel(request.method), response.status);
    count.inc();
    duration.observe(seconds);
    const level = response.status >= 500 ? "error" : "info";
    // the line costs more than serving a small cached object (the client address above all): LOG_OBJECT_REQUESTS=false drops it
    if ((options.log || level === "error") && root.isLevelEnabled(level)) {
      const requestId = requestIdFrom(request.headers.get("x-request-id"));
      response.headers.set("x-request-id", requestId);
      const durationMs = Math.round(seconds * 10_000) / 10;
      root[level](
        {
          request_id: requestId,
          method: request.method,
          route: "/i/*",
          status: response.status,
          duration_ms: durationMs,
          bytes_in: null,
          bytes_out: request.method === "HEAD" ? 0 : lengthOf(response.headers.get("content-length")),
          caller: null,
          client: clientOf(request),
        },
        `${request.method} /i/* ${response.status} ${durationMs} ms`,
      );
    }
    return response;
  };
}
