/** GET /health: the database answers (liveness; no writes). */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { AppError } from "../../errors.ts";
import { respond } from "../../http/envelope.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { envelope } from "../../http/schemas.ts";
import type { AppEnv } from "../../http/types.ts";

const healthRoute = createRoute({
  method: "get",
  path: "/health",
  operationId: "getHealth",
  tags: ["Service"],
  summary: "Health check",
  description: "200 when the database answers, 503 otherwise. No credential.",
  security: [],
  responses: {
    ...okResponse(envelope(z.object({ database: z.literal("up") }), "HealthResponse"), "The service and its database are up"),
    ...errorResponses(503),
  },
});

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(healthRoute, async (c) => {
    if (!(await c.get("services").readiness.databaseAnswers())) throw new AppError("unavailable", "The database does not answer.");
    return respond(c, { database: "up" as const });
  });
}
