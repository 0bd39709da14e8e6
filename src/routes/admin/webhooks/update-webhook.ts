import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { updateEndpoint } from "../../../services/webhooks.ts";
import { adminRoute, idParam, jsonBody } from "../common.ts";
import { SITE, URL_TEXT, description, url, events, EndpointResponse, endpointOutput } from "./shared.ts";

const UpdateWebhookInput = z
  .object({
    url,
    description,
    events,
    enabled: z.boolean().openapi({
      description:
        'false switches it off (`disabled_reason` "switched off by its owner"); true switches it on again and clears `disabled_reason`, `disabled_at` and `failing_since`',
    }),
  })
  .partial()
  .openapi("UpdateWebhookInput");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "patch",
      path: "/api/admin/webhooks/{id}",
      operationId: "adminUpdateWebhook",
      summary: "Change a site-wide webhook endpoint (URL, description, events, enabled)",
      description:
        `Changes the fields given. A new URL is checked as when the endpoint was made (${URL_TEXT}) \`enabled: true\` switches on an endpoint ` +
        "disabled by hand or by its failures and clears `disabled_reason`, `disabled_at` and `failing_since`; `enabled: false` switches it off " +
        "(deliveries under way end as failed, new events are not sent to it but kept in its log as failed, `not sent: the endpoint was switched off`). " +
        "Switching it on sends nothing from the past by itself: to send what it missed, follow with `POST /api/admin/webhooks/{id}/resend-failed` " +
        "and `since` its former `failing_since` (or `disabled_at`). The secret does not change.",
      request: { params: idParam, body: jsonBody(UpdateWebhookInput) },
      responses: { ...okResponse(EndpointResponse, "The endpoint"), ...errorResponses(400, 401, 404, 415, 422, 500) },
    }),
    async (c) => {
      const endpoint = await updateEndpoint(c.get("deps"), SITE, c.req.valid("param").id, c.req.valid("json"));
      return respond(c, endpointOutput(endpoint));
    },
  );
}
