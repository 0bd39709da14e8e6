import type { OpenAPIHono } from "@hono/zod-openapi";
import { createStrategy, STRATEGIES_MAX } from "../../../db/repositories/strategies.ts";
import { validationError } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute, jsonBody, StrategyInput } from "../common.ts";
import { StrategyResponse, toOutput, checkConfig } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
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
}
