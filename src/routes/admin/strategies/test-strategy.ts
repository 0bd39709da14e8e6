import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { getStrategy } from "../../../db/repositories/strategies.ts";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { logFor } from "../../../observability/log.ts";
import { PROBE_REASONS, type ProbeFailure, probe } from "../../../services/readiness.ts";
import { adminRoute, idParam } from "../common.ts";

const StrategyTest = z
  .object({
    writable: z.boolean().openapi({ description: "Whether a probe object could be written to the storage and removed", example: true }),
    reason: z.enum(PROBE_REASONS).optional().openapi({
      description:
        "Why not, when `writable` is false: one of a fixed set; the storage's own words (paths, the remote endpoint's message) go to the server's log only",
      example: "permission denied",
    }),
  })
  .openapi("StrategyTest");

/** A log line's detail without the strategy's keys. */
function withoutSecrets(detail: string, config: Record<string, unknown>): string {
  for (const key of ["secret_access_key", "access_key_id"]) {
    const secret = config[key];
    if (typeof secret === "string" && secret.length >= 4) detail = detail.split(secret).join("(secret)");
  }
  return detail.slice(0, 500);
}

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/strategies/{id}/test",
      operationId: "adminTestStrategy",
      summary: "Test a storage strategy's storage",
      description:
        "Runs the readiness probe (`GET /health/ready`) on this one strategy, enabled or not: a small probe object is written and removed (at most 5 s). " +
        "A storage that refuses is a result, not an error: `{writable: false, reason}`, the reason one of a fixed set naming what failed; the storage's own words (paths, the remote endpoint's message) go to the server's log only, without the configuration's secrets.",
      request: { params: idParam },
      responses: { ...okResponse(envelope(StrategyTest, "StrategyTestResponse"), "The probe's result"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const deps = c.get("deps");
      const strategy = await getStrategy(deps.db, c.req.valid("param").id);
      if (!strategy) throw notFound("Strategy not found.");
      let failure: ProbeFailure | null;
      try {
        failure = await probe(deps.storage.for(strategy));
      } catch (e) {
        failure = { summary: "unusable configuration", detail: (e as Error).message || String(e) };
      }
      if (!failure) return respond(c, { writable: true });
      logFor(deps).warn(
        { strategy_id: strategy.id, reason: failure.summary, detail: withoutSecrets(failure.detail, strategy.config) },
        "strategy test: the storage is not writable",
      );
      return respond(c, { writable: false, reason: failure.summary });
    },
  );
}
