/**
 * Webhook endpoints, as their owners manage them — a user for their own (the user center), an
 * administrator for the site-wide ones (admin API, CLI, admin pages). The same rules everywhere:
 * - the URL is http(s), without credentials, and its destination passes the address guard now (and again at every
 *   delivery, after DNS: webhooks/address-guard.ts);
 * - at most ENDPOINTS_PER_ACCOUNT per account and SITE_ENDPOINTS_MAX site-wide, held under concurrency (the count
 *   runs under a lock of the owner's row, or of the site's advisory lock);
 * - the secret is shown once, when made or rotated, and stored sealed (webhooks/secret-box.ts).
 */
import { and, desc, eq, isNull, lt, sql } from "drizzle-orm";
import type { Deps } from "../deps.ts";
import type { Executor } from "../db/client.ts";
import { EVENT_TYPES, type EventType, groups, users, webhookDeliveries, webhookEndpoints } from "../db/schema.ts";
import { AppError, notFound, validationError } from "../errors.ts";
import { type AllowList, checkDestination, checkUrlSyntax, NOT_PUBLIC, PUBLIC_ONLY } from "../webhooks/address-guard.ts";
import { resendDelivery, resendFailed, sendTestEvent } from "../webhooks/outbox.ts";
import { newSigningSecret } from "../webhooks/secret-box.ts";
import { webhookSettings } from "../webhooks/settings.ts";
import { logFor } from "../observability/log.ts";

export const ENDPOINTS_PER_ACCOUNT = 10;
export const SITE_ENDPOINTS_MAX = 20;
export const DESCRIPTION_MAX = 200;
/** Deliveries a log page shows at most. */
export const DELIVERIES_PAGE = 50;
/** Delivered or failed deliveries are kept this long (the sweeper prunes them). */
export const DELIVERY_RETENTION_DAYS = 30;
const SITE_LOCK = 7_340_019;

/** Whose endpoints: one account's, or the site-wide ones. */
export type EndpointScope = { ownerId: number } | { site: true };

export type Endpoint = typeof webhookEndpoints.$inferSelect;
export type Delivery = typeof webhookDeliveries.$inferSelect;

const scopeCondition = (scope: EndpointScope) => ("site" in scope ? isNull(webhookEndpoints.ownerId) : eq(webhookEndpoints.ownerId, scope.ownerId));

export interface EndpointInput {
  url: string;
  description?: string;
  events: string[];
}

/** The refusal of an address that is not public, on the form and in the API: it never names what a host resolved to. */
const NOT_PUBLIC_REFUSAL = `${NOT_PUBLIC.charAt(0).toUpperCase()}${NOT_PUBLIC.slice(1)}.`.replace(/^The address/, "This address");

/**
 * The hosts beyond the public addresses an endpoint of this scope may reach: WEBHOOK_ALLOW's for the site-wide
 * endpoints, and for a user's own only where the user's group has webhook_allow_internal (an administrator's grant;
 * docs/decisions/webhook-owner-scope.md). Checked again at every delivery (deliver.ts reads the grant with the delivery).
 */
export async function allowListFor(deps: Pick<Deps, "config" | "db">, scope: EndpointScope): Promise<AllowList> {
  const { allow } = webhookSettings(deps);
  if ("site" in scope) return allow;
  const [row] = await deps.db
    .select({ granted: groups.webhookAllowInternal })
    .from(users)
    .innerJoin(groups, eq(groups.id, users.groupId))
    .where(eq(users.id, scope.ownerId));
  return row?.granted ? allow : PUBLIC_ONLY;
}

async function checkInput(deps: Pick<Deps, "config" | "log" | "db">, scope: EndpointScope, input: Partial<EndpointInput>) {
  if (input.url !== undefined) {
    const syntax = checkUrlSyntax(input.url);
    if (syntax) throw validationError({ url: [`${syntax.charAt(0).toUpperCase()}${syntax.slice(1)}`.replace(/\.?$/, ".")] });
    const settings = webhookSettings(deps);
    const allow = await allowListFor(deps, scope);
    const late = "its host name did not resolve within 5 s";
    let timer: ReturnType<typeof setTimeout> | undefined;
    const destination = await Promise.race([
      checkDestination(new URL(input.url), allow, settings.resolve),
      new Promise<{ ok: false; reason: string; shown: string }>((done) => (timer = setTimeout(() => done({ ok: false, reason: late, shown: late }), 5_000))),
    ]).finally(() => clearTimeout(timer));
    if (!destination.ok) {
      // the operator's log names the addresses; the owner is told the class only
      logFor(deps).warn({ reason: destination.reason, site: "site" in scope }, `webhook endpoint refused: ${destination.reason}`);
      throw validationError({ url: [destination.shown === NOT_PUBLIC ? NOT_PUBLIC_REFUSAL : `The url cannot be used: ${destination.shown}.`] });
    }
  }
  if (input.events !== undefined) {
    const unknown = input.events.filter((e) => !(EVENT_TYPES as readonly string[]).includes(e));
    if (input.events.length === 0) throw validationError({ events: ["Choose at least one event."] });
    if (unknown.length > 0) throw validationError({ events: [`Unknown events: ${unknown.join(", ")}. Events: ${EVENT_TYPES.join(", ")}.`] });
  }
  if (input.description !== undefined && input.description.length > DESCRIPTION_MAX) {
    throw validationError({ description: [`The description may be at most ${DESCRIPTION_MAX} characters.`] });
  }
}

const uniqueEvents = (events: string[]) => EVENT_TYPES.filter((e) => events.includes(e)) as EventType[];

/** Makes an endpoint; the answer carries its secret, shown this once. */
export async function createEndpoint(deps: Deps, scope: EndpointScope, input: EndpointInput): Promise<{ endpoint: Endpoint; secret: string }> {
  await checkInput(deps, scope, input);
  const secret = newSigningSecret();
  const sealed = webhookSettings(deps).box.seal(secret);
  const endpoint = await deps.db.transaction(async (tx) => {
    if ("site" in scope) await tx.execute(sql`select pg_advisory_xact_lock(${SITE_LOCK})`);
    else {
      const [owner] = await tx.select({ id: users.id }).from(users).where(eq(users.id, scope.ownerId)).for("update");
      if (!owner) throw notFound("User not found.");
    }
    const max = "site" in scope ? SITE_ENDPOINTS_MAX : ENDPOINTS_PER_ACCOUNT;
    const [{ n }] = (await tx.select({ n: sql<number>`count(*)::int` }).from(webhookEndpoints).where(scopeCondition(scope))) as [{ n: number }];
    if (n >= max) {
      throw new AppError("bad_request", `${"site" in scope ? "The site" : "An account"} may have at most ${max} webhook endpoints; delete one first.`);
    }
    const [row] = await tx
      .insert(webhookEndpoints)
      .values({
        ownerId: "site" in scope ? null : scope.ownerId,
        url: input.url,
        description: input.description ?? "",
        events: uniqueEvents(input.events),
        secretSealed: sealed,
      })
      .returning();
    return row!;
  });
  return { endpoint: endpoint, secret };
}

export const listEndpoints = (db: Executor, scope: EndpointScope) =>
  db.select().from(webhookEndpoints).where(scopeCondition(scope)).orderBy(webhookEndpoints.id);

export async function findEndpoint(db: Executor, scope: EndpointScope, id: number): Promise<Endpoint> {
  const [row] = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), scopeCondition(scope)));
  if (!row) throw notFound("Webhook endpoint not found.");
  return row;
}

/** Changes the URL, description, events, or switches it on or off (on again: its failure streak starts over). */
export async function updateEndpoint(deps: Deps, scope: EndpointScope, id: number, change: Partial<EndpointInput> & { enabled?: boolean }): Promise<Endpoint> {
  await checkInput(deps, scope, change);
  const set: Partial<typeof webhookEndpoints.$inferInsert> = {};
  if (change.url !== undefined) set.url = change.url;
  if (change.description !== undefined) set.description = change.description;
  if (change.events !== undefined) set.events = uniqueEvents(change.events);
  if (change.enabled === true) Object.assign(set, { enabled: true, disabledReason: null, disabledAt: null, failingSince: null });
  if (change.enabled === false) Object.assign(set, { enabled: false, disabledReason: "switched off by its owner", disabledAt: deps.clock() });
  if (Object.keys(set).length === 0) return findEndpoint(deps.db, scope, id);
  const [row] = await deps.db
    .update(webhookEndpoints)
    .set(set)
    .where(and(eq(webhookEndpoints.id, id), scopeCondition(scope), ...(change.enabled === false ? [eq(webhookEndpoints.enabled, true)] : [])))
    .returning();
  return row ?? findEndpoint(deps.db, scope, id);
}

/** A new secret, shown this once; the old one stops signing at once. */
export async function rotateSecret(deps: Deps, scope: EndpointScope, id: number): Promise<{ endpoint: Endpoint; secret: string }> {
  const secret = newSigningSecret();
  const [row] = await deps.db
    .update(webhookEndpoints)
    .set({ secretSealed: webhookSettings(deps).box.seal(secret) })
    .where(and(eq(webhookEndpoints.id, id), scopeCondition(scope)))
    .returning();
  if (!row) throw notFound("Webhook endpoint not found.");
  return { endpoint: row, secret };
}

/** Deletes the endpoint and its delivery log; deliveries under way are not sent. */
export async function deleteEndpoint(db: Executor, scope: EndpointScope, id: number): Promise<void> {
  const gone = await db
    .delete(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), scopeCondition(scope)))
    .returning({ id: webhookEndpoints.id });
  if (gone.length === 0) throw notFound("Webhook endpoint not found.");
}

/** The endpoint's delivery log, newest first, DELIVERIES_PAGE at a time (`before`: the last id of the previous page). */
export async function listDeliveries(db: Executor, endpointId: number, before?: number, limit = DELIVERIES_PAGE): Promise<Delivery[]> {
  return db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.endpointId, endpointId), before ? lt(webhookDeliveries.id, before) : undefined))
    .orderBy(desc(webhookDeliveries.id))
    .limit(Math.min(limit, DELIVERIES_PAGE));
}

/** The most failed deliveries one "send again since" queues; the action says how many it queued, and can be repeated. */
export const RESEND_MAX = 5_000;

/**
 * Sends again the endpoint's failed deliveries of events since `since` (those not sent while it was switched off
 * among them), oldest first, at most RESEND_MAX: each becomes pending and is attempted at once, in order per subject.
 * An endpoint that is switched off is refused (its deliveries would fail again at once).
 */
export async function resendFailedSince(deps: Pick<Deps, "db">, scope: EndpointScope, id: number, since: Date): Promise<number> {
  const endpoint = await findEndpoint(deps.db, scope, id);
  if (!endpoint.enabled) throw new AppError("bad_request", "The endpoint is switched off: switch it on first, then send its failed deliveries.");
  return resendFailed(deps.db, endpoint.id, since, RESEND_MAX);
}

/** Sends a `webhook.test` event to one endpoint of the scope: the new delivery's id (404 when there is no such endpoint). */
export async function testEndpoint(deps: Pick<Deps, "db" | "clock">, scope: EndpointScope, id: number): Promise<number> {
  const endpoint = await findEndpoint(deps.db, scope, id);
  const deliveryId = await sendTestEvent(deps.db, endpoint.id, deps.clock());
  if (deliveryId === null) throw notFound("Webhook endpoint not found.");
  return deliveryId;
}

/**
 * Sends one delivered or failed delivery of an endpoint of the scope again, at once: "missing" when the endpoint has
 * no such delivery, "pending" when it is still pending (it is attempted by itself).
 */
export async function resendOneDelivery(
  deps: Pick<Deps, "db">,
  scope: EndpointScope,
  id: number,
  deliveryId: number,
): Promise<"queued" | "missing" | "pending"> {
  const endpoint = await findEndpoint(deps.db, scope, id);
  const [delivery] = await deps.db
    .select({ status: webhookDeliveries.status })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.endpointId, endpoint.id)));
  if (!delivery) return "missing";
  if (delivery.status === "pending") return "pending";
  // made pending by another request just now: pending too
  return (await resendDelivery(deps.db, endpoint.id, deliveryId)) ? "queued" : "pending";
}

/** Removes deliveries delivered or failed more than DELIVERY_RETENTION_DAYS ago (the sweeper's round). */
export async function pruneDeliveries(db: Executor, now: Date): Promise<number> {
  const cutoff = new Date(now.getTime() - DELIVERY_RETENTION_DAYS * 86_400_000);
  const gone = await db.execute(sql`delete from webhook_deliveries where status <> 'pending' and created_at < ${cutoff.toISOString()}::timestamptz`);
  return (gone as unknown as { count?: number }).count ?? 0;
}

/** What an endpoint's owner sees of it: never its secret. */
export function endpointResource(e: Endpoint) {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events,
    enabled: e.enabled,
    disabled_reason: e.disabledReason,
    disabled_at: e.disabledAt?.toISOString() ?? null,
    failing_since: e.failingSince?.toISOString() ?? null,
    owner_id: e.ownerId,
    created_at: e.createdAt.toISOString(),
  };
}

export function deliveryResource(d: Delivery) {
  return {
    id: d.id,
    message_id: d.messageId,
    event_type: d.eventType,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.lastStatusCode,
    last_latency_ms: d.lastLatencyMs,
    last_error: d.lastError,
    last_attempt_at: d.lastAttemptAt?.toISOString() ?? null,
    next_attempt_at: d.nextAttemptAt?.toISOString() ?? null,
    delivered_at: d.deliveredAt?.toISOString() ?? null,
    created_at: d.createdAt.toISOString(),
  };
}
