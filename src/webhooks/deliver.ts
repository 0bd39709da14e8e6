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
 */
import { sql } from "drizzle-orm";
import type { Deps } from "../deps.ts";
import type { Executor } from "../db/client.ts";
import { logFor } from "../observability/log.ts";
import { sendWebhook, type SendResult } from "./send.ts";
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

/** Deliveries being sent from this instance, per endpoint (the per-endpoint bound). */
const inFlight = new Map<number, { n: number; waiting: (() => void)[] }>();

async function slot(endpointId: number, max: number): Promise<() => void> {
  let entry = inFlight.get(endpointId);
  if (!entry) inFlight.set(endpointId, (entry = { n: 0, waiting: [] }));
  const e = entry;
  if (e.n >= max) await new Promise<void>((go) => e.waiting.push(go));
  e.n++;
  return () => {
    e.n--;
    const next = e.waiting.shift();
    if (next) next();
    else if (e.n === 0) inFlight.delete(endpointId);
  };
}

export type AttemptOutcome = "delivered" | "retry" | "failed" | "waiting" | "skipped";

/** The `webhook_deliver` task: one attempt of delivery `id`. */
export async function attempt(deps: Deps, id: number): Promise<AttemptOutcome> {
  const settings = webhookSettings(deps);
  // the delivery, its endpoint, and when an earlier event of the same subject still pending there is due: one read
  const [row] = rowsOf<Attempted & { earlier: boolean; earlier_at: Date | string | null }>(
    await deps.db.execute(sql`
      select d.id, d.endpoint_id, d.message_id, d.seq::text as seq, d.subject, d.body, d.status, d.attempts,
             e.url, e.secret_sealed, e.enabled, e.failing_since, earlier.id is not null as earlier, earlier.next_attempt_at as earlier_at
      from webhook_deliveries d
      join webhook_endpoints e on e.id = d.endpoint_id
      left join lateral (
        select p.id, p.next_attempt_at from webhook_deliveries p
        where p.endpoint_id = d.endpoint_id and p.subject = d.subject and p.status = 'pending' and p.seq < d.seq
        order by p.seq limit 1
      ) earlier on true
      where d.id = ${id}`),
  );
  if (!row || row.status !== "pending") return "skipped";
  if (!row.enabled) {
    await deps.db.execute(sql`update webhook_deliveries set status = 'failed', next_attempt_at = null,
      last_error = 'not sent: the endpoint is disabled' where id = ${id} and status = 'pending'`);
    return "failed";
  }
  if (row.earlier) {
    // it waits for the earlier one's outcome (whose success or failure wakes it at once), at the latest till just after its next attempt
    const at = row.earlier_at ? new Date(row.earlier_at) : deps.clock();
    const runAt = new Date(Math.max(at.getTime(), deps.clock().getTime()) + 1_000);
    await deps.db.execute(sql`select (${deliverJob(sql`${id}::bigint`, runAt)}).id`);
    return "waiting";
  }
  const release = await slot(row.endpoint_id, settings.perEndpoint ?? 4);
  let result: SendResult;
  const at = deps.clock();
  try {
    let secret: string;
    try {
      secret = settings.box.open(row.secret_sealed);
    } catch (e) {
      throw new Error(`webhook endpoint ${row.endpoint_id}: ${(e as Error).message}`); // left for an instance that can open it
    }
    result = await sendWebhook({
      url: row.url,
      headers: signatureHeaders(secret, row.message_id, at, row.body),
      body: row.body,
      allow: settings.allow,
      resolve: settings.resolve,
      timeoutMs: settings.timeoutMs ?? 10_000,
    });
  } finally {
    release();
  }
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
  const error =
    result.kind === "answered"
      ? ok
        ? null
        : `answered ${code}${result.location ? ` (redirect to ${result.location.slice(0, 200)}, not followed)` : ""}${result.body ? `: ${result.body.slice(0, 200)}` : ""}`
      : `${result.kind === "refused" ? "refused" : "failed"}: ${result.reason}`;
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
  const next = outcome === "retry" ? new Date(at.getTime() + delays[attempts - 1]!) : null;
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
    woken as (
      select (${deliverJob(sql`n.id`)}).id from (
        select id from webhook_deliveries
        where endpoint_id = ${row.endpoint_id} and subject = ${row.subject} and status = 'pending' and seq > ${row.seq}::bigint and ${wake}
        order by seq limit 1
      ) n
    )
    select (select count(*) from lazy) as lazy, (select count(*) from recorded) as recorded, (select count(*) from retry) as retried, (select count(*) from woken) as woken`);
  if (disable) log.warn({ endpoint_id: row.endpoint_id, reason: disable }, `webhook endpoint ${row.endpoint_id} disabled: ${disable}`);
  else if (!ok) log.info({ endpoint_id: row.endpoint_id, delivery_id: row.id, attempts, error }, `webhook delivery ${row.id} not delivered (${outcome})`);
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
