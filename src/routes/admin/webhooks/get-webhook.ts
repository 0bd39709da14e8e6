import type { OpenAPIHono } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { findEndpoint } from "../../../services/webhooks.ts";
import { adminRoute, idParam } from "../common.ts";
import { SITE, EndpointResponse, endpointOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/webhooks/{id}",
      operationId: "adminGetWebhook",
      summary: "Read a site-wide webhook endpoint",
      description: "One site-wide endpoint, without its secret; a user's endpoint is a 404 here.",
      request: { params: idParam },
      responses: { ...okResponse(EndpointResponse, "The endpoint"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => respond(c, endpointOutput(await findEndpoint(c.get("deps").db, SITE, c.req.valid("param").id))),
  );
}
