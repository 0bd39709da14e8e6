/**
 * Webhooks (issue 19's quality bar): "an upload with one subscribed endpoint costs at most 1.1× the CPU and round trips
 * of one without. Report delivery throughput at c=16 to a fast local receiver." Prints figures, never asserts;
 * benchmarks are not tests.
 *
 *   bun run scripts/bench/webhooks.ts [--quick] [--markdown FILE]   these cells alone (FILE: its section is replaced)
 *   bun run bench --only webhooks [--quick]                         the same through scripts/bench.ts (writes BENCHMARKS.md)
 *   bun run bench                                                   the full bench runs them at its end
 *
 * Per topology (the embedded default; PostgreSQL too when the bench's PostgreSQL answers), one server
 * (`bun run src/server.ts` as package.json's "server" script starts it, fresh DATA_DIR, `WEBHOOK_ALLOW=127.0.0.1` so
 * that it may post to the local receiver, WEBHOOK_CONCURRENCY at its default) on 127.0.0.1, and one receiver in this
 * process (Bun.serve answering 200 at once, verifying nothing; it notes each event's webhook-id, image key and time):
 * 1. Upload cost: rounds alternating "no endpoint" and "one site-wide endpoint subscribed to image.uploaded" (made
 *    through POST /api/admin/webhooks before the round, deleted after it), N uploads of a ~1 MB photo-like JPEG one
 *    after the other. Per upload: the CPU time of the server's whole process tree (server, its decode process, the
 *    embedded PostgreSQL's processes; for PostgreSQL, plus the database's backends of the run's database, read from
 *    /proc through pg_stat_activity), read once the receiver got every event of the round, so that the delivery's
 *    CPU is charged to the upload that caused it; and the answer's wall time.
 * 2. Round trips: in a process of its own (this file with --worker), the app and the webhook queue built as
 *    src/server.ts builds them, each with a postgres.js client of its own whose `debug` hook counts statements, and
 *    graphile-worker's node-postgres statements counted by wrapping pg.Client#query: the upload request's statements,
 *    and the statements the delivery takes (the job's fetch and completion, the attempt's read and its record).
 * 3. Throughput: 16 uploaders of a small PNG at once for a few seconds (bounded in count too), one endpoint, then 16
 *    endpoints (the instance-wide WEBHOOK_CONCURRENCY bound); uploads/s, events delivered/s end to end, the delay from
 *    an upload's answer to its event's arrival, and whether every event arrived exactly once (by webhook-id).
 * Everything is stopped and every temporary directory removed at the end, on failure and on SIGINT/SIGTERM.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { type BenchImage, kb, makeImages } from "./images.ts";
import { descendants } from "./procfs.ts";
import { type Account, admin, type AppServer, createAccount, serverScriptEnv, startAppServer } from "./servers.ts";
import { fmt, freshDatabase, markdownTable, median, onCleanup, percentile, ROOT, run, standaloneSection, writeSection } from "./util.ts";

export const WEBHOOKS_HEADING = "## Webhooks (issue 19)";
/** Seconds the cells may take (the watchdog's share), both topologies, setup included. */
export const WEBHOOK_CELLS_BUDGET_S = { full: 600, quick: 240 };

const TARGET_RATIO = 1.1;
const UPLOADERS = 16;
const ACCOUNTS = 4;
const WEBHOOK_CONCURRENCY_DEFAULT = 8;
const PER_ENDPOINT = 4;

const configFor = (quick: boolean) =>
  quick
    ? { rounds: 2, uploads: 8, tputSeconds: 2, tputMax: 400, fanSeconds: 1, fanMax: 40, stmtUploads: 5, drainMs: 60_000 }
    : { rounds: 6, uploads: 30, tputSeconds: 5, tputMax: 3000, fanSeconds: 3, fanMax: 250, stmtUploads: 10, drainMs: 120_000 };

type Key = "emb" | "pg";
const topologyLabel: Record<Key, string> = { emb: "embedded", pg: "PostgreSQL" };

// ---------------------------------------------------------------- CPU of a process tree

const TICKS_PER_SECOND = 100; // USER_HZ

/** utime + stime (+ cutime + cstime: the children it reaped) of one process, ms; NaN once gone. */
function procCpuMs(pid: number, reaped = true): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0);
    return (ticks * 1000) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/**
 * CPU ms of the process and everything below it, alive or reaped: a process that exited was counted in its parent's
 * cutime/cstime when reaped, so the sum only grows (short of a child that exits unreaped between two readings).
 */
function treeCpuMs(pid: number): number {
  return [pid, ...descendants(pid)].reduce((sum, p) => sum + (procCpuMs(p) || 0), 0);
}

/** The CPU of the PostgreSQL backends serving `dbName` (same machine): per pid, so a backend that appears counts from 0. */
async function backendCpu(monitor: postgres.Sql | null, dbName: string | undefined): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (!monitor || !dbName) return out;
  const rows = await monitor<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${dbName}`;
  for (const r of rows) {
    const ms = procCpuMs(Number(r.pid), false);
    if (Number.isFinite(ms)) out.set(Number(r.pid), ms);
  }
  return out;
}
const backendDelta = (a: Map<number, number>, b: Map<number, number>) => [...b].reduce((s, [pid, ms]) => s + ms - (a.get(pid) ?? 0), 0);

// ---------------------------------------------------------------- the receiver

interface Arrival {
  path: string;
  id: string;
  key: string;
  t: number;
}

class Receiver {
  readonly arrivals: Arrival[] = [];
  private server: ReturnType<typeof Bun.serve>;
  constructor() {
    this.server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (req) => {
        const text = await req.text();
        const t = performance.now();
        let key = "";
        try {
          key = String((JSON.parse(text) as { data?: { key?: string } }).data?.key ?? "");
        } catch {}
        this.arrivals.push({ path: new URL(req.url).pathname, id: req.headers.get("webhook-id") ?? "", key, t });
        return new Response(null, { status: 200 });
      },
    });
    onCleanup("webhook receiver", () => this.server.stop(true));
  }
  url(path: string) {
    return `http://127.0.0.1:${this.server.port}${path}`;
  }
  count(prefix: string) {
    let n = 0;
    for (const a of this.arrivals) if (a.path.startsWith(prefix)) n++;
    return n;
  }
  of(prefix: string) {
    return this.arrivals.filter((a) => a.path.startsWith(prefix));
  }
  stop() {
    this.server.stop(true);
  }
}

async function until(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > deadline) return false;
    await Bun.sleep(5);
  }
  return true;
}

// ---------------------------------------------------------------- the statements worker (its own process)

type DbRef = { kind: "postgres"; url: string } | { kind: "embedded" };

export interface StmtJob {
  database: DbRef;
  dataDir: string;
  bodyFile: string;
  contentType: string;
  uploads: number;
  /** The photo of the cost rounds, for the CPU of the upload alone (its deliveries written, none sent). */
  cpuBodyFile: string;
  cpuContentType: string;
  cpuRounds: number;
  cpuUploads: number;
}
export interface StmtResult {
  /** Per upload (after two warm ones), without an endpoint and with one: the upload request's statements, the delivery's. */
  none: { upload: number[]; delivery: number[] };
  one: { upload: number[]; delivery: number[]; deliveryApp: number[]; deliveryQueue: number[] };
  /** The statements of the last delivery, in order (shortened), with who sent them. */
  sample: string[];
  uploadSample: string[];
  /**
   * CPU ms per upload of the photo, per round, in this process's tree (the app, its decode process, the bench's
   * client) plus the database's backends: without an endpoint, and with one whose deliveries are written but not sent
   * (the queue stopped) — what the upload itself pays for a subscriber.
   */
  uploadAlone: { kind: "none" | "enqueue"; ms: number }[];
}

async function countStatements(job: StmtJob): Promise<StmtResult> {
  process.env.LOG_LEVEL = "warn";
  const pg = (await import("pg")).default;
  const { drizzle } = await import("drizzle-orm/postgres-js");
  const { sql } = await import("drizzle-orm");
  const schema = await import("../../src/db/schema.ts");
  const { createApp } = await import("../../src/app.ts");
  const { openDatabase } = await import("../../src/bootstrap.ts");
  const { loadEnv } = await import("../../src/env.ts");
  const { objectHandler } = await import("../../src/routes/site/serve-object.ts");
  const { buildServices } = await import("../../src/services/index.ts");
  const { StorageRegistry } = await import("../../src/storage/index.ts");
  const { startQueue } = await import("../../src/webhooks/queue.ts");
  const { resolveWebhookKey, secretBox } = await import("../../src/webhooks/secret-box.ts");
  type Deps = import("../../src/deps.ts").Deps;

  const env = loadEnv({
    DATA_DIR: job.dataDir,
    WEBHOOK_ALLOW: "127.0.0.1",
    LOG_LEVEL: "warn",
    ...(job.database.kind === "postgres" ? { DATABASE_URL: job.database.url } : {}),
  });
  const database = await openDatabase(env);
  const connection = database.connection!;
  // graphile-worker's statements: every pg.Client#query (its pool's, its LISTEN connection's)
  let queueLog: string[] = [];
  const originalQuery = pg.Client.prototype.query;
  (pg.Client.prototype as { query: unknown }).query = function (this: unknown, ...args: unknown[]) {
    const q = args[0] as string | { text?: string } | undefined;
    const text = typeof q === "string" ? q : q?.text;
    if (text) queueLog.push(`queue (pg): ${text.replace(/\s+/g, " ").trim()}`);
    return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
  };
  const counted = (sink: () => string[], who: string) => {
    const options = { max: 10, onnotice: () => {}, debug: (_c: number, query: string) => sink().push(`${who}: ${query.replace(/\s+/g, " ").trim()}`) };
    return typeof connection === "string" ? postgres(connection, options) : postgres({ ...connection, ...options });
  };
  let appLog: string[] = [];
  let taskLog: string[] = [];
  const appClient = counted(() => appLog, "upload");
  const taskClient = counted(() => taskLog, "task");
  const plain = typeof connection === "string" ? postgres(connection, { max: 1, onnotice: () => {} }) : postgres({ ...connection, max: 1, onnotice: () => {} });
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(null, { status: 503 }) });
  const base = `http://127.0.0.1:${server.port}`;
  const adminToken = `stmt-${crypto.randomUUID()}-${crypto.randomUUID()}`;
  const webhooks = { box: secretBox(resolveWebhookKey(undefined, job.dataDir)), allow: env.WEBHOOK_ALLOW };
  const config = { baseUrl: base, dataDir: job.dataDir, adminToken, trustedProxies: 0, webhooks };
  const storage = new StorageRegistry({ dataDir: job.dataDir, baseUrl: base });
  const appDeps: Deps = { db: drizzle(appClient, { schema }) as unknown as Deps["db"], storage, config, clock: () => new Date() };
  const taskDeps: Deps = { db: drizzle(taskClient, { schema }) as unknown as Deps["db"], storage, config, clock: () => new Date() };
  const services = buildServices(appDeps);
  const app = createApp(appDeps, services);
  server.reload({ routes: { "/i/*": objectHandler(appDeps, services.objects) }, fetch: app.fetch });
  const receiver = new Receiver();
  const queue = await startQueue(taskDeps, connection, { concurrency: WEBHOOK_CONCURRENCY_DEFAULT });
  try {
    const call = async (method: string, path: string, body?: unknown, token = adminToken) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body && typeof body === "object" && !(body instanceof ArrayBuffer) ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${method} ${path} → ${res.status} ${text.slice(0, 300)}`);
      return (JSON.parse(text) as { data: any }).data;
    };
    const name = `stmt_${crypto.randomUUID().slice(0, 8)}`;
    const user = await call("POST", "/api/admin/users", { username: name, email: `${name}@bench.invalid`, capacity_kb: 1_000_000_000 });
    const { token } = await call("POST", `/api/admin/users/${user.id}/tokens`);
    const body = await Bun.file(job.bodyFile).arrayBuffer();
    const upload = async (file: ArrayBuffer = body, contentType = job.contentType) => {
      const res = await fetch(`${base}/api/v1/upload`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": contentType }, body: file });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`upload → ${res.status} ${text.slice(0, 300)}`);
    };
    /** Waits until no webhook job is left and every delivery is settled, then a little for the workers' next fetch. */
    const settled = async () => {
      const deadline = performance.now() + 30_000;
      for (;;) {
        const [r] = await plain<{ jobs: number; pending: number }[]>`
          select (select count(*)::int from graphile_worker._private_jobs) as jobs,
                 (select count(*)::int from webhook_deliveries where status = 'pending') as pending`;
        if (r!.jobs === 0 && r!.pending === 0) break;
        if (performance.now() > deadline) throw new Error(`deliveries not settled within 30 s (${r!.jobs} jobs, ${r!.pending} pending)`);
        await Bun.sleep(10);
      }
      await Bun.sleep(100);
    };
    const measure = async (expectEvents: number) => {
      appLog = [];
      taskLog = [];
      queueLog = [];
      const before = receiver.arrivals.length;
      await upload();
      await Bun.sleep(20); // what runs after the answer is sent still counts
      const uploadStatements = appLog.length;
      if (expectEvents && !(await until(() => receiver.arrivals.length >= before + expectEvents, 30_000))) throw new Error("the event did not arrive within 30 s");
      await settled();
      return { upload: uploadStatements, app: taskLog.length, queue: queueLog.length, log: [...taskLog, ...queueLog], uploadLog: [...appLog] };
    };
    await upload();
    await upload();
    await settled();
    const none = { upload: [] as number[], delivery: [] as number[] };
    for (let i = 0; i < job.uploads; i++) {
      const m = await measure(0);
      none.upload.push(m.upload);
      none.delivery.push(m.app + m.queue);
    }
    const endpoint = await call("POST", "/api/admin/webhooks", { url: receiver.url("/stmt"), events: ["image.uploaded"] });
    await measure(1); // warm: the first delivery of the endpoint
    const one = { upload: [] as number[], delivery: [] as number[], deliveryApp: [] as number[], deliveryQueue: [] as number[] };
    let sample: string[] = [];
    let uploadSample: string[] = [];
    for (let i = 0; i < job.uploads; i++) {
      const m = await measure(1);
      one.upload.push(m.upload);
      one.delivery.push(m.app + m.queue);
      one.deliveryApp.push(m.app);
      one.deliveryQueue.push(m.queue);
      sample = m.log.map((q) => (q.length > 130 ? `${q.slice(0, 127)}…` : q));
      uploadSample = m.uploadLog.map((q) => (q.length > 130 ? `${q.slice(0, 127)}…` : q));
    }
    await call("DELETE", `/api/admin/webhooks/${endpoint.id}`);

    // the upload alone: the queue stopped, so an endpoint's deliveries are written with the upload and none is sent
    await queue.stop();
    const photo = await Bun.file(job.cpuBodyFile).arrayBuffer();
    const uploadPhoto = () => upload(photo, job.cpuContentType);
    const dbName = (await plain<{ db: string }[]>`select current_database() as db`)[0]!.db;
    const idle = await call("POST", "/api/admin/webhooks", { url: receiver.url("/alone"), events: ["image.uploaded"] });
    for (let i = 0; i < 3; i++) await uploadPhoto();
    const uploadAlone: StmtResult["uploadAlone"] = [];
    const kinds = ["none", "enqueue", "enqueue", "none", "none", "enqueue"] as const;
    for (let r = 0; r < job.cpuRounds; r++) {
      const kind = kinds[r % kinds.length]!;
      await plain`update webhook_endpoints set enabled = ${kind === "enqueue"} where id = ${idle.id}`;
      const b0 = await backendCpu(plain, dbName);
      const c0 = treeCpuMs(process.pid);
      for (let i = 0; i < job.cpuUploads; i++) await uploadPhoto();
      const c1 = treeCpuMs(process.pid);
      const b1 = await backendCpu(plain, dbName);
      uploadAlone.push({ kind, ms: (c1 - c0 + backendDelta(b0, b1)) / job.cpuUploads });
    }
    const [written] = await plain<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where endpoint_id = ${idle.id} and status = 'pending'`;
    const expected = 3 + uploadAlone.filter((r) => r.kind === "enqueue").length * job.cpuUploads; // the warm uploads too
    if (written!.n !== expected) throw new Error(`the stopped queue's rounds wrote ${written!.n} deliveries, not ${expected}`);
    await call("DELETE", `/api/admin/webhooks/${idle.id}`);
    return { none, one, sample, uploadSample, uploadAlone };
  } finally {
    await queue.stop().catch(() => {});
    receiver.stop();
    server.stop(true);
    await appClient.end({ timeout: 5 });
    await taskClient.end({ timeout: 5 });
    await plain.end({ timeout: 5 });
    await database.close();
  }
}

async function stmtChild(job: StmtJob, timeoutMs: number): Promise<StmtResult> {
  const r = await run([process.execPath, join(ROOT, "scripts/bench/webhooks.ts"), "--worker", JSON.stringify(job)], { timeoutMs });
  const line = r.stdout.split("\n").find((l) => l.startsWith("WEBHOOKSJSON "));
  if (r.code !== 0 || !line) throw new Error(`webhooks.ts --worker failed (${r.code}): ${(r.stderr || r.stdout).slice(-2000)}`);
  return JSON.parse(line.slice("WEBHOOKSJSON ".length)) as StmtResult;
}

// ---------------------------------------------------------------- HTTP helpers

async function upload(server: AppServer, token: string, body: ArrayBuffer, contentType: string): Promise<{ key: string; ms: number; t: number }> {
  const t0 = performance.now();
  const res = await fetch(`${server.base}/api/v1/upload`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": contentType }, body });
  const text = await res.text();
  const t = performance.now();
  if (res.status !== 200) throw new Error(`${server.label}: upload → ${res.status} ${text.slice(0, 300)}`);
  return { key: (JSON.parse(text) as { data: { key: string } }).data.key, ms: t - t0, t };
}

const addEndpoint = (server: AppServer, url: string) => admin<{ id: number }>(server, "POST", "/api/admin/webhooks", { url, events: ["image.uploaded"] });
const removeEndpoint = (server: AppServer, id: number) => admin(server, "DELETE", `/api/admin/webhooks/${id}`);

// ---------------------------------------------------------------- the cells

interface Topology {
  key: Key;
  server: AppServer;
  accounts: Account[];
  dbName?: string;
}

interface CostRound {
  round: number;
  kind: "none" | "one";
  cpuMs: number;
  dbCpuMs: number;
  p50: number;
  waitMs: number;
}

async function costRounds(t: Topology, receiver: Receiver, jpeg: BenchImage, monitor: postgres.Sql | null, cfg: ReturnType<typeof configFor>, log: (m: string) => void) {
  const body = (await Bun.file(jpeg.bodyFile).arrayBuffer()) as ArrayBuffer;
  const token = t.accounts[0]!.token;
  // warm-up, the delivery path too (not recorded)
  {
    const ep = await addEndpoint(t.server, receiver.url(`/warm-${t.key}`));
    for (let i = 0; i < 3; i++) await upload(t.server, token, body, jpeg.contentType);
    await until(() => receiver.count(`/warm-${t.key}`) >= 3, 30_000);
    await Bun.sleep(300);
    await removeEndpoint(t.server, ep.id);
  }
  const rounds: CostRound[] = [];
  const notes: string[] = [];
  // none, one, one, none, none, one…: each kind as often first as second in a pair
  const kinds = Array.from({ length: cfg.rounds }, (_, i) => (Math.floor((i + 1) / 2) % 2 === 0 ? "none" : "one") as "none" | "one");
  for (const [round, kind] of kinds.entries()) {
    const path = `/cost-${t.key}-${round}`;
    const ep = kind === "one" ? await addEndpoint(t.server, receiver.url(path)) : null;
    await Bun.sleep(200);
    const db0 = await backendCpu(monitor, t.dbName);
    const cpu0 = treeCpuMs(t.server.pid);
    const t0 = performance.now();
    const ms: number[] = [];
    for (let i = 0; i < cfg.uploads; i++) ms.push((await upload(t.server, token, body, jpeg.contentType)).ms);
    const tUploads = performance.now();
    if (ep && !(await until(() => receiver.count(path) >= cfg.uploads, 30_000))) notes.push(`${topologyLabel[t.key]} round ${round + 1}: ${receiver.count(path)} of ${cfg.uploads} events within 30 s`);
    const waitMs = performance.now() - tUploads;
    await Bun.sleep(250); // the delivery's record, after the receiver's answer
    const cpu1 = treeCpuMs(t.server.pid);
    const db1 = await backendCpu(monitor, t.dbName);
    rounds.push({ round, kind, cpuMs: (cpu1 - cpu0) / cfg.uploads, dbCpuMs: monitor ? backendDelta(db0, db1) / cfg.uploads : NaN, p50: median(ms), waitMs });
    if (ep) await removeEndpoint(t.server, ep.id);
    log(
      `${topologyLabel[t.key]} cost round ${round + 1}/${cfg.rounds} (${kind === "one" ? "one endpoint" : "no endpoint"}): ` +
        `${fmt((cpu1 - cpu0) / cfg.uploads)} ms CPU per upload${monitor ? ` + ${fmt(backendDelta(db0, db1) / cfg.uploads)} ms database` : ""}, p50 ${fmt(median(ms))} ms, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
  }
  return { rounds, notes };
}

interface Tput {
  endpoints: number;
  uploads: number;
  uploadSeconds: number;
  uploadRate: number;
  expected: number;
  received: number;
  distinct: number;
  duplicates: number;
  missing: number;
  endToEndSeconds: number;
  eventRate: number;
  drainRate: number;
  /** Deliveries/s once the uploads had stopped (the queue's backlog alone), NaN when nothing was left. */
  afterRate: number;
  p50: number;
  p99: number;
  max: number;
  cpuPerUpload: number;
  dbCpuPerUpload: number;
  failed: number;
}

async function throughput(
  t: Topology,
  receiver: Receiver,
  png: BenchImage,
  endpoints: number,
  seconds: number,
  maxUploads: number,
  drainMs: number,
  monitor: postgres.Sql | null,
  log: (m: string) => void,
): Promise<Tput> {
  const body = (await Bun.file(png.bodyFile).arrayBuffer()) as ArrayBuffer;
  const prefix = `/tput-${t.key}-${endpoints}/`;
  const ids: number[] = [];
  for (let i = 0; i < endpoints; i++) ids.push((await addEndpoint(t.server, receiver.url(`${prefix}${i}`))).id);
  await Bun.sleep(200);
  const answers = new Map<string, number>();
  let started = 0;
  let failed = 0;
  const db0 = await backendCpu(monitor, t.dbName);
  const cpu0 = treeCpuMs(t.server.pid);
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: UPLOADERS }, async (_, u) => {
      while (performance.now() < deadline && started < maxUploads) {
        started++;
        try {
          const r = await upload(t.server, t.accounts[u % t.accounts.length]!.token, body, png.contentType);
          answers.set(r.key, r.t);
        } catch {
          failed++;
        }
      }
    }),
  );
  const tUploads = performance.now();
  const expected = answers.size * endpoints;
  await until(() => receiver.count(prefix) >= expected, drainMs);
  const got = receiver.of(prefix);
  const tEnd = got.length ? Math.max(...got.map((a) => a.t)) : NaN;
  await Bun.sleep(250);
  const cpu1 = treeCpuMs(t.server.pid);
  const db1 = await backendCpu(monitor, t.dbName);
  const distinct = new Set(got.map((a) => `${a.path} ${a.id}`)).size;
  const delays = got.filter((a) => answers.has(a.key)).map((a) => a.t - answers.get(a.key)!);
  const firstEvent = got.length ? Math.min(...got.map((a) => a.t)) : NaN;
  for (const id of ids) await removeEndpoint(t.server, id);
  const r: Tput = {
    endpoints,
    uploads: answers.size,
    uploadSeconds: (tUploads - t0) / 1000,
    uploadRate: answers.size / ((tUploads - t0) / 1000),
    expected,
    received: got.length,
    distinct,
    duplicates: got.length - distinct,
    missing: expected - distinct,
    endToEndSeconds: (tEnd - t0) / 1000,
    eventRate: distinct / ((tEnd - t0) / 1000),
    drainRate: distinct / ((tEnd - firstEvent) / 1000),
    afterRate: (() => {
      const after = got.filter((a) => a.t > tUploads).length;
      return after >= 10 ? after / ((tEnd - tUploads) / 1000) : NaN;
    })(),
    p50: percentile(delays, 50),
    p99: percentile(delays, 99),
    max: delays.length ? Math.max(...delays) : NaN,
    cpuPerUpload: (cpu1 - cpu0) / Math.max(1, answers.size),
    dbCpuPerUpload: monitor ? backendDelta(db0, db1) / Math.max(1, answers.size) : NaN,
    failed,
  };
  log(
    `${topologyLabel[t.key]} throughput, ${endpoints} endpoint${endpoints > 1 ? "s" : ""}: ${r.uploads} uploads in ${r.uploadSeconds.toFixed(1)} s (${fmt(r.uploadRate)}/s), ` +
      `${r.distinct} of ${r.expected} events in ${r.endToEndSeconds.toFixed(1)} s (${fmt(r.eventRate)}/s), delay p50 ${fmt(r.p50)} ms p99 ${fmt(r.p99)} ms`,
  );
  return r;
}

// ---------------------------------------------------------------- report helpers

export const writeWebhooksSection = (file: string, section: string) => writeSection(file, WEBHOOKS_HEADING, section);

const la = (l: number[]) => l.map((x) => x.toFixed(2)).join(" / ");
const loadavg = () => readFileSync("/proc/loadavg", "utf8").trim();
const ratio = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : "–");
const verdict = (r: number) => (!Number.isFinite(r) ? "not measured" : r <= TARGET_RATIO ? "**met**" : "**not met**");
const range = (xs: number[]) => (xs.length ? `${Math.min(...xs)}–${Math.max(...xs)}` : "–");

async function describeSource(): Promise<string> {
  if (process.env.BENCH_SOURCE) return process.env.BENCH_SOURCE;
  const head = await run(["git", "-C", ROOT, "log", "-1", "--format=%h %s"]);
  if (head.code !== 0) return "not a git checkout";
  const dirty = (await run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "package.json", "bun.lock", "drizzle"])).stdout.trim();
  const subject = head.stdout.trim();
  return `commit ${subject.length > 90 ? `${subject.slice(0, 87)}…` : subject}${dirty ? ` + uncommitted changes in ${dirty.split("\n").length} files of src/, drizzle/ or the package files` : ""}`;
}

// ---------------------------------------------------------------- the run

export interface WebhookCellsResult {
  section: string;
  seconds: number;
}

/**
 * Runs the cells on servers of their own (the embedded default, and PostgreSQL when `pgUrl` answers) and returns the
 * BENCHMARKS.md section (heading included). Registers its servers, databases, receiver and temporary directory with
 * util.ts's cleanup; the caller runs `cleanup()` at the end.
 */
export async function runWebhookCells(opts: { quick: boolean; command: string; log?: (msg: string) => void; pgUrl?: string }): Promise<WebhookCellsResult> {
  const cfg = configFor(opts.quick);
  const started = performance.now();
  const log = opts.log ?? ((m: string) => console.log(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${m}`));
  const load0 = os.loadavg();
  log(`webhook cells${opts.quick ? " (--quick)" : ""}: /proc/loadavg at start: ${loadavg()}`);
  const source = await describeSource();

  const pgUrl = opts.pgUrl ?? (process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres");
  let pgVersion: string | null = null;
  let pgProblem = "";
  let monitor: postgres.Sql | null = null;
  {
    const c = postgres(pgUrl, { max: 1, connect_timeout: 3, onnotice: () => {} });
    try {
      pgVersion = (await c<{ v: string }[]>`select current_setting('server_version') as v`)[0]!.v;
      monitor = c;
      onCleanup("PostgreSQL monitor connection", () => c.end({ timeout: 1 }));
    } catch (e) {
      pgProblem = (e as Error).message;
      await c.end({ timeout: 1 }).catch(() => {});
    }
  }
  // the database's backends are read from /proc: only when PostgreSQL runs on this machine
  let backendsReadable = false;
  if (monitor) {
    const [me] = await monitor<{ pid: number }[]>`select pg_backend_pid() as pid`;
    backendsReadable = Number.isFinite(procCpuMs(Number(me!.pid), false));
  }
  const keys: Key[] = pgVersion ? ["emb", "pg"] : ["emb"];
  if (!pgVersion) log(`PostgreSQL not reachable (${pgProblem}): embedded only`);

  const dir = mkdtempSync(join(os.tmpdir(), "imghost-webhooks-"));
  chmodSync(dir, 0o755); // an embedded PostgreSQL run for root runs as the user postgres, who must reach DATA_DIR
  onCleanup(`remove ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
  const images = await makeImages(dir);
  const receiver = new Receiver();

  // ---- round trips, in a process of its own (on PostgreSQL when it answers, else the embedded one: the same SQL)
  log("counting database statements per upload and per delivery (a process of its own)…");
  let stmts: StmtResult | null = null;
  let stmtProblem = "";
  let stmtWhere = "";
  try {
    const database: DbRef = pgVersion ? { kind: "postgres", url: await freshDatabase(pgUrl, "imghost_webhooks_stmt") } : { kind: "embedded" };
    stmtWhere = pgVersion ? `PostgreSQL ${pgVersion}` : "the embedded PostgreSQL";
    stmts = await stmtChild(
      {
        database,
        dataDir: join(dir, "data-stmt"),
        bodyFile: images.png.bodyFile,
        contentType: images.png.contentType,
        uploads: cfg.stmtUploads,
        cpuBodyFile: images.jpeg.bodyFile,
        cpuContentType: images.jpeg.contentType,
        cpuRounds: cfg.rounds,
        cpuUploads: cfg.uploads,
      },
      240_000,
    );
    log(`statements: upload ${median(stmts.none.upload)} without an endpoint, ${median(stmts.one.upload)} with one; delivery ${median(stmts.one.delivery)} per event`);
  } catch (e) {
    const lines = (e as Error).message.split("\n");
    stmtProblem = lines.find((l) => /error/i.test(l))?.trim() ?? lines[0]!;
    log(`statements not counted: ${(e as Error).message}`);
  }

  // ---- servers
  const savedAllow = process.env.WEBHOOK_ALLOW;
  process.env.WEBHOOK_ALLOW = "127.0.0.1"; // the receiver is on loopback: the servers started below may post to it
  const topologies: Topology[] = [];
  try {
    for (const key of keys) {
      const dataDir = join(dir, `data-${key}`);
      const adminToken = Buffer.from(crypto.getRandomValues(new Uint8Array(30))).toString("base64url");
      const url = key === "pg" ? await freshDatabase(pgUrl, "imghost_webhooks") : undefined;
      const server = await startAppServer({ label: `webhooks (${topologyLabel[key]})`, dataDir, adminToken, databaseUrl: url });
      const accounts: Account[] = [];
      for (let i = 0; i < ACCOUNTS; i++) accounts.push(await createAccount(server, `hook${i}`));
      topologies.push({ key, server, accounts, dbName: url ? new URL(url).pathname.slice(1) : undefined });
      log(`${topologyLabel[key]}: server pid ${server.pid} on ${server.base}`);
    }
  } finally {
    if (savedAllow === undefined) delete process.env.WEBHOOK_ALLOW;
    else process.env.WEBHOOK_ALLOW = savedAllow;
  }
  const embeddedLog = topologies.find((t) => t.key === "emb")?.server.log() ?? "";
  const embedded = /Embedded PostgreSQL/i.test(embeddedLog) ? "embedded PostgreSQL (DATA_DIR/postgres)" : /embedded in/.test(embeddedLog) ? "PGlite (DATA_DIR/db)" : "the embedded default";

  // ---- 1. upload cost
  const cost = new Map<Key, CostRound[]>();
  const notes: string[] = [];
  for (const t of topologies) {
    const r = await costRounds(t, receiver, images.jpeg, t.key === "pg" && backendsReadable ? monitor : null, cfg, log);
    cost.set(t.key, r.rounds);
    notes.push(...r.notes);
  }

  // ---- 2. throughput
  const tput = new Map<Key, Tput[]>();
  for (const t of topologies) {
    const m = t.key === "pg" && backendsReadable ? monitor : null;
    const one = await throughput(t, receiver, images.png, 1, cfg.tputSeconds, cfg.tputMax, cfg.drainMs, m, log);
    const many = await throughput(t, receiver, images.png, 16, cfg.fanSeconds, cfg.fanMax, cfg.drainMs, m, log);
    tput.set(t.key, [one, many]);
  }
  for (const t of topologies) await t.server.stop();
  receiver.stop();

  // ---- the section
  const load1 = os.loadavg();
  const seconds = (performance.now() - started) / 1000;
  log(`webhook cells: /proc/loadavg at end: ${loadavg()}; ${seconds.toFixed(0)} s`);

  const costFig = (k: Key, kind: "none" | "one") => {
    const rs = cost.get(k)!.filter((r) => r.kind === kind);
    return { cpu: median(rs.map((r) => r.cpuMs)), db: median(rs.map((r) => r.dbCpuMs)), total: median(rs.map((r) => r.cpuMs + (Number.isFinite(r.dbCpuMs) ? r.dbCpuMs : 0))), p50: median(rs.map((r) => r.p50)) };
  };
  const cpuRows: string[][] = [];
  const verdicts: string[] = [];
  for (const t of topologies) {
    const a = costFig(t.key, "none");
    const b = costFig(t.key, "one");
    const withDb = Number.isFinite(a.db);
    cpuRows.push([
      `${topologyLabel[t.key]}${withDb ? " (server tree + database backends)" : " (server tree, its database included)"}`,
      fmt(a.total),
      fmt(b.total),
      ratio(b.total, a.total),
      verdict(b.total / a.total),
      fmt(a.p50),
      fmt(b.p50),
      ratio(b.p50, a.p50),
    ]);
    if (withDb) cpuRows.push([`${topologyLabel[t.key]}: the server's tree alone`, fmt(a.cpu), fmt(b.cpu), ratio(b.cpu, a.cpu), verdict(b.cpu / a.cpu), "", "", ""]);
    verdicts.push(
      `CPU of the upload and its delivery, ${topologyLabel[t.key]}: ${fmt(b.total)} ÷ ${fmt(a.total)} ms = ${ratio(b.total, a.total)} — ${verdict(b.total / a.total)} (target ≤ ${TARGET_RATIO}×); ` +
        `the difference, ${fmt(b.total - a.total)} ms, is what one delivered event costs (the deliveries written with the upload, the attempt, its record, the queue's work${withDb || t.key === "emb" ? ", the database's included" : ""})`,
    );
  }
  // the upload alone (its deliveries written, none sent), from the statement worker's process
  let aloneNote = "";
  if (stmts?.uploadAlone.length) {
    const of = (kind: "none" | "enqueue") => median(stmts!.uploadAlone.filter((r) => r.kind === kind).map((r) => r.ms));
    const a = of("none");
    const b = of("enqueue");
    cpuRows.push([`${stmtWhere}: **the upload alone** (its delivery written, not sent)`, fmt(a), fmt(b), ratio(b, a), verdict(b / a), "", "", ""]);
    verdicts.unshift(
      `CPU of the upload itself, ${stmtWhere}: ${fmt(b)} ÷ ${fmt(a)} ms = ${ratio(b, a)} — ${verdict(b / a)} (target ≤ ${TARGET_RATIO}×): what a subscriber adds to the upload — ` +
        `its delivery row and job written in the upload's one statement; the sending, done after the answer by the queue, is in the lines below`,
    );
    aloneNote =
      `- **the upload alone**: in the statement counter's process (below), with its webhook queue stopped, so that an endpoint's deliveries are written with each upload and none is sent; ` +
      `${stmts.uploadAlone.length} rounds alternating none / with an endpoint (${stmts.uploadAlone.map((r) => r.kind).join(", ")}), ${cfg.uploads} uploads each of the same JPEG; ` +
      `CPU of that process's tree (the app, its decode process, the uploading client) plus the run database's backends. Every round: ${stmts.uploadAlone.map((r) => `${r.kind} ${fmt(r.ms)}`).join(" · ")} ms.\n`;
  }
  const perRound = markdownTable(
    ["topology", ...Array.from({ length: cfg.rounds }, (_, i) => `round ${i + 1}`)],
    topologies.map((t) => [
      topologyLabel[t.key],
      ...cost.get(t.key)!.map((r) => `${r.kind === "one" ? "one" : "none"}: ${fmt(r.cpuMs)}${Number.isFinite(r.dbCpuMs) ? ` + ${fmt(r.dbCpuMs)} db` : ""} ms, p50 ${fmt(r.p50)} ms${r.kind === "one" ? `, last event ${fmt(r.waitMs)} ms after the last answer` : ""}`),
    ]),
    "left",
  );

  let stmtTable = "";
  let stmtText = "";
  if (stmts) {
    const up0 = median(stmts.none.upload);
    const up1 = median(stmts.one.upload);
    const del0 = median(stmts.none.delivery);
    const del1 = median(stmts.one.delivery);
    const tot0 = up0 + del0;
    const tot1 = up1 + del1;
    stmtTable = markdownTable(
      ["database statements per upload", "no endpoint", "one endpoint", "÷", `≤ ${TARGET_RATIO}×`],
      [
        ["the upload request's own", `${fmt(up0)} (${range(stmts.none.upload)})`, `${fmt(up1)} (${range(stmts.one.upload)})`, ratio(up1, up0), verdict(up1 / up0)],
        [
          "the delivery's (queue, attempt, record)",
          `${fmt(del0)} (${range(stmts.none.delivery)})`,
          `${fmt(del1)} (${range(stmts.one.delivery)}): ${fmt(median(stmts.one.deliveryApp))} by the tasks (postgres.js) + ${fmt(median(stmts.one.deliveryQueue))} by graphile-worker (pg)`,
          "",
          "",
        ],
        ["total: upload and its delivery", fmt(tot0), fmt(tot1), ratio(tot1, tot0), "(reported)"],
      ],
    );
    verdicts.push(`database round trips of the upload request: ${ratio(up1, up0)} — ${verdict(up1 / up0)}`);
    // no queue delivers in under one statement of its own, so the bar is the upload's; the delivery's are reported
    verdicts.push(
      `database round trips including the delivery's: ${ratio(tot1, tot0)}, reported (${fmt(del1)} statements per delivered event, after the upload's answer: ` +
        `the job's fetch and completion by graphile-worker, the attempt's one read and one record)`,
    );
    stmtText = `<details><summary>the statements of one upload with an endpoint, then of its delivery (in order; "upload": the request's postgres.js client, "task": the webhook tasks' postgres.js client, "queue (pg)": graphile-worker's pool)</summary>

\`\`\`
${[...stmts.uploadSample, "--- delivery ---", ...stmts.sample].join("\n")}
\`\`\`

</details>`;
  } else verdicts.push(`database round trips: not counted (${stmtProblem})`);

  const tputRows = topologies.flatMap((t) =>
    tput.get(t.key)!.map((r) => [
      `${topologyLabel[t.key]}, ${r.endpoints} endpoint${r.endpoints > 1 ? "s" : ""}`,
      `${r.uploads} in ${r.uploadSeconds.toFixed(1)} s`,
      fmt(r.uploadRate),
      `${r.distinct} of ${r.expected}`,
      fmt(r.eventRate),
      fmt(r.drainRate),
      fmt(r.afterRate),
      fmt(r.p50),
      fmt(r.p99),
      r.missing === 0 && r.duplicates === 0 && r.failed === 0 ? "yes" : `**no**: ${r.missing} missing, ${r.duplicates} duplicates${r.failed ? `, ${r.failed} uploads failed` : ""}`,
      Number.isFinite(r.dbCpuPerUpload) ? `${fmt(r.cpuPerUpload + r.dbCpuPerUpload)} (${fmt(r.dbCpuPerUpload)} db)` : fmt(r.cpuPerUpload),
    ]),
  );
  const backlog = topologies.flatMap((t) =>
    tput
      .get(t.key)!
      .filter((r) => r.endpoints === 1 && r.eventRate < 0.9 * r.uploadRate)
      .map(
        (r) =>
          `${topologyLabel[t.key]}, one endpoint: uploads (${fmt(r.uploadRate)}/s) came faster than one endpoint's deliveries (${fmt(r.drainRate)}/s at most ${PER_ENDPOINT} at once): ` +
          `the events queued, so the delay is mostly the queue's and grows with the burst's length; the last delivery arrived ${fmt(r.endToEndSeconds - r.uploadSeconds)} s after the last upload's answer.`,
      ),
  );
  const cpus = os.cpus();
  const busy = Math.max(load0[0]!, load1[0]!) > os.availableParallelism();
  const section = `${WEBHOOKS_HEADING}

Generated by \`${opts.command}\` (scripts/bench/webhooks.ts) — rewritten by each run. Benchmarks print figures; nothing here is asserted. The bar (issue 19): an upload with one subscribed endpoint costs at most **${TARGET_RATIO}×** the CPU and round trips of one without; delivery throughput at c=16 to a fast local receiver is reported.

| | |
|---|---|
| date | ${new Date().toISOString()} |
| command | \`${opts.command}\`${opts.quick ? " (quick: fewer rounds and uploads, shorter throughput cells)" : ""} |
| code measured | ${source.replace(/\|/g, "\\|")} |
| machine | ${os.availableParallelism()} cores, ${cpus[0]?.model.trim() ?? "?"}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.platform()} ${os.release()} |
| load average (/proc/loadavg: 1 / 5 / 15 min) | ${la(load0)} at start, ${la(load1)} at the end${busy ? " — **busy machine (other engineers' tests): absolute figures are noisy; the ratios come from interleaved rounds**" : ""} |
| software | Bun ${Bun.version}, PostgreSQL ${pgVersion ?? `not reachable (${pgProblem})`}; embedded default: ${embedded} |
| server | \`${Object.entries(serverScriptEnv()).map(([k, v]) => `${k}=${v} `).join("")}WEBHOOK_ALLOW=127.0.0.1 bun run src/server.ts\`, fresh DATA_DIR per topology, WEBHOOK_CONCURRENCY ${process.env.WEBHOOK_CONCURRENCY ?? `${WEBHOOK_CONCURRENCY_DEFAULT} (default)`}, ${PER_ENDPOINT} deliveries at once per endpoint (src/webhooks/settings.ts) |
| receiver | Bun.serve in the bench's process on 127.0.0.1, answering 200 at once (the body read for the image key, nothing verified) |
| run time | ${seconds.toFixed(0)} s |

### Verdict

${verdicts.map((v) => `- ${v}`).join("\n")}

### Upload cost: no endpoint vs one subscribed endpoint

${markdownTable(["CPU ms per upload (median of rounds)", "no endpoint", "one endpoint", "÷", `≤ ${TARGET_RATIO}×`, "p50 ms, none", "p50 ms, one", "÷"], cpuRows)}

- ${cfg.rounds} rounds per topology alternating none / one (${cost.get(topologies[0]!.key)!.map((r) => r.kind).join(", ")}), ${cfg.uploads} uploads each of the ${images.jpeg.label} ${kb(images.jpeg)} JPEG (noise, quality 45), one after the other (c=1), one account. Before a "one" round a site-wide endpoint subscribed to \`image.uploaded\` is made through \`POST /api/admin/webhooks\`; after it, deleted (\`DELETE /api/admin/webhooks/{id}\`); the endpoint's creation and deletion fall outside the measured window.
- **CPU**: user + system time, from /proc, of the server process and every process below it (its decode process; for the embedded default, the PostgreSQL server's processes), reaped children included, read before the round's first upload and once the receiver had every event of the round (+250 ms for the delivery's record): the asynchronous delivery work (delivery job, signing, the POST, the record, graphile-worker's fetches) is charged to the uploads. ${topologies.some((t) => t.key === "pg") ? (backendsReadable ? "For PostgreSQL, the database's backends serving the run's database (pg_stat_activity's pids, their /proc/PID/stat) are added: the server's pool and graphile-worker's pool; the PostgreSQL server's shared background processes are not." : "For PostgreSQL, the database's backends were not readable from /proc (another machine?): the server's tree only.") : ""} The receiver's CPU is not counted (it runs in the bench's process).
- **p50**: the upload's answer time (the delivery is after the answer: it adds no wait).
${aloneNote}
<details><summary>every round</summary>

${perRound}

</details>

### Database round trips per upload

${stmts ? `${stmtTable}

Median per upload over ${cfg.stmtUploads} (after two warm uploads; the range in brackets), a small PNG, counted on ${stmtWhere} in a process of its own (this file with \`--worker\`): the app built as src/server.ts builds it behind Bun.serve, and the webhook queue (\`startQueue\`, concurrency ${WEBHOOK_CONCURRENCY_DEFAULT}) with a postgres.js client of its own; each client's \`debug\` hook counts the statements it sends (BEGIN and COMMIT included), and graphile-worker's node-postgres statements are counted by wrapping \`pg.Client#query\`. The upload request's statements are counted until 20 ms after its answer; the delivery's, until no job and no pending delivery is left (+100 ms, so that the workers' next empty fetch counts). The event costs the upload no statement of its own: \`eventStatement\` (\`webhook_enqueue\`) is part of the upload's record statement (it writes the delivery and its job only when an enabled endpoint wants the event). With no endpoint, the delivery column is the background in the same windows (graphile-worker's idle polls every 2 s, the heartbeat every 30 s).

${stmtText}` : `Not counted: ${stmtProblem}`}

### Delivery throughput, ${UPLOADERS} uploaders at once

${markdownTable(["cell", "uploads", "uploads/s", "deliveries received", "deliveries/s end to end", "deliveries/s, first to last", "deliveries/s after the uploads", "delay p50 ms", "delay p99 ms", "each exactly once", "CPU ms per upload"], tputRows)}

- ${UPLOADERS} uploaders (fetch from the bench's process, ${ACCOUNTS} accounts in turn) of the ${images.png.label} ${kb(images.png)} PNG for ${cfg.tputSeconds} s (at most ${cfg.tputMax} uploads) with one endpoint; for ${cfg.fanSeconds} s (at most ${cfg.fanMax}) with 16 endpoints, each receiving every event (16 deliveries per upload). Then up to ${cfg.drainMs / 1000} s for the remaining events.
- **deliveries/s end to end**: distinct deliveries received (one per upload and endpoint) ÷ the time from the first upload's start to the last one's arrival; **first to last**: the same over the receiver's window alone; **after the uploads**: those that arrived after the last upload's answer ÷ the time from that answer to the last arrival (the queue's backlog alone, the uploaders quiet; – when fewer than 10 were left). **delay**: from an upload's answer to its event's arrival at the receiver (all endpoints' deliveries counted with 16). **exactly once**: distinct (endpoint, \`webhook-id\`) pairs against answered uploads × endpoints, and no repeats.
- The bounds: one endpoint gets at most ${PER_ENDPOINT} deliveries at once from an instance; all endpoints together at most WEBHOOK_CONCURRENCY (${WEBHOOK_CONCURRENCY_DEFAULT}) jobs at once. **CPU ms per upload**: the server's tree (database included for the embedded default; for PostgreSQL, plus its backends as above, "db") from the first upload to the last event, per upload: the upload, and one or 16 deliveries.
- Without a backlog (the cost rounds above, c=1), the last event of a round arrived ${topologies.map((t) => `${fmt(median(cost.get(t.key)!.filter((r) => r.kind === "one").map((r) => r.waitMs)))} ms (${topologyLabel[t.key]})`).join(" and ")} after the round's last answer (median of rounds).
${backlog.length ? `- ${backlog.join("\n- ")}\n` : ""}
### Notes

${notes.length ? notes.map((n) => `- ${n}`).join("\n") : "- every event of the cost rounds arrived"}
- One run on a ${os.availableParallelism()}-core machine shared with other engineers' test suites: the rounds interleave none and one so a busy period hits both; a single round moves by tens of percent.
`;
  return { section, seconds };
}

// ---------------------------------------------------------------- standalone

const standalone = () => standaloneSection({ name: "webhooks", budgets: WEBHOOK_CELLS_BUDGET_S, run: runWebhookCells, write: writeWebhooksSection });

if (import.meta.main) {
  const w = process.argv.indexOf("--worker");
  if (w >= 0) {
    const result = await countStatements(JSON.parse(process.argv[w + 1]!) as StmtJob);
    console.log(`WEBHOOKSJSON ${JSON.stringify(result)}`);
    process.exit(0);
  } else await standalone();
}
