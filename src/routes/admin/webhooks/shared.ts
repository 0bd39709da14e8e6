import { z } from "@hono/zod-openapi";
import { EVENT_TYPES } from "../../../db/schema.ts";
import { dateTime, envelope } from "../../../http/schemas.ts";
import { formatDateTime } from "../../../http/time.ts";
import { DESCRIPTION_MAX, type Endpoint, type EndpointScope, endpointResource } from "../../../services/webhooks.ts";

export const SITE: EndpointScope = { site: true };

export const EVENTS_TEXT =
  "Event types: `image.uploaded` (an image was stored), `image.deleted` (deleted by its owner, an administrator or with its account), " +
  "`image.expired` (removed at its `expired_at`), `token.revoked` (a permanent or temporary token revoked; its id and kind, never its secret), " +
  "`user.disabled` (an account disabled or deleted); `webhook.test` is only sent by the test operation. A site-wide endpoint receives " +
  "the events of every account and of guests; a user's endpoint only those of the user's own images and tokens.";

export const URL_TEXT =
  "The URL is http or https, without credentials (`user:pass@`), at most 2048 characters. Its host must resolve to public addresses only: loopback, " +
  'private, link-local (cloud metadata), documentation and other reserved addresses are refused with a 422 ("This address is private or internal; ' +
  'webhooks can only be sent to public addresses.", never naming what the host resolved to), unless the operator allows them with WEBHOOK_ALLOW. ' +
  "WEBHOOK_ALLOW opens to site-wide endpoints, and to a user's own endpoints only where the user's group has `webhook_allow_internal`. " +
  "The same check runs again at every delivery, after DNS, and the connection goes to the address checked.";

export const event = z.enum(EVENT_TYPES).openapi({ example: "image.uploaded" });

export const WebhookEndpoint = z
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

export const WebhookEndpointWithSecret = WebhookEndpoint.extend({
  secret: z.string().openapi({
    description:
      "The signing secret, `whsec_` and the base64 of 32 random bytes. Shown this once: it is stored encrypted and never answered again (rotate it to get a new one).",
    example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/uAB5ubhXJ8=",
  }),
}).openapi("WebhookEndpointWithSecret");

export const description = z
  .string()
  .max(DESCRIPTION_MAX, `The description may be at most ${DESCRIPTION_MAX} characters.`)
  .openapi({ description: `What it is for (at most ${DESCRIPTION_MAX} characters)`, example: "Purge the CDN" });

export const url = z.string().min(1).max(2048).openapi({ description: URL_TEXT, example: "https://hooks.example.com/image-host" });

export const events = z
  .array(event)
  .min(1, "Choose at least one event.")
  .max(EVENT_TYPES.length * 2, "Name each event once.")
  .openapi({ description: "At least one event type; repeats count once" });

export const EndpointResponse = envelope(WebhookEndpoint, "WebhookEndpointResponse");

export const EndpointSecretResponse = envelope(WebhookEndpointWithSecret, "WebhookEndpointSecretResponse");

export const iso = (s: string | null) => (s === null ? null : formatDateTime(new Date(s)));

/** endpointResource, with the admin API's dates. */
export const endpointOutput = (e: Endpoint): z.infer<typeof WebhookEndpoint> => {
  const r = endpointResource(e);
  return { ...r, events: r.events, disabled_at: iso(r.disabled_at), failing_since: iso(r.failing_since), created_at: formatDateTime(e.createdAt) };
};
