/**
 * From events to deliveries, and the attempts. Both run as graphile-worker tasks (webhooks/queue.ts), on
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
import { logFor } from "../observability/log.ts";
import { sendWebhook, type SendResult } from "./send.ts";
import { PUBLIC_ONLY } from "./address-guard.ts";
import { DISABLE_AFTER_MS, RETRY_DELAYS_MS, webhookSettings } from "./settings.ts";
import { signatureHeaders } from "./sign.ts";
import { DELIVER_JOB, rowsOf, deliverJob } from "./outbox.ts";
import { type Attempted, PER_ACCOUNT, USERS_IN_FLIGHT, FRESH_MS, LEASE_GRACE_MS, type Limits, sends } from "./slots.ts";

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

type AttemptOutcome = "delivered" | "retry" | "failed" | "waiting" | "skipped" | "sending";

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
        else
          void attempt(deps, next.row.id, { detach: true }).catch((e) =>
            logFor(deps).error({ err: e, delivery_id: next.row.id }, "webhooks: a waiting delivery could not be read"),
          );
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
    await deps.db.execute(
      sql`update webhook_deliveries set lease_until = now() + ${`${leaseMs} milliseconds`}::interval where id = ${id} and status = 'pending'`,
    );
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
  if (row?.status !== "pending") return "skipped";
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
