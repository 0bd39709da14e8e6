import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { requireCaller } from "../../http/auth.ts";
import { respond } from "../../http/envelope.ts";
import { bearerOrGuest, errorResponses, okResponse } from "../../http/responses.ts";
import { envelope, Strategy } from "../../http/schemas.ts";
import type { AppEnv } from "../../http/types.ts";
import { listUsableStrategies } from "../../db/repositories/strategies.ts";

const listStrategiesRoute = createRoute({
  method: "get",
  path: "/api/v1/strategies",
  operationId: "listStrategies",
  tags: ["Strategies"],
  summary: "List the usable storage strategies",
  description:
    "Returns the enabled strategies of the caller's user group, in group order (the order automatic uploads try them). `q` filters by a case-insensitive substring of the name. Without a token the guest group's strategies are listed, but only when the administrator enabled guest upload and the guest group has a usable strategy; otherwise 401.",
  security: bearerOrGuest,
  middleware: [requireCaller({ temporary: false, guest: true })],
  request: {
    query: z.object({
      q: z.string().max(100).optional().openapi({ description: "Fuzzy (substring) search on the strategy name", example: "loc" }),
    }),
  },
  responses: {
    ...okResponse(envelope(z.object({ strategies: z.array(Strategy) }), "StrategyListResponse"), "The strategies"),
    ...errorResponses(401, 403, 422, 500),
  },
});

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(listStrategiesRoute, async (c) => {
    const { q } = c.req.valid("query");
    const rows = await listUsableStrategies(c.get("deps").db, c.get("caller").group.id, q?.trim() || undefined);
    return respond(c, { strategies: rows.map((s) => ({ id: s.id, name: s.name })) });
  });
}
