/**
 * The site-wide webhook endpoints, /user/admin/webhooks, for administrators: the same pages as the user
 * center's (../webhooks/), with every event (user.disabled too) and the admin frame.
 *
 * Like every admin page, it changes nothing itself: every read and every change is a call of the admin API
 * (routes/admin/webhooks/) in-process through adminApi (api.ts), so the API's validation and messages apply and its
 * audit log records each change as the API action (`POST /api/admin/webhooks/{id}/secret`, …) with the administrator as
 * the actor and the fields sent (never a secret). The API's answers are turned back into what the shared pages show:
 * its dates (`YYYY-MM-DD HH:MM:SS`, the server's time zone) into Dates, its refusals into AppErrors (404; 422 with the
 * field errors; 400 for the whole form).
 */
import type { Context, Hono } from "hono";
import { EVENT_TYPES, type EventType } from "../../db/schema.ts";
import { AppError, notFound } from "../../errors.ts";
import { parseDateTime } from "../../http/time.ts";
import { SITE_ENDPOINTS_MAX } from "../../services/webhooks.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { registerWebhookPages } from "../webhooks/routes.tsx";
import type { DeliveryView, EndpointView, WebhookArea, WebhookBackend } from "../webhooks/types.ts";
import { type ApiAnswer, adminApi } from "./api.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";

const API = "/api/admin/webhooks";

/** The admin API's WebhookEndpoint, WebhookDelivery. */
interface ApiEndpoint {
  id: number;
  url: string;
  description: string;
  events: EventType[];
  enabled: boolean;
  disabled_reason: string | null;
  disabled_at: string | null;
  failing_since: string | null;
  created_at: string;
}
interface ApiDelivery {
  id: number;
  event_type: string;
  status: DeliveryView["status"];
  attempts: number;
  last_status_code: number | null;
  last_latency_ms: number | null;
  last_error: string | null;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  created_at: string;
}

/** The API's refusal, as the shared pages expect it thrown. */
function refused(answer: ApiAnswer): never {
  if (answer.status === 404) throw notFound(answer.message);
  if (answer.status === 422) throw new AppError("validation", answer.message, answer.errors);
  if (answer.status === 400) throw new AppError("bad_request", answer.message, answer.errors);
  throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
}

async function call<T = unknown>(c: Context<SignedInEnv>, method: string, path: string, body?: unknown): Promise<T> {
  const answer = await adminApi<T>(c, method, path, body);
  if (!answer.ok) refused(answer);
  return answer.data;
}

function dateOf(value: string): Date {
  const date = parseDateTime(value);
  if (!date) throw new Error(`the admin API answered a date that does not read: ${value}`);
  return date;
}
const dateOrNull = (value: string | null) => (value === null ? null : dateOf(value));

const endpointOf = (e: ApiEndpoint): EndpointView => ({
  id: e.id,
  url: e.url,
  description: e.description,
  events: e.events,
  enabled: e.enabled,
  disabledReason: e.disabled_reason,
  disabledAt: dateOrNull(e.disabled_at),
  failingSince: dateOrNull(e.failing_since),
  createdAt: dateOf(e.created_at),
});

const deliveryOf = (d: ApiDelivery): DeliveryView => ({
  id: d.id,
  eventType: d.event_type,
  status: d.status,
  attempts: d.attempts,
  lastStatusCode: d.last_status_code,
  lastLatencyMs: d.last_latency_ms,
  lastError: d.last_error,
  lastAttemptAt: dateOrNull(d.last_attempt_at),
  nextAttemptAt: dateOrNull(d.next_attempt_at),
  createdAt: dateOf(d.created_at),
});

type DeliveryPage = { deliveries: ApiDelivery[]; next_before: number | null };

/** The admin API's webhook operations, for the shared pages. */
const apiBackend: WebhookBackend = {
  list: async (c) => (await call<{ endpoints: ApiEndpoint[] }>(c, "GET", API)).endpoints.map(endpointOf),
  create: async (c, input) => {
    const made = await call<ApiEndpoint & { secret: string }>(c, "POST", API, input);
    return { endpoint: endpointOf(made), secret: made.secret };
  },
  find: async (c, id) => endpointOf(await call<ApiEndpoint>(c, "GET", `${API}/${id}`)),
  update: async (c, id, change) => endpointOf(await call<ApiEndpoint>(c, "PATCH", `${API}/${id}`, change)),
  rotate: async (c, id) => {
    const rotated = await call<ApiEndpoint & { secret: string }>(c, "POST", `${API}/${id}/secret`);
    return { endpoint: endpointOf(rotated), secret: rotated.secret };
  },
  test: async (c, id) => {
    await call(c, "POST", `${API}/${id}/test`);
  },
  deliveries: async (c, id, before) => {
    const page = await call<DeliveryPage>(c, "GET", `${API}/${id}/deliveries${before === undefined ? "" : `?before=${before}`}`);
    // next_before names the last of a full page: the page offers "Older" only when there is an older delivery
    let older = page.next_before;
    if (older !== null && (await call<DeliveryPage>(c, "GET", `${API}/${id}/deliveries?before=${older}`)).deliveries.length === 0) older = null;
    return { deliveries: page.deliveries.map(deliveryOf), older };
  },
  resend: async (c, id, deliveryId) => {
    await call(c, "POST", `${API}/${id}/deliveries/${deliveryId}/resend`);
  },
  resendFailed: async (c, id, since) => (await call<{ queued: number }>(c, "POST", `${API}/${id}/resend-failed`, { since: since.toISOString() })).queued,
  remove: async (c, id) => {
    await call(c, "DELETE", `${API}/${id}`);
  },
};

const adminArea: WebhookArea = {
  base: `${ADMIN}/webhooks`,
  backend: apiBackend,
  events: [...EVENT_TYPES],
  max: SITE_ENDPOINTS_MAX,
  scope: "site",
  gate: requireAdminSession,
  frame: ({ title, signedIn, children }) => (
    <AdminLayout title={title} signedIn={signedIn} section="webhooks">
      {children}
    </AdminLayout>
  ),
};

export function register(web: Hono<WebEnv>) {
  registerWebhookPages(web, adminArea);
}
