/** GET /health/ready: the database answers and every enabled strategy's storage takes a write (services/readiness.ts). */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { AppError } from "../../errors.ts";
import { respond } from "../../http/envelope.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { envelope } from "../../http/schemas.ts";
import type { AppEnv } from "../../http/types.ts";

const StorageCheck = z
  .object({
    id: z.number().int().openapi({ example: 1 }),
    name: z.string().openapi({ example: "Local" }),
    driver: z.string().openapi({ example: "local" }),
    writable: z.literal(true),
  })
  .openapi("StorageCheck");

const readinessRoute = createRoute({
  method: "get",
  path: "/health/ready",
  operationId: "getReadiness",
  tags: ["Service"],
  summary: "Readiness check",
  description:
    "200 when the database answers and the storage of every enabled strategy is writable: a small probe object is written and removed on each (at most 5 s per storage; one round per second at most, its answer shared by the requests of that second). " +
    "503 otherwise, with a message naming what failed (the database, or each strategy whose storage refused the probe). No credential. " +
    "Use it to take an instance out of a load balancer; `GET /health` (database only, no writes) for liveness.",
  security: [],
  responses: {
    ...okResponse(
      envelope(z.object({ database: z.literal("up"), storage: z.array(StorageCheck) }), "ReadinessResponse"),
      "The database answers and every enabled strategy's storage is writable",
    ),
    ...errorResponses(503),
  },
});

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(readinessRoute, async (c) => {
    const readiness = await c.get("services").readiness.check();
    if (!readiness.ready) throw new AppError("unavailable", readiness.message);
    return respond(c, { database: "up" as const, storage: readiness.storage });
  });
}
