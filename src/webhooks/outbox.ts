/**
 * The delivery rows and their `webhook_deliver` jobs: made from an event (fanOut, for jobs an earlier version
 * queued), sent again by hand (one delivery, or an endpoint's failed ones), or made for a test event.
 */
import { sql } from "drizzle-orm";
import type { Deps } from "../deps.ts";
import type { Executor } from "../db/client.ts";

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
const eventBody = (event: Pick<EventJob, "type" | "timestamp" | "data">) => JSON.stringify({ type: event.type, timestamp: event.timestamp, data: event.data });

/** The statement adding the job that makes delivery `id` (a SQL expression) be attempted at `runAt` (null: now). */
export const deliverJob = (id: ReturnType<typeof sql>, runAt: Date | null = null) =>
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
  const body = eventBody({
    type: "webhook.test",
    timestamp: at.toISOString(),
    data: { endpoint_id: endpointId, message: "A test event sent from the image host." },
  });
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
