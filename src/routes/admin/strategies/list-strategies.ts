import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { listStrategiesPage } from "../../../db/repositories/strategies.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { AdminStrategy, adminRoute, pageFields, pageOf, pageQuery } from "../common.ts";
import { toOutput } from "./shared.ts";

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
}
