/**
 * Webhooks in the user center: the account's own endpoints (services/webhooks.ts, scope `{ ownerId }`).
 * The pages (webhooks/) and their handlers are shared with the admin page of the site-wide endpoints
 * (admin/webhooks.tsx), which differs in its frame, its events (user.disabled too), its gate and its backend: this page
 * calls the service layer (serviceBackend, scope `{ ownerId }`), the admin page the admin API in-process (so the API's
 * validation and audit log).
 *
 *   GET  /user/webhooks                                   the endpoints, and the form to add one
 *   POST /user/webhooks                                   add one: its secret is shown this once (the page is not stored)
 *   GET  /user/webhooks/:id                               one endpoint: edit, switch on/off, rotate, test, delete; its delivery log
 *   POST /user/webhooks/:id                               save URL, description, events
 *   POST /user/webhooks/:id/enable | /disable             switch on (its failure streak starts over; with `resend`, what failed
 *                                                         or was not sent since `since` is sent again) or off
 *   POST /user/webhooks/:id/resend-failed                 send again every failed delivery of events since `since`
 *   POST /user/webhooks/:id/rotate                        a new secret, shown this once
 *   POST /user/webhooks/:id/test                          a webhook.test event to this endpoint only
 *   POST /user/webhooks/:id/delete                        delete (confirmed; without the page's script, a page asks)
 *   POST /user/webhooks/:id/deliveries/:delivery/resend   send a delivered or failed delivery again
 *
 * Another account's endpoint is "not found", whatever the request. Every form post carries the session's form token.
 *
 * Switched off, an endpoint keeps each event it wants in its log as failed, "not sent: the endpoint was switched off";
 * switching it on offers to send those (and what failed before it went off) at once, checked by default: someone who
 * switches an endpoint back on wants what it missed (docs/decisions/webhook-switch-on.md).
 */
import type { Context, Hono } from "hono";
import { EVENT_TYPES, type EventType } from "../db/schema.ts";
import { notFound } from "../errors.ts";
import {
  DELIVERIES_PAGE,
  createEndpoint,
  deleteEndpoint,
  type EndpointScope,
  ENDPOINTS_PER_ACCOUNT,
  findEndpoint,
  listDeliveries,
  listEndpoints,
  resendFailedSince,
  resendOneDelivery,
  rotateSecret,
  testEndpoint,
  updateEndpoint,
} from "../services/webhooks.ts";
import { Layout } from "./components/index.ts";
import { t } from "./i18n/index.ts";
import { BASE, requireSession, type SignedInEnv, type WebEnv } from "./session.ts";
import { registerWebhookPages } from "./webhooks/routes.tsx";
import type { WebhookArea, WebhookBackend } from "./webhooks/types.ts";

/** What a user's endpoint may ask for: user.disabled goes to the site-wide endpoints only. */
const USER_EVENTS = EVENT_TYPES.filter((e) => e !== "user.disabled") as EventType[];

/** The service layer in a scope: the user center's backend (the account's own endpoints). */
function serviceBackend(scope: (c: Context<SignedInEnv>) => EndpointScope): WebhookBackend {
  return {
    list: (c) => listEndpoints(c.get("deps").db, scope(c)),
    create: (c, input) => createEndpoint(c.get("deps"), scope(c), input),
    find: (c, id) => findEndpoint(c.get("deps").db, scope(c), id),
    update: (c, id, change) => updateEndpoint(c.get("deps"), scope(c), id, change),
    rotate: (c, id) => rotateSecret(c.get("deps"), scope(c), id),
    test: async (c, id) => {
      await testEndpoint(c.get("deps"), scope(c), id);
    },
    deliveries: async (c, id, before) => {
      const { db } = c.get("deps");
      await findEndpoint(db, scope(c), id);
      const deliveries = await listDeliveries(db, id, before);
      const last = deliveries.at(-1);
      const older = deliveries.length === DELIVERIES_PAGE && last && (await listDeliveries(db, id, last.id, 1)).length > 0 ? last.id : null;
      return { deliveries, older };
    },
    resend: async (c, id, deliveryId) => {
      if ((await resendOneDelivery(c.get("deps"), scope(c), id, deliveryId)) !== "queued") throw notFound(t("webhooks.error.noDelivery"));
    },
    resendFailed: (c, id, since) => resendFailedSince(c.get("deps"), scope(c), id, since),
    remove: (c, id) => deleteEndpoint(c.get("deps").db, scope(c), id),
  };
}

/** The user center's page: the account's own endpoints. */
const userArea: WebhookArea = {
  base: `${BASE}/webhooks`,
  backend: serviceBackend((c) => ({ ownerId: c.get("signedIn").user.id })),
  events: USER_EVENTS,
  max: ENDPOINTS_PER_ACCOUNT,
  scope: "user",
  gate: requireSession,
  frame: ({ title, signedIn, children }) => (
    <Layout title={title} signedIn={signedIn} active="webhooks">
      {children}
    </Layout>
  ),
};

export function register(web: Hono<WebEnv>) {
  registerWebhookPages(web, userArea);
}
