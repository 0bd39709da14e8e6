/**
 * Issue 19: from events to deliveries, and the attempts. Both run as graphile-worker tasks (webhooks/queue.ts), on
 * every instance at once: the queue hands each job to one worker, and a job whose worker died is taken again.
 *
 * - The deliveries and their `webhook_deliver` jobs are made with the event, in the change's transaction
 *   (webhook_enqueue, drizzle/0012). `webhook_event` (fanOut) is what an earlier version queued per event, making
 *   the deliveries later; it still runs for such jobs left in a queue (the (endpoint, message id) key makes a
 *   repeated run add nothing).
 * - `webhook_deliver` (attempt): one attempt of one delivery, recorded with the next job (a retry, or the wake-up of
 *   the subject's next delivery) in one transaction. A job that runs twice (its worker died after the POST, before
 *   the record) sends twice: delivery is at least once, and the receiver deduplicates by `webhook-id`.
 *
 * Order: a delivery is not sent while an earlier event of the same subject (an image, a token, a user) is still
 * pending for the same endpoint; it waits for that one's outcome. Subjects are independent of each other.
 *
 * Fairness: a send never holds a queue worker, nor does a delivery waiting for a slot (Sends below;
 * docs/decisions/webhook-fairness.md). A retry's delay runs from the failed attempt's end.
 */
import { sql } from "drizzle-orm";
import type { Deps } from "../deps.ts";
import type { Executor } from "../db/client.ts";
import { logFor } from "../observability/log.ts";
import { sendWebhook, type SendResult } from "./send.ts";
import { PUBLIC_ONLY } from "./address-guard.ts";
import { DISABLE_AFTER_MS, RETRY_DELAYS_MS, webhookSettings } from "./settings.ts";
import { signatureHeaders } from "./sign.ts";

export const DELIVER_JOB = "webhook_deliver";

export interface EventJob {
  id: string;
  seq: number | string;
  type: string;
  timestamp: string;
  owner_id: number | null;
  subject: string;
  data: Record<string, unknown>;
}

export const rowsOf = <T>(result: unknown): T[] => (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[];

/** The body every endpoint receives for an event: Standard Webhooks' `{type, timestamp, data}`. */
export const eventBody = (event: Pick<EventJob, "type" | "timestamp" | "data">) =>
  JSON.stringify({ type: event.type, timestamp: event.timestamp, data: event.data });

/** The statement adding the job that makes delivery `id` (a SQL expression) be attempted at `runAt` (null: now). */
const deliverJob = (id: ReturnType<typeof sql>, runAt: Date | null = null) =>
  sql`graphile_worker.add_job(${DELIVER_JOB}::text, json_build_object('id', ${id}), run_at => ${runAt ? runAt.toISOString() : null}::timestamptz,
      job_key => 'webhook-delivery:' || (${id})::text, max_attempts => 10)`;

/** The `webhook_event` task (jobs queued by an earlier version; events now make their deliveries themselves). */
export async function fanOut(deps: Pick<Deps, "db">, event: EventJob): Promise<number> {
  const body = eventBody(event);
  const result = await deps.db.execute(sql`
    with made as (
      insert into webhook_deliveries (endpoint_id, message_id, seq, event_type, subject, body, next_attempt_at)
      select e.id, ${event.id}, ${String(event.seq)}::bigint, ${event.type}, ${event.subject}, ${body}, now()
      from webhook_endpoints e
      where e.enabled and (e.owner_id is null or e.owner_id = ${event.owner_id}::integer) and ${event.type}::text = any(e.events)
      on conflict (endpoint_id, message_id) do nothing
      returning id
    )
    select (${deliverJob(sql`made.id`)}).id from made`);
  return rowsOf(result).length;
}

interface Attempted {
  id: number;
  endpoint_id: number;
  owner_id: number | null;
  /** The owner's group has webhook_allow_internal: WEBHOOK_ALLOW applies to this user endpoint too. */
  allow_internal: boolean;
  message_id: string;
  seq: string;
  subject: string;
  body: string;
  status: string;
  attempts: number;
  url: string;
  secret_sealed: string;
  enabled: boolean;
  failing_since: Date | string | null;
}

/** Sends in flight from this instance at most, to one account's endpoints together (each endpoint: perEndpoint). */
export const PER_ACCOUNT = 8;
/** Sends in flight from this instance at most, to all users' endpoints together; site-wide ones are not counted. */
export const USERS_IN_FLIGHT = 256;
/** Deliveries waiting here for a slot, at most: per endpoint, and in all (beyond, a job is put back in the queue). */
const QUEUED_PER_ENDPOINT = 512;
const QUEUED_MAX = 4_096;
/** A delivery that waited here longer than this is read again before it is sent (its endpoint may have changed). */
const FRESH_MS = 5_000;
/** A lease outlives the attempt's deadline by this much; the instance holding it renews it (sweepLeases). */
const LEASE_GRACE_MS = 15_000;

type Limits = { perEndpoint: number; perAccount: number; users: number };
interface Queued {
  row: Attempted;
  since: number;
}

/**
 * This instance's sends (docs/decisions/webhook-fairness.md). A send does not hold a queue worker: the worker admits
 * it, starts it and is free again, so a hanging receiver holds only its own slots. Admission is bounded per endpoint,
 * per account, and for all users' endpoints together; site-wide endpoints are bounded per endpoint only, so no
 * user's endpoint can delay them. A delivery that is not admitted does not hold a worker either: it waits here, in its
 * endpoint's line (its job ended, its lease renewed by this instance), and a freed slot starts the first one it admits.
 */
class Sends {
  readonly endpoints = new Map<number, number>();
  readonly accounts = new Map<number, number>();
  users = 0;
  /** Deliveries being sent, so that one queued again meanwhile is not sent twice at once from here. */
  readonly deliveries = new Set<number>();
  /** Deliveries waiting for a slot, per endpoint in arrival order. */
  readonly lines = new Map<number, Queued[]>();
  readonly waiting = new Set<number>();
  readonly running = new Set<Promise<unknown>>();
  stopping = false;

  admits(endpointId: number, ownerId: number | null, limits: Limits): boolean {
    if ((this.endpoints.get(endpointId) ?? 0) >= limits.perEndpoint) return false;
    if (ownerId === null) return true;
    return (this.accounts.get(ownerId) ?? 0) < limits.perAccount && this.users < limits.users;
  }

  /** Lines a delivery up here; false when the lines are full (its job is then put back in the queue instead). */
  enqueue(row: Attempted): boolean {
    const line = this.lines.get(row.endpoint_id) ?? [];
    if (this.stopping || this.waiting.size >= QUEUED_MAX || line.length >= QUEUED_PER_ENDPOINT) return false;
    line.push({ row, since: performance.now() });
    this.lines.set(row.endpoint_id, line);
    this.waiting.add(row.id);
    return true;
  }

  take(deliveryId: number, endpointId: number, ownerId: number | null) {
    this.deliveries.add(deliveryId);
    this.endpoints.set(endpointId, (this.endpoints.get(endpointId) ?? 0) + 1);
    if (ownerId !== null) {
      this.accounts.set(ownerId, (this.accounts.get(ownerId) ?? 0) + 1);
      this.users++;
    }
  }

  release(deliveryId: number, endpointId: number, ownerId: number | null) {
    this.deliveries.delete(deliveryId);
    const n = (this.endpoints.get(endpointId) ?? 1) - 1;
    if (n > 0) this.endpoints.set(endpointId, n);
    else this.endpoints.delete(endpointId);
    if (ownerId !== null) {
      const a = (this.accounts.get(ownerId) ?? 1) - 1;
      if (a > 0) this.accounts.set(ownerId, a);
      else this.accounts.delete(ownerId);
      this.users--;
    }
  }

  /** The next waiting delivery the slots admit: the freed endpoint's first, else the first of another endpoint's line. */
  next(endpointId: number, limits: Limits): Queued | null {
    if (this.stopping) return null;
    const from = (id: number) => {
      const line = this.lines.get(id);
      const head = line?.[0];
      if (!line || !head || !this.admits(id, head.row.owner_id, limits)) return null;
      line.shift();
      if (line.length === 0) this.lines.delete(id);
      this.waiting.delete(head.row.id);
      return head;
    };
    const own = from(endpointId);
    if (own) return own;
    for (const id of this.lines.keys()) {
      const other = id === endpointId ? null : from(id);
      if (other) return other;
    }
    return null;
  }
}

const sends = new Sends();

/**
 * Stops starting sends, waits for those in flight to end and be recorded (the queue's stop; each is bounded by its
 * timeout), and forgets the deliveries waiting here: their leases bring them back.
 */
export async function drainSends(): Promise<void> {
  sends.stopping = true;
  try {
    while (sends.running.size > 0) await Promise.allSettled([...sends.running]);
  } finally {
    sends.lines.clear();
    sends.waiting.clear();
    sends.stopping = false;
  }
}

/** Sends in flight from this instance (metrics, tests). */
export const sendsInFlight = () => sends.deliveries.size;

/**
 * The leases' round (every instance, every few seconds): the deliveries this instance sends or holds for a slot keep
 * their lease ahead of now, and a pending delivery whose lease has passed (its instance died mid-send) is queued
 * again, at once.
 */
export async function sweepLeases(deps: Pick<Deps, "db" | "config">): Promise<number> {
  const leaseMs = (webhookSettings(deps).timeoutMs ?? 10_000) + LEASE_GRACE_MS;
  const held = [...sends.deliveries, ...sends.waiting];
  if (held.length > 0) {
    await deps.db.execute(sql`update webhook_deliveries set lease_until = now() + ${`${leaseMs} milliseconds`}::interval
      where id = any(${`{${held.join(",")}}`}::bigint[]) and status = 'pending'`);
  }
  return rowsOf(
    await deps.db.execute(sql`
      with expired as (
        update webhook_deliveries set lease_until = null
        where id in (select id from webhook_deliveries where status = 'pending' and lease_until < now() order by id limit 1000 for update skip locked)
        returning id
      )
      select (${deliverJob(sql`expired.id`)}).id from expired`),
  ).length;
}

export type AttemptOutcome = "delivered" | "retry" | "failed" | "waiting" | "skipped" | "sending";

/** The statement that puts delivery `id`'s job back, due in `ms` from the database's now. */
const jobIn = (id: number, ms: number) =>
  sql`select (graphile_worker.add_job(${DELIVER_JOB}::text, json_build_object('id', ${id}::bigint), run_at => now() + ${`${Math.max(0, Math.round(ms))} milliseconds`}::interval,
      job_key => 'webhook-delivery:' || ${id}::text, max_attempts => 10)).id`;

const limitsOf = (settings: ReturnType<typeof webhookSettings>): Limits => ({
  perEndpoint: settings.perEndpoint ?? 4,
  perAccount: settings.perAccount ?? PER_ACCOUNT,
  users: settings.usersInFlight ?? USERS_IN_FLIGHT,
});

/** Starts a send in its slot (taken here); when it ends, the slot goes to the next delivery waiting that it admits. */
function start(deps: Deps, row: Attempted): Promise<AttemptOutcome> {
  const settings = webhookSettings(deps);
  sends.take(row.id, row.endpoint_id, row.owner_id);
  const sending = (async () => {
    try {
      return await send(deps, row, settings, settings.timeoutMs ?? 10_000);
    } finally {
      sends.release(row.id, row.endpoint_id, row.owner_id);
      const next = sends.next(row.endpoint_id, limitsOf(settings));
      if (next) {
        // one that waited long is read again (its endpoint may have been switched off, its secret rotated)
        if (performance.now() - next.since < FRESH_MS) void start(deps, next.row);
        else void attempt(deps, next.row.id, { detach: true }).catch((e) => logFor(deps).error({ err: e, delivery_id: next.row.id }, "webhooks: a waiting delivery could not be read"));
      }
    }
  })();
  const tracked = sending.catch((e) => {
    // its lease, no longer renewed, has it queued again
    logFor(deps).error({ err: e, delivery_id: row.id }, `webhook delivery ${row.id}: the attempt could not be completed`);
  });
  sends.running.add(tracked);
  void tracked.finally(() => sends.running.delete(tracked));
  return sending;
}

/**
 * The `webhook_deliver` task: one attempt of delivery `id`. With `detach` (the queue's workers), the send goes on
 * after the task has returned ("sending"), and the delivery holds a lease (`lease_until`, a row update in the read):
 * this instance renews it while it sends or holds the delivery, and once it has passed (the instance died
 * mid-send) any instance queues the delivery again (sweepLeases); the attempt's record clears it.
 * Without (tests, tools), the attempt's outcome is awaited.
 */
export async function attempt(deps: Deps, id: number, options: { detach?: boolean } = {}): Promise<AttemptOutcome> {
  const settings = webhookSettings(deps);
  const timeoutMs = settings.timeoutMs ?? 10_000;
  const limits = limitsOf(settings);
  const leaseMs = timeoutMs + LEASE_GRACE_MS;
  const here = () => sends.deliveries.has(id) || sends.waiting.has(id);
  if (here()) {
    // being sent, or waiting for a slot, here (queued again once its lease had passed): the lease is renewed
    await deps.db.execute(sql`update webhook_deliveries set lease_until = now() + ${`${leaseMs} milliseconds`}::interval where id = ${id} and status = 'pending'`);
    return "waiting";
  }
  // the delivery, its endpoint and owner's grant, and when an earlier event of the same subject still pending there
  // is due: one read, which also takes the lease of a delivery about to be sent (or to wait here for a slot)
  const [row] = rowsOf<Attempted & { earlier: boolean; earlier_at: Date | string | null }>(
    await deps.db.execute(sql`
      with target as (
        select d.id, d.endpoint_id, e.owner_id, coalesce(g.webhook_allow_internal, false) as allow_internal, d.message_id, d.seq::text as seq,
               d.subject, d.body, d.status, d.attempts, e.url, e.secret_sealed, e.enabled, e.failing_since,
               earlier.id is not null as earlier, earlier.next_attempt_at as earlier_at
        from webhook_deliveries d
        join webhook_endpoints e on e.id = d.endpoint_id
        left join users u on u.id = e.owner_id
        left join groups g on g.id = u.group_id
        left join lateral (
          select p.id, p.next_attempt_at from webhook_deliveries p
          where p.endpoint_id = d.endpoint_id and p.subject = d.subject and p.status = 'pending' and p.seq < d.seq
          order by p.seq limit 1
        ) earlier on true
        where d.id = ${id}
      ), lease as (
        update webhook_deliveries set lease_until = now() + ${`${leaseMs} milliseconds`}::interval
        where id = (select d.id from target d where ${options.detach === true}::boolean and d.status = 'pending' and d.enabled and not d.earlier)
        returning id
      )
      select target.*, (select count(*) from lease)::int as leased from target`),
  );
  if (!row || row.status !== "pending") return "skipped";
  if (!row.enabled) {
    await deps.db.execute(sql`update webhook_deliveries set status = 'failed', next_attempt_at = null,
      last_error = 'not sent: the endpoint was switched off' where id = ${id} and status = 'pending'`);
    return "failed";
  }
  if (row.earlier) {
    // it waits for the earlier one's outcome (whose success or failure wakes it at once), at the latest till just after its next attempt
    const at = row.earlier_at ? new Date(row.earlier_at) : deps.clock();
    const runAt = new Date(Math.max(at.getTime(), deps.clock().getTime()) + 1_000);
    await deps.db.execute(sql`select (${deliverJob(sql`${id}::bigint`, runAt)}).id`);
    return "waiting";
  }
  // another run of the same delivery got here during the read (a wake-up met its running job): that one sends it
  if (here()) return "waiting";
  if (sends.admits(row.endpoint_id, row.owner_id, limits)) {
    const sending = start(deps, row);
    return options.detach ? "sending" : sending;
  }
  // no slot: it waits here, holding no worker (its lease renewed here), or, the lines full, its job goes back,
  // due when every send holding a slot has met its deadline
  if (options.detach && sends.enqueue(row)) return "waiting";
  await deps.db.execute(jobIn(id, timeoutMs + 1_000));
  return "waiting";
}

/** The attempt itself: the signed POST, then its record. */
async function send(deps: Deps, row: Attempted, settings: ReturnType<typeof webhookSettings>, timeoutMs: number): Promise<AttemptOutcome> {
  const at = deps.clock();
  let secret: string;
  try {
    secret = settings.box.open(row.secret_sealed);
  } catch (e) {
    throw new Error(`webhook endpoint ${row.endpoint_id}: ${(e as Error).message}`); // left for an instance that can open it
  }
  const result = await sendWebhook({
    url: row.url,
    headers: signatureHeaders(secret, row.message_id, at, row.body),
    body: row.body,
    // WEBHOOK_ALLOW opens internal hosts to site-wide endpoints, and to a user's only by the group's grant
    allow: row.owner_id === null || row.allow_internal ? settings.allow : PUBLIC_ONLY,
    resolve: settings.resolve,
    timeoutMs,
  });
  return record(deps, row, at, result);
}

/**
 * Records an attempt in one statement (atomic without a transaction's extra round trips): the delivery's outcome, the
 * endpoint's failure streak or its disabling, the retry's job, and the wake-up of the subject's next delivery.
 */
async function record(deps: Deps, row: Attempted, at: Date, result: SendResult): Promise<AttemptOutcome> {
  const settings = webhookSettings(deps);
  const log = logFor(deps);
  const attempts = row.attempts + 1;
  const code = result.kind === "answered" ? result.status : null;
  const ms = Math.round(result.ms);
  const ok = code !== null && code >= 200 && code < 300;
  // a user endpoint's log shows the status, the latency and the attempts, never what the receiver answered (a body,
  // a redirect's target) nor what a name resolved to: with WEBHOOK_ALLOW granted, or a name that points inside, the
  // log would read internal services back to the user. The site-wide log (the operator's) keeps the answer's first
  // 200 characters. docs/decisions/webhook-owner-scope.md
  const own = row.owner_id !== null;
  const error =
    result.kind === "answered"
      ? ok
        ? null
        : own
          ? `answered ${code}${result.location !== undefined ? " (a redirect, not followed)" : ""}`
          : `answered ${code}${result.location ? ` (redirect to ${result.location.slice(0, 200)}, not followed)` : ""}${result.body ? `: ${result.body.slice(0, 200)}` : ""}`
      : `${result.kind === "refused" ? "refused" : "failed"}: ${own ? (result.shown ?? result.reason) : result.reason}`;
  if (result.kind === "refused") log.warn({ endpoint_id: row.endpoint_id, delivery_id: row.id, reason: result.reason }, `webhook refused: ${result.reason}`);
  const delays = settings.retryDelaysMs ?? RETRY_DELAYS_MS;
  const failingSince = row.failing_since ? new Date(row.failing_since) : at;
  const failingFor = at.getTime() - failingSince.getTime();
  let outcome: AttemptOutcome;
  let disable: string | null = null;
  if (ok) outcome = "delivered";
  else if (code === 410) {
    outcome = "failed";
    disable = "answered 410 Gone";
  } else if (failingFor >= (settings.disableAfterMs ?? DISABLE_AFTER_MS)) {
    outcome = "failed";
    disable = `failing since ${failingSince.toISOString()}`;
  } else outcome = attempts > delays.length ? "failed" : "retry";
  // the delay runs from the failure, not from the attempt's start: a timeout does not eat into it
  const next = outcome === "retry" ? new Date(deps.clock().getTime() + delays[attempts - 1]!) : null;
  const atText = at.toISOString();
  const endpointChange = ok
    ? sql`update webhook_endpoints set failing_since = null where id = ${row.endpoint_id} and failing_since is not null returning id`
    : disable
      ? sql`update webhook_endpoints set enabled = false, disabled_reason = ${disable}, disabled_at = ${atText}::timestamptz,
          failing_since = coalesce(failing_since, ${atText}::timestamptz) where id = ${row.endpoint_id} returning id`
      : sql`update webhook_endpoints set failing_since = ${atText}::timestamptz where id = ${row.endpoint_id} and failing_since is null returning id`;
  // the subject's next delivery to this endpoint no longer waits once this one is settled
  const wake = outcome === "delivered" || outcome === "failed";
  // its commit does not wait for the disk (synchronous_commit off, this statement only): a database crash within the
  // WAL writer's delay can lose the record, and then the job's completion too (written after it, in the same WAL):
  // the attempt is made again — a duplicate, which at-least-once allows — never a delivery left without its job
  await deps.db.execute(sql`
    with lazy as (select set_config('synchronous_commit', 'off', true)),
    recorded as (
      update webhook_deliveries set
        status = ${outcome === "delivered" ? "delivered" : outcome === "failed" ? "failed" : "pending"},
        attempts = ${attempts}, last_attempt_at = ${atText}::timestamptz, last_status_code = ${code}::integer,
        last_latency_ms = ${ms}, last_error = ${error}, next_attempt_at = ${next ? next.toISOString() : null}::timestamptz,
        delivered_at = ${ok ? atText : null}::timestamptz, lease_until = null
      where id = ${row.id}
      returning id
    ), endpoint as (${endpointChange}),
    retry as (select (${deliverJob(sql`${row.id}::bigint`, next)}).id where ${next !== null}),
    woken as (
      select (${deliverJob(sql`n.id`)}).id from (
        select id from webhook_deliveries
        where endpoint_id = ${row.endpoint_id} and subject = ${row.subject} and status = 'pending' and seq > ${row.seq}::bigint and ${wake}
        order by seq limit 1
      ) n
    )
    select (select count(*) from lazy) as lazy, (select count(*) from recorded) as recorded, (select count(*) from retry) as retried,
      (select count(*) from woken) as woken`);
  if (disable) log.warn({ endpoint_id: row.endpoint_id, reason: disable }, `webhook endpoint ${row.endpoint_id} disabled: ${disable}`);
  else if (!ok) {
    log.info(
      { endpoint_id: row.endpoint_id, delivery_id: row.id, attempts, error, ...(result.kind !== "answered" ? { reason: result.reason } : {}) },
      `webhook delivery ${row.id} not delivered (${outcome})`,
    );
  }
  return outcome;
}

/** Sends a delivery again by hand (the delivery log's button): pending, attempted at once. False when there is none. */
export async function resendDelivery(db: Executor, endpointId: number, deliveryId: number): Promise<boolean> {
  const result = await db.execute(sql`
    with again as (
      update webhook_deliveries set status = 'pending', next_attempt_at = now()
      where id = ${deliveryId} and endpoint_id = ${endpointId} and status <> 'pending'
      returning id
    )
    select (${deliverJob(sql`again.id`)}).id from again`);
  return rowsOf(result).length > 0;
}

/**
 * Sends again the endpoint's failed deliveries of events since `since` (created then or later), oldest first, at most
 * `limit`: each becomes pending and gets its job, due at once (the subject's order is kept by attempt). Answers how
 * many.
 */
export async function resendFailed(db: Executor, endpointId: number, since: Date, limit: number): Promise<number> {
  const result = await db.execute(sql`
    with again as (
      update webhook_deliveries set status = 'pending', next_attempt_at = now()
      where id in (
        select id from webhook_deliveries
        where endpoint_id = ${endpointId} and status = 'failed' and created_at >= ${since.toISOString()}::timestamptz
        order by id limit ${limit}
        for update skip locked
      ) and status = 'failed'
      returning id
    )
    select (${deliverJob(sql`again.id`)}).id from again`);
  return rowsOf(result).length;
}

/** A `webhook.test` event for one endpoint only (its page's "Send a test event"). */
export async function sendTestEvent(db: Executor, endpointId: number, at: Date): Promise<number | null> {
  const id = `msg_${crypto.randomUUID().replace(/-/g, "")}`;
  const body = eventBody({ type: "webhook.test", timestamp: at.toISOString(), data: { endpoint_id: endpointId, message: "A test event sent from the image host." } });
  const [row] = rowsOf<{ id: string }>(
    await db.execute(sql`
      with made as (
        insert into webhook_deliveries (endpoint_id, message_id, seq, event_type, subject, body, next_attempt_at)
        select e.id, ${id}, nextval('webhook_event_seq'), 'webhook.test', 'test:' || e.id, ${body}, now()
        from webhook_endpoints e where e.id = ${endpointId}
        returning id
      )
      select made.id::text as id, (${deliverJob(sql`made.id`)}).id as job from made`),
  );
  return row ? Number(row.id) : null;
}
