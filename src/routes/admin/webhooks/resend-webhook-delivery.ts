import type { OpenAPIHono } from "@hono/zod-openapi";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { EmptyResponse } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { intField } from "../../../http/validation.ts";
import { resendOneDelivery } from "../../../services/webhooks.ts";
import { adminRoute, idParam } from "../common.ts";
import { SITE } from "./shared.ts";

const deliveryParams = idParam.extend({
  delivery_id: intField(1, Number.MAX_SAFE_INTEGER).openapi({
    param: { name: "delivery_id", in: "path", example: 42 },
    type: "integer",
    minimum: 1,
    example: 42,
  }),
});

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/webhooks/{id}/deliveries/{delivery_id}/resend",
      operationId: "adminResendWebhookDelivery",
      summary: "Send a delivery of a site-wide webhook endpoint again",
      description:
        "Makes a delivered or failed delivery pending again and attempts it at once, with the same body and `webhook-id` (and the retry schedule " +
        "after that). 404 when the endpoint or the delivery does not exist, or when the delivery is still pending (it is attempted by itself).",
      request: { params: deliveryParams },
      responses: { ...okResponse(EmptyResponse, "Queued; `data` is null"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const { id, delivery_id } = c.req.valid("param");
      const outcome = await resendOneDelivery(c.get("deps"), SITE, id, delivery_id);
      if (outcome === "missing") throw notFound("Delivery not found.");
      if (outcome === "pending")
        throw notFound("The delivery is still pending: it will be attempted by itself; only a delivered or failed delivery can be sent again.");
      return respond(c, null);
    },
  );
}
