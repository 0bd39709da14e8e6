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
/** Deliveries put back that a freed slot may wake, at most (the oldest are forgotten: their jobs come due by themselves). */
const WAITING_MAX = 10_000;
/** Waiting deliveries a freed slot looks at, oldest first, for one still pending to wake. */
const WAKE_CANDIDATES = 32;
/** A lease outlives the attempt's deadline by this much before another worker takes the delivery again. */
const LEASE_GRACE_MS = 15_000;

/**
 * This instance's sends in flight (docs/decisions/webhook-fairness.md). A send does not hold a queue worker: the
 * worker admits it, starts it and is free again, so a hanging receiver holds only its own slots. Admission is
 * bounded per endpoint, per account, and for all users' endpoints together; site-wide endpoints are bounded per
 * endpoint only, so no user's endpoint can delay them. A delivery that is not admitted is not waited for either:
 * its job is put back (due when the slots it waits for must be free) and a released slot wakes it at once.
 */
class Sends {
  readonly endpoints = new Map<number, number>();
  readonly accounts = new Map<number, number>();
  users = 0;
  /** Deliveries being sent, so that one whose lease came due early is not sent twice at once from here. */
  readonly deliveries = new Set<number>();
  /** Deliveries put back for want of a slot, in arrival order. */
  readonly waiting = new Map<number, { endpointId: number; ownerId: number | null }>();
  readonly running = new Set<Promise<unknown>>();

  /** Lists a delivery put back; the list is bounded (its job comes due anyway: a wake-up only makes it sooner). */
  wait(deliveryId: number, endpointId: number, ownerId: number | null) {
    this.waiting.delete(deliveryId);
    this.waiting.set(deliveryId, { endpointId, ownerId });
    if (this.waiting.size > WAITING_MAX) this.waiting.delete(this.waiting.keys().next().value!);
  }

  admits(endpointId: number, ownerId: number | null, limits: { perEndpoint: number; perAccount: number; users: number }): boolean {
    if ((this.endpoints.get(endpointId) ?? 0) >= limits.perEndpoint) return false;
    if (ownerId === null) return true;
    return (this.accounts.get(ownerId) ?? 0) < limits.perAccount && this.users < limits.users;
  }

  take(deliveryId: number, endpointId: number, ownerId: number | null) {
    this.deliveries.add(deliveryId);
    this.waiting.delete(deliveryId);
    this.endpoints.set(endpointId, (this.endpoints.get(endpointId) ?? 0) + 1);
    if (ownerId !== null) {
      this.accounts.set(ownerId, (this.accounts.get(ownerId) ?? 0) + 1);
      this.users++;
    }
  }

  /** Frees the slots; answers the waiting deliveries the freed slots now admit, oldest first (at most WAKE_CANDIDATES). */
  release(deliveryId: number, endpointId: number, ownerId: number | null, limits: Parameters<Sends["admits"]>[2]): number[] {
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
    const candidates: number[] = [];
    for (const [id, w] of this.waiting) {
      if (this.admits(w.endpointId, w.ownerId, limits)) candidates.push(id);
      if (candidates.length === WAKE_CANDIDATES) break;
    }
    return candidates;
  }
}

/**
 * Wakes the first of the candidates (in their order) still pending: its job is due at once. The candidates before it
 * are forgotten (sent meanwhile, by this instance or another, or gone with their endpoint), and so is the one woken.
 */
async function wakeOne(deps: Deps, candidates: number[]) {
  const [woken] = rowsOf<{ id: string }>(
    await deps.db.execute(sql`
      with pick as (
        select d.id from unnest(${`{${candidates.join(",")}}`}::bigint[]) with ordinality as c(id, ord)
        join webhook_deliveries d on d.id = c.id
        where d.status = 'pending'
        order by c.ord limit 1
      )
      select pick.id::text as id, (${deliverJob(sql`pick.id`)}).id as job from pick`),
  );
  const last = woken ? candidates.indexOf(Number(woken.id)) : candidates.length - 1;
  for (const id of candidates.slice(0, last + 1)) sends.waiting.delete(id);
}

const sends = new Sends();

/** Waits for this instance's sends in flight to end and be recorded (the queue's stop; each is bounded by its timeout). */
export async function drainSends(): Promise<void> {
  while (sends.running.size > 0) await Promise.allSettled([...sends.running]);
}

/** Sends in flight from this instance (metrics, tests). */
export const sendsInFlight = () => sends.deliveries.size;

export type AttemptOutcome = "delivered" | "retry" | "failed" | "waiting" | "skipped" | "sending";

/** The statement that puts delivery `id`'s job back, due in `ms` from the database's now. */
const jobIn = (id: number, ms: number) =>
  sql`select (graphile_worker.add_job(${DELIVER_JOB}::text, json_build_object('id', ${id}::bigint), run_at => now() + ${`${Math.max(0, Math.round(ms))} milliseconds`}::interval,
      job_key => 'webhook-delivery:' || ${id}::text, max_attempts => 10)).id`;

/**
 * The `webhook_deliver` task: one attempt of delivery `id`. With `detach` (the queue's workers), the send goes on
 * after the task has returned ("sending"): the delivery's job stays in the queue as a lease, due once the attempt's
 * deadline has passed, so that a crash mid-send has it sent again; the attempt's record replaces or removes it.
 * Without (tests, tools), the attempt's outcome is awaited.
 */
export async function attempt(deps: Deps, id: number, options: { detach?: boolean } = {}): Promise<AttemptOutcome> {
  const settings = webhookSettings(deps);
  const timeoutMs = settings.timeoutMs ?? 10_000;
  const limits = { perEndpoint: settings.perEndpoint ?? 4, perAccount: settings.perAccount ?? PER_ACCOUNT, users: settings.usersInFlight ?? USERS_IN_FLIGHT };
  const leaseMs = timeoutMs + LEASE_GRACE_MS;
  sends.waiting.delete(id); // running now: listed again below if it is put back
  if (sends.deliveries.has(id)) {
    // already being sent from here (its lease came due while the attempt's record was slow): look again later
    await deps.db.execute(jobIn(id, leaseMs));
    return "waiting";
  }
  // the delivery, its endpoint and owner's grant, and when an earlier event of the same subject still pending there
  // is due: one read, which also takes the lease of a delivery about to be sent
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
        select (graphile_worker.add_job(${DELIVER_JOB}::text, json_build_object('id', d.id), run_at => now() + ${`${leaseMs} milliseconds`}::interval,
          job_key => 'webhook-delivery:' || d.id::text, max_attempts => 10)).id
        from target d where ${options.detach === true}::boolean and d.status = 'pending' and d.enabled and not d.earlier
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
  if (!sends.admits(row.endpoint_id, row.owner_id, limits)) {
    // no worker waits for a slot: the job goes back, due when every send holding one has met its deadline, and
    // the first slot freed here wakes it sooner. It is listed as waiting only once put back (a wake-up written
    // before would be overwritten); a slot freed meanwhile wakes it at once.
    await deps.db.execute(jobIn(id, timeoutMs + 1_000));
    if (!sends.admits(row.endpoint_id, row.owner_id, limits)) {
      sends.wait(id, row.endpoint_id, row.owner_id);
      return "waiting";
    }
    await deps.db.execute(jobIn(id, 0));
    return "waiting";
  }
  sends.take(id, row.endpoint_id, row.owner_id);
  const sending = (async () => {
    try {
      return await send(deps, row, settings, timeoutMs);
    } finally {
      const candidates = sends.release(id, row.endpoint_id, row.owner_id, limits);
      if (candidates.length > 0) {
        await wakeOne(deps, candidates).catch((e) => logFor(deps).error({ err: e }, "webhooks: could not wake a waiting delivery"));
      }
    }
  })();
  if (!options.detach) return sending;
  const tracked = sending.catch((e) => {
    // its lease sends it again once due
    logFor(deps).error({ err: e, delivery_id: id }, `webhook delivery ${id}: the attempt could not be completed`);
  });
  sends.running.add(tracked);
  void tracked.finally(() => sends.running.delete(tracked));
  return "sending";
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
        delivered_at = ${ok ? atText : null}::timestamptz
      where id = ${row.id}
      returning id
    ), endpoint as (${endpointChange}),
    retry as (select (${deliverJob(sql`${row.id}::bigint`, next)}).id where ${next !== null}),
    settled as (select (graphile_worker.remove_job('webhook-delivery:' || ${row.id}::text)).id where ${next === null}::boolean),
    woken as (
      select (${deliverJob(sql`n.id`)}).id from (
        select id from webhook_deliveries
        where endpoint_id = ${row.endpoint_id} and subject = ${row.subject} and status = 'pending' and seq > ${row.seq}::bigint and ${wake}
        order by seq limit 1
      ) n
    )
    select (select count(*) from lazy) as lazy, (select count(*) from recorded) as recorded, (select count(*) from retry) as retried,
      (select count(*) from settled) as settled, (select count(*) from woken) as woken`);
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
