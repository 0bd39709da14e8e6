/**
 * The job queue behind webhooks: graphile-worker, on the service's own PostgreSQL (its schema
 * `graphile_worker`, installed by its migrations with ours). Chosen over pg-boss because a job is added by a SQL
 * function (`graphile_worker.add_job`), so an event is written inside the change's own transaction, in the same
 * statement where we want, through our driver (postgres.js); jobs are taken with SKIP LOCKED by every instance at
 * once, woken by LISTEN/NOTIFY rather than polling, and a job whose worker died is taken again after its lock
 * expires (4 h, graphile-worker's rule; an instance that stops cleanly releases its jobs at once). It talks to
 * PostgreSQL through node-postgres, a pool of its own, small.
 *
 * A dead instance's jobs are not left for 4 hours: each instance writes its workers' ids into job_workers every
 * HEARTBEAT_MS, and every instance unlocks the jobs of workers not seen for DEAD_AFTER_MS
 * (graphile_worker.force_unlock_workers): after a kill -9, the jobs it held go out within about two minutes. A send
 * in flight holds no job (deliver.ts): its instance renews the delivery's lease every LEASE_SWEEP_MS, and once
 * the lease has passed any instance queues it again.
 */
import { EventEmitter } from "node:events";
import { hostname } from "node:os";
import { sql } from "drizzle-orm";
import pg from "pg";
import { Logger, run, runMigrations, type Runner, type TaskList } from "graphile-worker";
import type { Deps } from "../deps.ts";
import type { Connection } from "../db/client.ts";
import { defaultLogger, logFor, withLogger, type Logger as PinoLogger } from "../observability/log.ts";
import { attempt, sweepLeases } from "./deliver.ts";
import { DELIVER_JOB, type EventJob, fanOut, rowsOf } from "./outbox.ts";
import { drainSends } from "./slots.ts";
import { EVENT_JOB } from "./events.ts";

function pgPool(connection: Connection, max: number): pg.Pool {
  const options =
    typeof connection === "string"
      ? { connectionString: connection }
      : { host: connection.host, port: connection.port, user: connection.username, database: connection.database };
  // the queue's own commits (a job taken, a job completed) do not wait for the disk: a database crash within the WAL
  // writer's delay can only make a job run again (at least once), never lose one — jobs are added in the statements
  // of the changes, on the service's own connections, with their durability
  const pool = new pg.Pool({ ...options, max, application_name: "image-host jobs", options: "-c synchronous_commit=off" });
  // an idle connection dropped by the server: the pool opens another when needed
  pool.on("error", () => {});
  pool.on("connect", (client) => client.on("error", () => {}));
  return pool;
}

const quietLogger = (log: PinoLogger) =>
  new Logger(() => (level, message) => {
    if (level === "error") log.error(`job queue: ${message}`);
    else if (level === "warning") log.warn(`job queue: ${message}`);
    else log.debug(`job queue: ${message}`);
  });

/** Installs or upgrades graphile-worker's schema (idempotent; safe when several instances start at once). */
export async function installQueue(connection: Connection): Promise<void> {
  const pool = pgPool(connection, 1);
  try {
    await runMigrations({ pgPool: pool, logger: quietLogger(defaultLogger().child({ job: "queue" })) });
  } finally {
    await pool.end();
  }
}

const HEARTBEAT_MS = 30_000;
/** How often the leases of this instance's sends are renewed, and the lapsed ones (a dead instance's) queued again. */
const LEASE_SWEEP_MS = 5_000;
const DEAD_AFTER_MS = 120_000;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
};

/**
 * Marks this instance's workers as alive, and unlocks the jobs of workers whose instance stopped being seen — at once
 * for an instance of this host whose process is gone (a restart after a crash), after DEAD_AFTER_MS for the others.
 */
async function heartbeat(deps: Deps, instance: string, workerIds: string[]) {
  const host = `${hostname()}:`;
  const local = rowsOf<{ instance: string }>(
    await deps.db.execute(sql`select distinct instance from job_workers where starts_with(instance, ${host}) and instance <> ${instance}`),
  )
    .map((r) => r.instance)
    .filter((i) => !alive(Number(i.slice(host.length))));
  if (local.length > 0) {
    await deps.db.execute(sql`update job_workers set seen_at = '-infinity' where instance = any(${`{${local.map((i) => `"${i}"`).join(",")}}`}::text[])`);
  }
  if (workerIds.length > 0) {
    await deps.db.execute(sql`
      insert into job_workers (worker_id, instance, seen_at)
      select unnest(${`{${workerIds.join(",")}}`}::text[]), ${instance}, now()
      on conflict (worker_id) do update set seen_at = now()`);
  }
  const dead = rowsOf<{ worker_id: string }>(
    await deps.db.execute(sql`delete from job_workers where seen_at < now() - ${`${DEAD_AFTER_MS / 1000} seconds`}::interval returning worker_id`),
  ).map((r) => r.worker_id);
  if (dead.length > 0) {
    await deps.db.execute(sql`select graphile_worker.force_unlock_workers(${`{${dead.join(",")}}`}::text[])`);
    logFor(deps).warn({ workers: dead.length }, `job queue: unlocked the jobs of ${dead.length} workers of a stopped instance`);
  }
}

/**
 * Pending deliveries long overdue have lost their job (a database restored from a backup, which holds the deliveries
 * but not graphile-worker's schema): each gets its job again. The job key makes this a no-op for a delivery whose job
 * is still waiting (its time is kept).
 */
async function requeueOverdue(deps: Deps) {
  const requeued = rowsOf(
    await deps.db.execute(sql`
      select graphile_worker.add_job(${DELIVER_JOB}::text, json_build_object('id', d.id), run_at => now(),
        job_key => 'webhook-delivery:' || d.id::text, job_key_mode => 'preserve_run_at', max_attempts => 10)
      from (select id from webhook_deliveries where status = 'pending' and next_attempt_at < now() - interval '10 minutes' order by id limit 10000) d`),
  ).length;
  if (requeued > 0) logFor(deps).info({ deliveries: requeued }, `job queue: ${requeued} overdue pending deliveries queued again`);
}

interface QueueOptions {
  /** Jobs run at once by this instance. A job admits and starts a send, then ends: sends in flight are bounded by deliver.ts, not by this. */
  concurrency: number;
  /** Connections of the queue's own pool. */
  poolSize?: number;
  /** How often idle workers look for jobs that became due (a retry's time); new jobs wake them at once. */
  pollIntervalMs?: number;
}

/** Runs this instance's workers until stop(): the webhook tasks. */
export async function startQueue(deps: Deps, connection: Connection, options: QueueOptions): Promise<{ stop(): Promise<void>; runner: Runner }> {
  const log = (deps.log ?? defaultLogger()).child({ job: "webhooks" });
  // graphile-worker warns when its pool is smaller than its concurrency; connections open only as they are needed
  const pool = pgPool(connection, options.poolSize ?? Math.max(options.concurrency, 4));
  const taskList: TaskList = {
    [EVENT_JOB]: async (payload) => {
      await withLogger(log, () => fanOut(deps, payload as EventJob));
    },
    [DELIVER_JOB]: async (payload) => {
      // the send goes on after the job: a worker never waits on a receiver (deliver.ts, Sends)
      await withLogger(log, () => attempt(deps, Number((payload as { id: number }).id), { detach: true }));
    },
  };
  const instance = `${hostname()}:${process.pid}`;
  const events = new EventEmitter();
  const workerIds: string[] = [];
  // jobs are locked in the name of the pool (batched fetches) or of one worker: both are recorded, at once (not at
  // the next beat), so that a kill -9 seconds after the start leaves the names behind
  const record = (id: string) => {
    workerIds.push(id);
    deps.db
      .execute(sql`insert into job_workers (worker_id, instance) values (${id}, ${instance}) on conflict (worker_id) do update set seen_at = now()`)
      .catch((e) => log.error({ err: e }, "job queue: could not record a worker"));
  };
  events.on("pool:create", ({ workerPool }: { workerPool: { id: string } }) => record(workerPool.id));
  events.on("worker:create", ({ worker }: { worker: { workerId: string } }) => record(worker.workerId));
  const runner = await run({
    events: events as never,
    pgPool: pool,
    taskList,
    concurrency: options.concurrency,
    // one fetch per wake-up for the whole pool (not one per idle worker), completions sent together
    preset: { worker: { localQueue: { size: options.concurrency }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
    noHandleSignals: true,
    pollInterval: options.pollIntervalMs ?? 2_000,
    logger: quietLogger(log),
  });
  await withLogger(log, () => requeueOverdue(deps)).catch((e) => log.error({ err: e }, "job queue: could not requeue overdue deliveries"));
  const beat = () => withLogger(log, () => heartbeat(deps, instance, workerIds)).catch((e) => log.error({ err: e }, "job queue: the heartbeat failed"));
  let beating: Promise<unknown> = beat();
  const timer = setInterval(() => (beating = beat()), HEARTBEAT_MS);
  const sweep = () =>
    withLogger(log, async () => {
      const requeued = await sweepLeases(deps);
      if (requeued > 0) log.warn({ deliveries: requeued }, `job queue: ${requeued} deliveries whose sender stopped queued again`);
    }).catch((e) => log.error({ err: e }, "job queue: the leases' round failed"));
  let sweeping: Promise<unknown> = sweep();
  const leases = setInterval(() => (sweeping = sweep()), LEASE_SWEEP_MS);
  return {
    runner,
    async stop() {
      clearInterval(timer);
      clearInterval(leases);
      await beating;
      await sweeping;
      const ids = [...workerIds];
      await runner.stop();
      await drainSends(); // sends in flight end (each within its timeout) and are recorded
      await pool.end();
      if (ids.length) await deps.db.execute(sql`delete from job_workers where worker_id = any(${`{${ids.join(",")}}`}::text[])`).catch(() => {});
    },
  };
}
