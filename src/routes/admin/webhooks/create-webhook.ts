import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { createEndpoint, SITE_ENDPOINTS_MAX } from "../../../services/webhooks.ts";
import { adminRoute, jsonBody } from "../common.ts";
import { SITE, EVENTS_TEXT, URL_TEXT, description, url, events, EndpointSecretResponse, endpointOutput } from "./shared.ts";

const DELIVERY_TEXT =
  'Each event is a `POST` with a JSON body in the Standard Webhooks shape `{"type": "image.uploaded", "timestamp": "2026-11-22T10:30:00.000Z", "data": {…}}` ' +
  "and the headers `webhook-id` (the message id, the same on every retry: deduplicate by it), `webhook-timestamp` (Unix seconds of the attempt) and " +
  '`webhook-signature` (`v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`, keyed with the base64 part of the `whsec_` secret; ' +
  "any Standard Webhooks library verifies it). An answer 2xx within 10 s is delivered; anything else (another status, a redirect, which is not followed, " +
  "a timeout, a refused connection) is retried: at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (8 attempts over about 27.5 hours). " +
  "A retry's delay is counted from the end of the failed attempt (a timeout does not shorten it). " +
  "An endpoint whose attempts have all failed for a day is disabled, and so is one that answers 410 Gone (`disabled_reason` says why; enabling it again " +
  "starts over). While an endpoint is switched off, each event it wants is kept in its delivery log as `failed` (`not sent: the endpoint was switched off`); " +
  "switching it on sends nothing from the past by itself: `POST /api/admin/webhooks/{id}/resend-failed` sends the failed deliveries since a time. " +
  "Delivery is at least once; the events of one subject (an image, a token, a user) reach an endpoint in order. A slow or hanging endpoint never " +
  "delays the others: each instance bounds the sends in flight per endpoint, per account and for all users' endpoints together, and site-wide " +
  "endpoints are not counted with users' ones.";

const CreateWebhookInput = z.object({ url, description: description.optional(), events }).openapi("CreateWebhookInput");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/webhooks",
      operationId: "adminCreateWebhook",
      summary: "Create a site-wide webhook endpoint",
      description:
        `A site-wide endpoint, sent the chosen events of the whole site. The answer carries its signing \`secret\`, shown this once: it is ` +
        `stored encrypted and never answered again (rotate it to get a new one). At most ${SITE_ENDPOINTS_MAX} site-wide endpoints (400 beyond). ` +
        `${URL_TEXT} ${EVENTS_TEXT} ${DELIVERY_TEXT}`,
      request: { body: jsonBody(CreateWebhookInput) },
      responses: {
        ...okResponse(EndpointSecretResponse, "The endpoint and its secret (shown this once)"),
        ...errorResponses(400, 401, 415, 422, 500),
      },
    }),
    async (c) => {
      const b = c.req.valid("json");
      const { endpoint, secret } = await createEndpoint(c.get("deps"), SITE, { url: b.url, description: b.description, events: b.events });
      return respond(c, { ...endpointOutput(endpoint), secret });
    },
  );
}
