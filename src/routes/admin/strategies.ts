import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { createStrategy, getStrategy, listStrategiesPage, STRATEGIES_MAX, type Strategy, updateStrategy } from "../../db/repositories/strategies.ts";
import { notFound, validationError } from "../../errors.ts";
import { respond } from "../../http/envelope.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { envelope } from "../../http/schemas.ts";
import { fieldErrors } from "../../http/validation.ts";
import type { AppEnv } from "../../http/types.ts";
import { logFor } from "../../observability/log.ts";
import { localConfigSchema, s3ConfigSchema } from "../../storage/index.ts";
import { PROBE_REASONS, type ProbeFailure, probe } from "../../services/readiness.ts";
import { AdminStrategy, adminRoute, idParam, jsonBody, pageFields, pageOf, pageQuery, StrategyInput } from "./common.ts";

const StrategyResponse = envelope(AdminStrategy, "AdminStrategyResponse");

const StrategyTest = z
  .object({
    writable: z.boolean().openapi({ description: "Whether a probe object could be written to the storage and removed", example: true }),
    reason: z.enum(PROBE_REASONS).optional().openapi({ description: "Why not, when `writable` is false: one of a fixed set; the storage's own words (paths, the remote endpoint's message) go to the server's log only", example: "permission denied" }),
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

function toOutput(s: Strategy): z.infer<typeof AdminStrategy> {
  const config = { ...s.config };
  if (config.secret_access_key) config.secret_access_key = "********";
  return { id: s.id, name: s.name, driver: s.driver, config, quota_kb: s.quotaKb, used_kb: s.usedBytes / 1024, enabled: s.enabled };
}

function checkConfig(driver: "local" | "s3", config: unknown) {
  const parsed = (driver === "s3" ? s3ConfigSchema : localConfigSchema).strict().safeParse(config ?? {});
  if (!parsed.success) {
    const errors = fieldErrors(parsed.error);
    throw validationError(Object.fromEntries(Object.entries(errors).map(([k, v]) => [`config.${k}`, v])));
  }
  return parsed.data as Record<string, unknown>;
}

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/strategies",
      operationId: "adminListStrategies",
      summary: "List storage strategies",
      description:
        "A page of the storage strategies by id (`page`, `per_page` up to 500, default 100), each with its driver, configuration (secrets masked), quota and used space.",
      request: { query: pageQuery },
      responses: {
        ...okResponse(envelope(z.object({ strategies: z.array(AdminStrategy), ...pageFields }), "AdminStrategyListResponse"), "A page of strategies"),
        ...errorResponses(401, 422, 500),
      },
    }),
    async (c) => {
      const { page, per_page } = c.req.valid("query");
      const { rows, total } = await listStrategiesPage(c.get("deps").db, per_page, (page - 1) * per_page);
      return respond(c, { strategies: rows.map(toOutput), ...pageOf(page, per_page, total) });
    },
  );
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/strategies",
      operationId: "adminCreateStrategy",
      summary: "Create a storage strategy",
      description:
        "Creates a storage strategy. `local`: `{root?, url?}`; `s3`: `{bucket, url, endpoint?, region?, access_key_id?, secret_access_key?, prefix?}`. " +
        `Link it to groups with \`strategy_ids\`. The service holds at most ${STRATEGIES_MAX} strategies: beyond, 422.`,
      request: { body: jsonBody(StrategyInput.required({ name: true, driver: true }).openapi("CreateStrategyInput")) },
      responses: { ...okResponse(StrategyResponse, "The strategy"), ...errorResponses(400, 401, 415, 422, 500) },
    }),
    async (c) => {
      const b = c.req.valid("json");
      const s = await createStrategy(c.get("deps").db, {
        name: b.name,
        driver: b.driver,
        config: checkConfig(b.driver, b.config),
        quotaKb: b.quota_kb ?? null,
        enabled: b.enabled ?? true,
      });
      if (!s) throw validationError({ name: [`The service holds ${STRATEGIES_MAX} storage strategies, the most it may: change one instead.`] });
      return respond(c, toOutput(s));
    },
  );
  app.openapi(
    adminRoute({
      method: "patch",
      path: "/api/admin/strategies/{id}",
      operationId: "adminUpdateStrategy",
      summary: "Change a storage strategy",
      description: "Changing the driver of a strategy that holds images strands them; create a new strategy instead.",
      request: { params: idParam, body: jsonBody(StrategyInput) },
      responses: { ...okResponse(StrategyResponse, "The strategy"), ...errorResponses(400, 401, 404, 415, 422, 500) },
    }),
    async (c) => {
      const { db } = c.get("deps");
      const id = c.req.valid("param").id;
      const b = c.req.valid("json");
      const current = await getStrategy(db, id);
      if (!current) throw notFound("Strategy not found.");
      const driver = b.driver ?? current.driver;
      const s = await updateStrategy(db, id, {
        name: b.name,
        driver: b.driver,
        config: b.config !== undefined || b.driver ? checkConfig(driver, b.config ?? current.config) : undefined,
        quotaKb: b.quota_kb,
        enabled: b.enabled,
      });
      return respond(c, toOutput(s!));
    },
  );
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
      logFor(deps).warn({ strategy_id: strategy.id, reason: failure.summary, detail: withoutSecrets(failure.detail, strategy.config) }, "strategy test: the storage is not writable");
      return respond(c, { writable: false, reason: failure.summary });
    },
  );
}
