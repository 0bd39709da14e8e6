import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { dateTime, envelope } from "../../../http/schemas.ts";
import { formatDateTime } from "../../../http/time.ts";
import type { AppEnv } from "../../../http/types.ts";
import { intField } from "../../../http/validation.ts";
import { DELIVERIES_PAGE, DELIVERY_RETENTION_DAYS, type Delivery, deliveryResource, findEndpoint, listDeliveries } from "../../../services/webhooks.ts";
import { adminRoute, idParam } from "../common.ts";
import { SITE, iso } from "./shared.ts";

const WebhookDelivery = z
  .object({
    id: z.number().int().openapi({ example: 42 }),
    message_id: z.string().openapi({ description: "The `webhook-id` header sent", example: "msg_2f0c6f0e0b9c4b1f9a5d3c7e8b6a4d2c" }),
    event_type: z.string().openapi({ example: "image.uploaded" }),
    status: z
      .enum(["pending", "delivered", "failed"])
      .openapi({ description: "`pending`: to be attempted (again); `delivered`: answered 2xx; `failed`: no more attempts" }),
    attempts: z.number().int().openapi({ description: "Attempts made so far", example: 1 }),
    last_status_code: z.number().int().nullable().openapi({ description: "The status of the last answer; null when there was none", example: 200 }),
    last_latency_ms: z.number().int().nullable().openapi({ example: 84 }),
    last_error: z
      .string()
      .nullable()
      .openapi({
        description:
          "What went wrong in the last attempt; null when it was delivered or not attempted yet. For a site-wide endpoint it may quote the answer's first " +
          "200 characters and a redirect's target; a user's endpoint's log never holds what its receiver answered (`answered 500`), nor any address its host resolved to.",
        example: null,
      }),
    last_attempt_at: dateTime.nullable(),
    next_attempt_at: dateTime.nullable().openapi({ description: "When it will be attempted (again); null when it is not pending" }),
    delivered_at: dateTime.nullable(),
    created_at: dateTime,
  })
  .openapi("WebhookDelivery");

/** deliveryResource, with the admin API's dates. */
const deliveryOutput = (d: Delivery): z.infer<typeof WebhookDelivery> => {
  const r = deliveryResource(d);
  return {
    ...r,
    last_attempt_at: iso(r.last_attempt_at),
    next_attempt_at: iso(r.next_attempt_at),
    delivered_at: iso(r.delivered_at),
    created_at: formatDateTime(d.createdAt),
  };
};

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/webhooks/{id}/deliveries",
      operationId: "adminListWebhookDeliveries",
      summary: "Read a site-wide webhook endpoint's delivery log",
      description:
        `The endpoint's deliveries, newest first, ${DELIVERIES_PAGE} a page: \`before\` is the last id of the previous page (\`next_before\` ` +
        `gives it; null on the last page). Delivered and failed deliveries are kept ${DELIVERY_RETENTION_DAYS} days.`,
      request: {
        params: idParam,
        query: z.object({
          before: intField(1, Number.MAX_SAFE_INTEGER)
            .optional()
            .openapi({ type: "integer", minimum: 1, description: "Deliveries older than this id", example: 43 }),
        }),
      },
      responses: {
        ...okResponse(
          envelope(
            z.object({
              deliveries: z.array(WebhookDelivery),
              next_before: z.number().int().nullable().openapi({ description: "`before` for the next page; null when this page is the last", example: null }),
            }),
            "WebhookDeliveryListResponse",
          ),
          "A page of the log",
        ),
        ...errorResponses(401, 404, 422, 500),
      },
    }),
    async (c) => {
      const { db } = c.get("deps");
      const endpoint = await findEndpoint(db, SITE, c.req.valid("param").id);
      const rows = await listDeliveries(db, endpoint.id, c.req.valid("query").before);
      return respond(c, { deliveries: rows.map(deliveryOutput), next_before: rows.length === DELIVERIES_PAGE ? rows.at(-1)!.id : null });
    },
  );
}
