import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import { getUser } from "../../db/repositories/users.ts";
import { EVENT_TYPES, webhookDeliveries } from "../../db/schema.ts";
import { notFound } from "../../errors.ts";
import { respond } from "../../http/envelope.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { dateTime, EmptyResponse, envelope } from "../../http/schemas.ts";
import { formatDateTime, parseDateTime } from "../../http/time.ts";
import type { AppEnv } from "../../http/types.ts";
import { INT4_MAX, intField } from "../../http/validation.ts";
import {
  createEndpoint,
  deleteEndpoint,
  DELIVERIES_PAGE,
  DELIVERY_RETENTION_DAYS,
  DESCRIPTION_MAX,
  type Delivery,
  deliveryResource,
  ENDPOINTS_PER_ACCOUNT,
  type Endpoint,
  type EndpointScope,
  endpointResource,
  findEndpoint,
  listDeliveries,
  listEndpoints,
  RESEND_MAX,
  resendFailedSince,
  rotateSecret,
  SITE_ENDPOINTS_MAX,
  updateEndpoint,
} from "../../services/webhooks.ts";
import { resendDelivery, sendTestEvent } from "../../webhooks/deliver.ts";
import { adminRoute, idParam, jsonBody } from "./common.ts";

/**
 * Issue 19, the administrator's side of webhooks: the site-wide endpoints (which receive every event of the site),
 * their secrets, test events and delivery logs; and a read-only look at one user's endpoints. The rules (URL,
 * address guard, caps, sealed secret) are the service's (services/webhooks.ts), the same as the user center's.
 */

const SITE: EndpointScope = { site: true };

const EVENTS_TEXT =
  "Event types: `image.uploaded` (an image was stored), `image.deleted` (deleted by its owner, an administrator or with its account), " +
  "`image.expired` (removed at its `expired_at`), `token.revoked` (a permanent or temporary token revoked; its id and kind, never its secret), " +
  "`user.disabled` (an account disabled or deleted); `webhook.test` is only sent by the test operation. A site-wide endpoint receives " +
  "the events of every account and of guests; a user's endpoint only those of the user's own images and tokens.";

const DELIVERY_TEXT =
  "Each event is a `POST` with a JSON body in the Standard Webhooks shape `{\"type\": \"image.uploaded\", \"timestamp\": \"2026-11-22T10:30:00.000Z\", \"data\": {…}}` " +
  "and the headers `webhook-id` (the message id, the same on every retry: deduplicate by it), `webhook-timestamp` (Unix seconds of the attempt) and " +
  "`webhook-signature` (`v1,<base64 HMAC-SHA256 of \"<webhook-id>.<webhook-timestamp>.<body>\">`, keyed with the base64 part of the `whsec_` secret; " +
  "any Standard Webhooks library verifies it). An answer 2xx within 10 s is delivered; anything else (another status, a redirect, which is not followed, " +
  "a timeout, a refused connection) is retried: at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (8 attempts over about 27.5 hours). " +
  "A retry's delay is counted from the end of the failed attempt (a timeout does not shorten it). " +
  "An endpoint whose attempts have all failed for a day is disabled, and so is one that answers 410 Gone (`disabled_reason` says why; enabling it again " +
  "starts over). While an endpoint is switched off, each event it wants is kept in its delivery log as `failed` (`not sent: the endpoint was switched off`); " +
  "switching it on sends nothing from the past by itself: `POST /api/admin/webhooks/{id}/resend-failed` sends the failed deliveries since a time. " +
  "Delivery is at least once; the events of one subject (an image, a token, a user) reach an endpoint in order. A slow or hanging endpoint never " +
  "delays the others: each instance bounds the sends in flight per endpoint, per account and for all users' endpoints together, and site-wide " +
  "endpoints are not counted with users' ones.";

const URL_TEXT =
  "The URL is http or https, without credentials (`user:pass@`), at most 2048 characters. Its host must resolve to public addresses only: loopback, " +
  "private, link-local (cloud metadata), documentation and other reserved addresses are refused with a 422 (\"This address is private or internal; " +
  "webhooks can only be sent to public addresses.\", never naming what the host resolved to), unless the operator allows them with WEBHOOK_ALLOW. " +
  "WEBHOOK_ALLOW opens to site-wide endpoints, and to a user's own endpoints only where the user's group has `webhook_allow_internal`. " +
  "The same check runs again at every delivery, after DNS, and the connection goes to the address checked.";

const event = z.enum(EVENT_TYPES).openapi({ example: "image.uploaded" });

const WebhookEndpoint = z
  .object({
    id: z.number().int().openapi({ example: 1 }),
    url: z.string().openapi({ example: "https://hooks.example.com/image-host" }),
    description: z.string().openapi({ example: "Purge the CDN" }),
    events: z.array(event).openapi({ description: "The event types sent to it" }),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable().openapi({
      description: "Why it is disabled (`answered 410 Gone`, `failing since …`, `switched off by its owner`); null while enabled",
      example: null,
    }),
    disabled_at: dateTime.nullable().openapi({ description: "When it was disabled; null while enabled" }),
    failing_since: dateTime.nullable().openapi({ description: "The first failed attempt since the last delivered one; null when the last attempt succeeded" }),
    owner_id: z.number().int().nullable().openapi({ description: "The user it belongs to; null for a site-wide endpoint", example: null }),
    created_at: dateTime,
  })
  .openapi("WebhookEndpoint", { description: "A webhook endpoint; its signing secret is never shown again after it was made or rotated." });

const WebhookEndpointWithSecret = WebhookEndpoint.extend({
  secret: z.string().openapi({
    description: "The signing secret, `whsec_` and the base64 of 32 random bytes. Shown this once: it is stored encrypted and never answered again (rotate it to get a new one).",
    example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/uAB5ubhXJ8=",
  }),
}).openapi("WebhookEndpointWithSecret");

const WebhookDelivery = z
  .object({
    id: z.number().int().openapi({ example: 42 }),
    message_id: z.string().openapi({ description: "The `webhook-id` header sent", example: "msg_2f0c6f0e0b9c4b1f9a5d3c7e8b6a4d2c" }),
    event_type: z.string().openapi({ example: "image.uploaded" }),
    status: z.enum(["pending", "delivered", "failed"]).openapi({ description: "`pending`: to be attempted (again); `delivered`: answered 2xx; `failed`: no more attempts" }),
    attempts: z.number().int().openapi({ description: "Attempts made so far", example: 1 }),
    last_status_code: z.number().int().nullable().openapi({ description: "The status of the last answer; null when there was none", example: 200 }),
    last_latency_ms: z.number().int().nullable().openapi({ example: 84 }),
    last_error: z.string().nullable().openapi({
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

const description = z.string().max(DESCRIPTION_MAX, `The description may be at most ${DESCRIPTION_MAX} characters.`).openapi({ description: `What it is for (at most ${DESCRIPTION_MAX} characters)`, example: "Purge the CDN" });
const url = z.string().min(1).max(2048).openapi({ description: URL_TEXT, example: "https://hooks.example.com/image-host" });
const events = z.array(event).min(1, "Choose at least one event.").max(EVENT_TYPES.length * 2, "Name each event once.").openapi({ description: "At least one event type; repeats count once" });

const CreateWebhookInput = z.object({ url, description: description.optional(), events }).openapi("CreateWebhookInput");

const UpdateWebhookInput = z
  .object({
    url,
    description,
    events,
    enabled: z.boolean().openapi({
      description: "false switches it off (`disabled_reason` \"switched off by its owner\"); true switches it on again and clears `disabled_reason`, `disabled_at` and `failing_since`",
    }),
  })
  .partial()
  .openapi("UpdateWebhookInput");

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

const EndpointResponse = envelope(WebhookEndpoint, "WebhookEndpointResponse");
const EndpointSecretResponse = envelope(WebhookEndpointWithSecret, "WebhookEndpointSecretResponse");

const iso = (s: string | null) => (s === null ? null : formatDateTime(new Date(s)));

/** endpointResource, with the admin API's dates. */
const endpointOutput = (e: Endpoint): z.infer<typeof WebhookEndpoint> => {
  const r = endpointResource(e);
  return { ...r, events: r.events, disabled_at: iso(r.disabled_at), failing_since: iso(r.failing_since), created_at: formatDateTime(e.createdAt) };
};

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
      method: "get",
      path: "/api/admin/webhooks",
      operationId: "adminListWebhooks",
      summary: "List the site-wide webhook endpoints (or one user's)",
      description:
        `The site-wide endpoints by id (at most ${SITE_ENDPOINTS_MAX}), never their secrets. With \`user_id\`, that user's own endpoints instead ` +
        `(at most ${ENDPOINTS_PER_ACCOUNT} per account), to look at: the user manages them in the user center, and the other operations here ` +
        `act on site-wide endpoints only. ${EVENTS_TEXT}`,
      request: {
        query: z.object({
          user_id: intField(1, INT4_MAX)
            .optional()
            .openapi({ type: "integer", minimum: 1, maximum: INT4_MAX, description: "List this user's endpoints instead of the site-wide ones", example: 1 }),
        }),
      },
      responses: {
        ...okResponse(envelope(z.object({ endpoints: z.array(WebhookEndpoint) }), "WebhookEndpointListResponse"), "The endpoints"),
        ...errorResponses(401, 404, 422, 500),
      },
    }),
    async (c) => {
      const { db } = c.get("deps");
      const userId = c.req.valid("query").user_id;
      if (userId !== undefined && !(await getUser(db, userId))) throw notFound("User not found.");
      const rows = await listEndpoints(db, userId === undefined ? SITE : { ownerId: userId });
      return respond(c, { endpoints: rows.map(endpointOutput) });
    },
  );
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
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/webhooks/{id}/secret",
      operationId: "adminRotateWebhookSecret",
      summary: "Rotate a site-wide webhook endpoint's signing secret",
      description:
        "A new signing secret, shown this once in the answer (stored encrypted, never answered again). The old one stops signing at once: " +
        "attempts from now on, retries included, are signed with the new one.",
      request: { params: idParam },
      responses: {
        ...okResponse(EndpointSecretResponse, "The endpoint and its new secret (shown this once)"),
        ...errorResponses(401, 404, 422, 500),
      },
    }),
    async (c) => {
      const { endpoint, secret } = await rotateSecret(c.get("deps"), SITE, c.req.valid("param").id);
      return respond(c, { ...endpointOutput(endpoint), secret });
    },
  );
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
      const deps = c.get("deps");
      const endpoint = await findEndpoint(deps.db, SITE, c.req.valid("param").id);
      const deliveryId = await sendTestEvent(deps.db, endpoint.id, deps.clock());
      if (deliveryId === null) throw notFound("Webhook endpoint not found.");
      return respond(c, { delivery_id: deliveryId });
    },
  );
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
      const { db } = c.get("deps");
      const { id, delivery_id } = c.req.valid("param");
      const endpoint = await findEndpoint(db, SITE, id);
      const [delivery] = await db
        .select({ status: webhookDeliveries.status })
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.id, delivery_id), eq(webhookDeliveries.endpointId, endpoint.id)));
      if (!delivery) throw notFound("Delivery not found.");
      const pending = () => notFound("The delivery is still pending: it will be attempted by itself; only a delivered or failed delivery can be sent again.");
      if (delivery.status === "pending") throw pending();
      if (!(await resendDelivery(db, endpoint.id, delivery_id))) throw pending(); // made pending by another request just now
      return respond(c, null);
    },
  );
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
          envelope(z.object({ queued: z.number().int().openapi({ description: "Deliveries made pending again", example: 12 }) }), "WebhookResendFailedResponse"),
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
