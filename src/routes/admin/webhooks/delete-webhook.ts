import type { OpenAPIHono } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { EmptyResponse } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { deleteEndpoint } from "../../../services/webhooks.ts";
import { adminRoute, idParam } from "../common.ts";
import { SITE } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "delete",
      path: "/api/admin/webhooks/{id}",
      operationId: "adminDeleteWebhook",
      summary: "Delete a site-wide webhook endpoint",
      description: "Deletes the endpoint and its delivery log; deliveries still pending are not sent.",
      request: { params: idParam },
      responses: { ...okResponse(EmptyResponse, "Deleted; `data` is null"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      await deleteEndpoint(c.get("deps").db, SITE, c.req.valid("param").id);
      return respond(c, null);
    },
  );
}
