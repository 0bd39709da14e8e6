import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { testEndpoint } from "../../../services/webhooks.ts";
import { adminRoute, idParam } from "../common.ts";
import { SITE } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/webhooks/{id}/test",
      operationId: "adminTestWebhook",
      summary: "Send a test event to a site-wide webhook endpoint",
      description:
        "Queues a `webhook.test` event for this endpoint only (`data`: `{endpoint_id, message}`), delivered, signed and retried like any other " +
        "event; the answer is the id of its delivery (see the delivery log). To a disabled endpoint it is not sent: the delivery fails at once.",
      request: { params: idParam },
      responses: {
        ...okResponse(envelope(z.object({ delivery_id: z.number().int().openapi({ example: 42 }) }), "WebhookTestResponse"), "The test event's delivery"),
        ...errorResponses(401, 404, 422, 500),
      },
    }),
    async (c) => {
      const deliveryId = await testEndpoint(c.get("deps"), SITE, c.req.valid("param").id);
      return respond(c, { delivery_id: deliveryId });
    },
  );
}
