import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { failure } from "../../http/envelope.ts";
import { socketAddress } from "../../http/auth.ts";
import type { AppEnv } from "../../http/types.ts";
import { sameSecretHash, sha256Hex } from "../../services/secrets.ts";
import { servicesOf } from "../../services/index.ts";

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3})$/;
const FORWARDED = ["x-forwarded-for", "forwarded", "x-real-ip"];

/**
 * Who may scrape: with METRICS_TOKEN, whoever sends it as a bearer token; without, only a client on this machine
 * talking to the server directly. A request relayed by a proxy on this machine also arrives from a loopback
 * address, so one that carries forwarding headers is not "on this machine".
 */
function mayScrape(c: Context<AppEnv>): { ok: true } | { ok: false; status: 401 | 403; message: string } {
  const token = c.get("deps").config.metricsToken;
  if (token) {
    const sent = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1]?.trim() ?? "";
    return sameSecretHash(sha256Hex(sent), sha256Hex(token))
      ? { ok: true }
      : { ok: false, status: 401, message: "Metrics require 'Authorization: Bearer <METRICS_TOKEN>'." };
  }
  const direct = FORWARDED.every((h) => c.req.header(h) === undefined);
  if (direct && LOOPBACK.test(socketAddress(c))) return { ok: true };
  return { ok: false, status: 403, message: "Metrics answer clients on this machine only; set METRICS_TOKEN to scrape them from elsewhere." };
}

/** GET /metrics: the Prometheus text format (outside the v1 contract and its spec, like /docs). */
export function register(app: OpenAPIHono<AppEnv>) {
  app.get("/metrics", async (c) => {
    const allowed = mayScrape(c);
    if (!allowed.ok) {
      if (allowed.status === 401) c.header("WWW-Authenticate", 'Bearer realm="metrics"');
      return c.json(failure(allowed.message), allowed.status);
    }
    const metrics = servicesOf(c.get("deps")).metrics;
    metrics.enableProcessMetrics();
    c.header("Cache-Control", "no-store");
    return c.body(await metrics.registry.metrics(), 200, { "content-type": metrics.registry.contentType });
  });
}
