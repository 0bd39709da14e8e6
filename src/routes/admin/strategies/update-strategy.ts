import type { OpenAPIHono } from "@hono/zod-openapi";
import { getStrategy, updateStrategy } from "../../../db/repositories/strategies.ts";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute, idParam, jsonBody, StrategyInput } from "../common.ts";
import { StrategyResponse, toOutput, checkConfig } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
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
}
