/**
 * The administrator's side of webhooks: the site-wide endpoints (which receive every event of the site),
 * their secrets, test events and delivery logs; and a read-only look at one user's endpoints. The rules (URL,
 * address guard, caps, sealed secret) are the service's (services/webhooks.ts), the same as the user center's.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../../http/types.ts";
import * as listWebhooks from "./list-webhooks.ts";
import * as createWebhook from "./create-webhook.ts";
import * as getWebhook from "./get-webhook.ts";
import * as updateWebhook from "./update-webhook.ts";
import * as deleteWebhook from "./delete-webhook.ts";
import * as rotateWebhookSecret from "./rotate-webhook-secret.ts";
import * as testWebhook from "./test-webhook.ts";
import * as listWebhookDeliveries from "./list-webhook-deliveries.ts";
import * as resendWebhookDelivery from "./resend-webhook-delivery.ts";
import * as resendFailedWebhookDeliveries from "./resend-failed-webhook-deliveries.ts";

/** In this order: the order of the operations in the spec. */
const operations = [
  listWebhooks,
  createWebhook,
  getWebhook,
  updateWebhook,
  deleteWebhook,
  rotateWebhookSecret,
  testWebhook,
  listWebhookDeliveries,
  resendWebhookDelivery,
  resendFailedWebhookDeliveries,
];

export function register(app: OpenAPIHono<AppEnv>) {
  for (const operation of operations) operation.register(app);
}
