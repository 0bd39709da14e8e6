import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import { parseDateTime } from "../../../http/time.ts";
import type { AppEnv } from "../../../http/types.ts";
import { RESEND_MAX, resendFailedSince } from "../../../services/webhooks.ts";
import { adminRoute, idParam, jsonBody } from "../common.ts";
import { SITE } from "./shared.ts";

const ResendFailedInput = z
  .object({
    since: z
      .string()
      .transform((v, ctx) => {
        const d = parseDateTime(v);
        if (!d) {
          ctx.addIssue({ code: "custom", message: "use ISO 8601 with an offset, or YYYY-MM-DD HH:MM:SS" });
          return z.NEVER;
        }
        return d;
      })
      .openapi({
        type: "string",
        description: "The failed deliveries of events since this time: ISO 8601 with an offset, or `YYYY-MM-DD HH:MM[:SS]` in the server's time zone",
        example: "2026-11-22 10:30:00",
      }),
  })
  .openapi("ResendFailedWebhookDeliveriesInput");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/webhooks/{id}/resend-failed",
      operationId: "adminResendFailedWebhookDeliveries",
      summary: "Send again a site-wide webhook endpoint's failed deliveries since a time",
      description:
        `Every failed delivery of an event since \`since\` (its \`created_at\` at or after it), oldest first, at most ${RESEND_MAX} a call, becomes ` +
        "pending and is attempted at once, with the same body and `webhook-id`, in order per subject; the events not sent while the endpoint was switched " +
        "off are among them. A delivery that had used up its retries fails again at its next failure. `queued` says how many; when it is " +
        `${RESEND_MAX}, call again for the rest. 400 when the endpoint is switched off: switch it on first (\`PATCH\` \`enabled: true\`).`,
      request: { params: idParam, body: jsonBody(ResendFailedInput) },
      responses: {
        ...okResponse(
          envelope(
            z.object({ queued: z.number().int().openapi({ description: "Deliveries made pending again", example: 12 }) }),
            "WebhookResendFailedResponse",
          ),
          "How many were queued",
        ),
        ...errorResponses(400, 401, 404, 415, 422, 500),
      },
    }),
    async (c) => {
      const queued = await resendFailedSince(c.get("deps"), SITE, c.req.valid("param").id, c.req.valid("json").since);
      return respond(c, { queued });
    },
  );
}
