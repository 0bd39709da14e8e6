/**
 * The benchmark's work that runs in a process of its own, never in the measured servers nor beside the load generator:
 *
 *   bun scripts/bench/worker.ts '<job JSON>'   one job (seeding rows, counting statements); prints `RESULT <json>`
 *   bun scripts/bench/worker.ts --ipc          the floors, over IPC: the same functions the server calls, in-process
 *                                              (libvips' cache off as in the server's decode processes)
 */
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import pg from "pg";
import postgres from "postgres";
import sharp from "sharp";
import { createApp } from "../../src/app.ts";
import { openDatabase } from "../../src/bootstrap.ts";
import * as schema from "../../src/db/schema.ts";
import type { Deps } from "../../src/deps.ts";
import { loadEnv } from "../../src/env.ts";
import { avifOptions } from "../../src/images/avif.ts";
import { decodeAndThumbnail, encodeVariant, inspectImage } from "../../src/images/inspect.ts";
import { applyMetadataPolicy } from "../../src/images/metadata/policy.ts";
import { objectHandler } from "../../src/routes/site/serve-object.ts";
import { buildServices } from "../../src/services/index.ts";
import { StorageRegistry } from "../../src/storage/index.ts";
import { startQueue } from "../../src/webhooks/queue.ts";
import { resolveWebhookKey, secretBox } from "../../src/webhooks/secret-box.ts";
import { psnr, ssim } from "../../test/support/photos.ts";
import { cpuMs, processTree } from "../../test/support/proc.ts";

export type DbRef = { kind: "postgres"; url: string } | { kind: "embedded" };
const MAX_PIXELS = 100_000_000; // the default group's limit
const rowsOf = <T>(r: unknown) => (Array.isArray(r) ? r : (r as { rows: unknown[] }).rows) as T[];
/** The database as the server opens it, whatever the embedded default is (the same lock on DATA_DIR). */
const envOf = (database: DbRef, dataDir: string) =>
  loadEnv({ DATA_DIR: dataDir, LOG_LEVEL: "warn", WEBHOOK_ALLOW: "127.0.0.1", ...(database.kind === "postgres" ? { DATABASE_URL: database.url } : {}) });
const openDb = (database: DbRef, dataDir: string) => openDatabase(envOf(database, dataDir));

// ---------------------------------------------------------------- seeding (the embedded database with its server stopped)

/** The statements of scripts/bench/sql/NAME.sql, each with its {{placeholders}} filled (numbers and names the bench chose). */
async function runSql(db: Awaited<ReturnType<typeof openDb>>["db"], name: string, values: Record<string, string | number>) {
  const text = readFileSync(join(import.meta.dir, "sql", `${name}.sql`), "utf8").replace(/\{\{(\w+)\}\}/g, (_, k: string) => String(values[k]));
  for (const statement of text.replace(/^--.*$/gm, "").split(/;\s*$/m)) if (statement.trim()) await db.execute(sql.raw(statement));
}

/** Image rows of listing accounts (sql/seed-listing.sql), then ANALYZE. */
async function seedListing(job: { database: DbRef; dataDir: string; accounts: { userId: number; tag: string; count: number }[] }) {
  const database = await openDb(job.database, job.dataDir);
  const t0 = performance.now();
  try {
    for (const account of job.accounts) await runSql(database.db, "seed-listing", account);
    await database.db.execute(sql`analyze images`);
    await database.db.execute(sql`checkpoint`).catch(() => {}); // superuser only; the embedded server's writes reach disk before it stops
  } finally {
    await database.close();
  }
  return { ms: performance.now() - t0 };
}

/** The user center at scale (sql/seed-pages.sql), VACUUM ANALYZE, and what the rows hold. */
async function seedPages(job: {
  database: DbRef;
  dataDir: string;
  ownerId: number;
  users: number;
  images: number;
  albums: number;
  words: Record<string, string>;
}) {
  const database = await openDb(job.database, job.dataDir);
  const t0 = performance.now();
  const db = database.db;
  try {
    await db.transaction((tx) =>
      runSql(tx as unknown as typeof db, "seed-pages", { owner: job.ownerId, users: job.users, images: job.images, albums: job.albums }),
    );
    for (const table of ["images", "users", "albums"]) await db.execute(sql.raw(`vacuum analyze ${table}`));
    await db.execute(sql`checkpoint`).catch(() => {});
    const albums = rowsOf<{ id: number; images: number }>(
      await db.execute(
        sql`select a.id, (select count(*)::int from images i where i.album_id = a.id) as images from albums a where a.user_id = ${job.ownerId} order by a.id`,
      ),
    ).map((a) => ({ id: Number(a.id), images: Number(a.images) }));
    const [common, rare, user] = [job.words.common, job.words.rare, job.words.user].map((w) => `%${w}%`);
    const [f] = rowsOf<Record<string, number>>(
      await db.execute(sql`
        select count(*) filter (where album_id is null)::int as none, count(*) filter (where not is_public)::int as private,
               count(*) filter (where origin_name ilike ${common})::int as common, count(*) filter (where origin_name ilike ${rare})::int as rare,
               (select count(*)::int from users) as users,
               (select count(*)::int from users where username ilike ${user} or name ilike ${user} or email ilike ${user}) as matching
        from images where user_id = ${job.ownerId}`),
    );
    return { ms: performance.now() - t0, albums, ...Object.fromEntries(Object.entries(f!).map(([k, v]) => [k, Number(v)])) };
  } finally {
    await database.close();
  }
}

// ---------------------------------------------------------------- statements per upload and per delivery

/**
 * The app and the webhook queue built as src/server.ts builds them, behind Bun.serve on a loopback port, each with a
 * postgres.js client of its own whose `debug` hook counts the statements it sends (BEGIN and COMMIT included);
 * graphile-worker's node-postgres statements are counted by wrapping pg.Client#query. Uploads one after the other:
 * the first of a fresh account, then `uploads` without an endpoint; with `webhooks`, `uploads` more with one endpoint
 * (and their deliveries' statements), then the CPU per upload of the photo with the queue stopped: an endpoint's
 * deliveries written with each upload and none sent, against none.
 */
async function statements(job: {
  database: DbRef;
  dataDir: string;
  bodyFile: string;
  contentType: string;
  uploads: number;
  webhooks?: { bodyFile: string; contentType: string; rounds: number; uploads: number };
}) {
  const env = envOf(job.database, job.dataDir);
  const database = await openDatabase(env);
  const connection = database.connection!;
  let queueLog: string[] = [];
  const query = pg.Client.prototype.query;
  (pg.Client.prototype as { query: unknown }).query = function (this: unknown, ...args: unknown[]) {
    const q = args[0] as string | { text?: string } | undefined;
    if (typeof q === "string" ? q : q?.text) queueLog.push(`queue (pg): ${(typeof q === "string" ? q : q!.text!).replace(/\s+/g, " ").trim()}`);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  };
  const client = (sink: () => string[], who: string, max = 10) => {
    const options = { max, onnotice: () => {}, debug: (_c: number, q: string) => sink().push(`${who}: ${q.replace(/\s+/g, " ").trim()}`) };
    return typeof connection === "string" ? postgres(connection, options) : postgres({ ...connection, ...options });
  };
  let appLog: string[] = [];
  let taskLog: string[] = [];
  const appClient = client(() => appLog, "upload");
  const taskClient = client(() => taskLog, "task");
  const plain = client(() => [], "plain", 1);
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(null, { status: 503 }) });
  const base = `http://127.0.0.1:${server.port}`;
  const adminToken = `stmt-${crypto.randomUUID()}-${crypto.randomUUID()}`;
  const config = {
    baseUrl: base,
    dataDir: job.dataDir,
    adminToken,
    trustedProxies: 0,
    webhooks: { box: secretBox(resolveWebhookKey(undefined, job.dataDir)), allow: env.WEBHOOK_ALLOW },
  };
  const storage = new StorageRegistry({ dataDir: job.dataDir, baseUrl: base });
  const deps = (c: postgres.Sql): Deps => ({ db: drizzle(c, { schema }) as unknown as Deps["db"], storage, config, clock: () => new Date() });
  const appDeps = deps(appClient);
  const services = buildServices(appDeps);
  const app = createApp(appDeps, services);
  server.reload({ routes: { "/i/*": objectHandler(appDeps, services.objects) }, fetch: app.fetch });
  let arrivals = 0;
  const receiver = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: async (req) => (await req.arrayBuffer(), arrivals++, new Response(null)) });
  const queue = await startQueue(deps(taskClient), connection, { concurrency: 8 });
  const call = async (method: string, path: string, body?: unknown, token = adminToken, type = "application/json") => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": type },
      body: body instanceof ArrayBuffer ? body : JSON.stringify(body ?? {}),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${method} ${path} → ${res.status} ${text.slice(0, 300)}`);
    return (JSON.parse(text) as { data: any }).data;
  };
  try {
    const name = `stmt_${crypto.randomUUID().slice(0, 8)}`;
    const user = await call("POST", "/api/admin/users", { username: name, email: `${name}@bench.invalid`, capacity_kb: 1_000_000_000 });
    const { token } = await call("POST", `/api/admin/users/${user.id}/tokens`);
    const body = await Bun.file(job.bodyFile).arrayBuffer();
    const upload = (file = body, type = job.contentType) => call("POST", "/api/v1/upload", file, token, type);
    /** Until no webhook job is left and every delivery is settled, then a little for the workers' next fetch. */
    const settled = async () => {
      for (const deadline = performance.now() + 30_000; ; await Bun.sleep(10)) {
        const [r] = await plain<
          { n: number }[]
        >`select (select count(*)::int from graphile_worker._private_jobs) + (select count(*)::int from webhook_deliveries where status = 'pending') as n`;
        if (r!.n === 0) break;
        if (performance.now() > deadline) throw new Error("deliveries not settled within 30 s");
      }
      await Bun.sleep(100);
    };
    const short = (q: string) => (q.length > 130 ? `${q.slice(0, 127)}…` : q);
    const measure = async (events: number) => {
      appLog = [];
      taskLog = [];
      queueLog = [];
      const before = arrivals;
      await upload();
      await Bun.sleep(20); // what runs after the answer is sent still counts
      const uploadLog = appLog.map(short);
      for (const deadline = performance.now() + 30_000; arrivals < before + events; await Bun.sleep(5))
        if (performance.now() > deadline) throw new Error("the event did not arrive within 30 s");
      if (events) await settled();
      return { upload: uploadLog.length, uploadLog, task: taskLog.length, queue: queueLog.length, deliveryLog: [...taskLog, ...queueLog].map(short) };
    };
    const cold = (await measure(0)).upload; // nothing of this account cached yet
    await upload();
    await settled();
    const none = [];
    for (let i = 0; i < job.uploads; i++) none.push(await measure(0));
    const result = { cold, none, one: [] as Awaited<ReturnType<typeof measure>>[], alone: [] as { kind: "none" | "enqueue"; ms: number }[] };
    if (!job.webhooks) return result;
    const endpoint = await call("POST", "/api/admin/webhooks", { url: `http://127.0.0.1:${receiver.port}/`, events: ["image.uploaded"] });
    await measure(1); // the endpoint's first delivery
    for (let i = 0; i < job.uploads; i++) result.one.push(await measure(1));
    // the upload alone: the queue stopped, the endpoint enabled in "enqueue" rounds (its deliveries written, none sent)
    await queue.stop();
    const photo = await Bun.file(job.webhooks.bodyFile).arrayBuffer();
    for (let i = 0; i < 3; i++) await upload(photo, job.webhooks.contentType);
    const dbName = (await plain<{ db: string }[]>`select current_database() as db`)[0]!.db;
    const backends = async () =>
      (await plain<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${dbName}`).reduce((s, r) => s + (cpuMs(Number(r.pid)) || 0), 0);
    const tree = () => processTree(process.pid).reduce((s, p) => s + (cpuMs(p, true) || 0), 0);
    for (let r = 0; r < job.webhooks.rounds; r++) {
      const kind = (["none", "enqueue", "enqueue", "none"] as const)[r % 4]!;
      await plain`update webhook_endpoints set enabled = ${kind === "enqueue"} where id = ${endpoint.id}`;
      const c0 = tree() + (await backends());
      for (let i = 0; i < job.webhooks.uploads; i++) await upload(photo, job.webhooks.contentType);
      result.alone.push({ kind, ms: (tree() + (await backends()) - c0) / job.webhooks.uploads });
    }
    return result;
  } finally {
    await queue.stop().catch(() => {});
    receiver.stop(true);
    server.stop(true);
    for (const c of [appClient, taskClient, plain]) await c.end({ timeout: 5 });
    await database.close();
  }
}

// ---------------------------------------------------------------- the floors (IPC)

async function writeDurable(path: string, bytes: Uint8Array) {
  const file = await open(path, "wx");
  await file
    .writeFile(bytes)
    .then(() => file.sync())
    .finally(() => file.close());
}
const processCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** What an upload cannot avoid: sniff and header, one decode with the thumbnail, md5 + sha1, the object and thumbnail written and fsynced. */
async function uploadFloor(job: { file: string; extension: string; concurrency: number; seconds: number; dir: string }) {
  const bytes = new Uint8Array(readFileSync(job.file));
  const dir = join(job.dir, `floor-${process.pid}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  let seq = 0;
  const latencies: number[] = [];
  const cpu0 = processCpu();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: job.concurrency }, async () => {
      while (performance.now() < t0 + job.seconds * 1000) {
        const s = performance.now();
        const name = join(dir, String(seq++));
        const inspection = await inspectImage(bytes);
        if (!inspection) throw new Error("inspectImage refused the benchmark image");
        const thumbnail = await decodeAndThumbnail(bytes, inspection, inspection.sniffedMime ?? "", MAX_PIXELS);
        new Bun.CryptoHasher("md5").update(bytes).digest("hex");
        new Bun.CryptoHasher("sha1").update(bytes).digest("hex");
        await writeDurable(`${name}.${job.extension}`, bytes);
        if (thumbnail) await writeDurable(`${name}.webp`, thumbnail);
        latencies.push(performance.now() - s);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = processCpu() - cpu0;
  rmSync(dir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)]!;
  return { rate: latencies.length / seconds, p50: pct(0.5), p99: pct(0.99), errors: 0, cpuMs: cpu / Math.max(1, latencies.length), accepted: latencies.length };
}

/** The thumbnail study's decodes: (a) today's decode + 400-px WebP thumbnail, (b) full decode, (c) header only, (d) shrink-on-load to 400 px. */
export const STUDY = {
  a: (b: Buffer) =>
    sharp(b, { failOn: "error", pages: 1 }).rotate().resize(400, 400, { fit: "inside", withoutEnlargement: true }).webp({ quality: 80 }).toBuffer(),
  b: (b: Buffer) => sharp(b, { failOn: "error", pages: 1 }).raw().toBuffer(),
  c: (b: Buffer) =>
    sharp(b)
      .metadata()
      .then(() => Buffer.alloc(0)),
  d: (b: Buffer) => sharp(b, { failOn: "error" }).resize(400, 400, { fit: "inside" }).raw().toBuffer(),
};
type StudyOp = keyof typeof STUDY;

/** `rounds` interleaved runs of each `fns` entry (the order rotated each round, a full GC before each): median CPU and wall ms, the last output. */
async function interleaved(fns: Record<string, () => Promise<Buffer>>, rounds: number) {
  const names = Object.keys(fns);
  const out: Record<string, { cpu: number[]; wall: number[]; last: Buffer }> = {};
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(r + k) % names.length]!;
      Bun.gc(true);
      const c0 = processCpu();
      const t0 = performance.now();
      const last = await fns[name]!();
      const o = (out[name] ??= { cpu: [], wall: [], last });
      o.wall.push(performance.now() - t0);
      o.cpu.push(processCpu() - c0);
      o.last = last;
    }
  }
  const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  return Object.fromEntries(Object.entries(out).map(([n, o]) => [n, { cpu: mid(o.cpu), wall: mid(o.wall), last: o.last }]));
}

type FloorJob =
  | ({ op: "upload" } & Parameters<typeof uploadFloor>[0])
  | { op: "variant"; file: string; width: number; format: "webp" | "avif" }
  | { op: "study"; file: string; iterations: number; damaged: Record<string, string> }
  | { op: "strip"; file: string; iterations: number }
  | { op: "avif"; file: string; rounds: number; efforts: number[] };

async function floor(job: FloorJob): Promise<unknown> {
  if (job.op === "upload") return uploadFloor(job);
  if (job.op === "variant") {
    const c0 = processCpu();
    const t0 = performance.now();
    const out = await encodeVariant(job.file, {
      width: job.width,
      format: job.format,
      quality: job.format === "webp" ? 80 : 50,
      maxPixels: MAX_PIXELS,
      animated: false,
    });
    return { ms: performance.now() - t0, cpu: processCpu() - c0, bytes: out.byteLength };
  }
  if (job.op === "study") {
    const buf = readFileSync(job.file);
    for (const op of Object.values(STUDY)) await op(buf); // warm-up
    const m = await interleaved(Object.fromEntries(Object.entries(STUDY).map(([n, f]) => [n, () => f(buf)])), job.iterations);
    const detect: Record<string, Record<string, string>> = {};
    for (const [label, file] of Object.entries(job.damaged)) {
      for (const [op, f] of Object.entries(STUDY)) {
        (detect[label] ??= {})[op] = await f(readFileSync(file)).then(
          () => "accepted",
          (e: Error) => `rejected: ${e.message.split("\n")[0]!.slice(0, 90)}`,
        );
      }
    }
    return {
      cpu: Object.fromEntries(Object.entries(m).map(([n, x]) => [n, x.cpu])) as Record<StudyOp, number>,
      wall: Object.fromEntries(Object.entries(m).map(([n, x]) => [n, x.wall])),
      detect,
    };
  }
  if (job.op === "strip") {
    const bytes = new Uint8Array(readFileSync(job.file));
    applyMetadataPolicy(bytes, "image/jpeg", "strip_location");
    const c0 = processCpu();
    for (let i = 0; i < job.iterations; i++) applyMetadataPolicy(bytes, "image/jpeg", "strip_location");
    return { cpu: (processCpu() - c0) / job.iterations };
  }
  // encodeVariant's pipeline at the image's own width: WebP q80 and AVIF q50 at each effort, against its raw pixels before encoding
  const input = readFileSync(job.file);
  const width = (await sharp(input).metadata()).autoOrient?.width;
  const pipeline = () =>
    sharp(input, { limitInputPixels: MAX_PIXELS, failOn: "error", pages: 1 }).rotate().resize({ width, withoutEnlargement: true }).keepIccProfile();
  const reference = await pipeline().removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const encoders: Record<string, () => Promise<Buffer>> = { "WebP q80": () => pipeline().webp({ quality: 80 }).toBuffer() };
  for (const e of job.efforts) encoders[`AVIF q50 effort ${e}`] = () => pipeline().avif(avifOptions(50, e)).toBuffer();
  const m = await interleaved(encoders, job.rounds);
  const rows = [];
  for (const [encoder, x] of Object.entries(m)) {
    const decoded = await sharp(x.last).removeAlpha().raw().toBuffer();
    const { width: w, height: h } = reference.info;
    rows.push({
      encoder,
      effort: encoder.startsWith("AVIF") ? Number(encoder.split(" ").pop()) : null,
      cpuMs: x.cpu,
      wallMs: x.wall,
      bytes: x.last.byteLength,
      psnr: psnr(reference.data, decoded),
      ssim: ssim(reference.data, decoded, w, h),
    });
  }
  return { width: reference.info.width, height: reference.info.height, rows };
}

if (import.meta.main) {
  if (process.argv[2] === "--ipc") {
    sharp.cache(false); // as the server's decode processes
    process.on("message", (job: FloorJob) =>
      floor(job).then(
        (result) => process.send!({ ok: true, result }),
        (e: Error) => process.send!({ ok: false, error: e.stack ?? String(e) }),
      ),
    );
    process.on("disconnect", () => process.exit(0));
    process.send!({ ready: true });
  } else {
    const job = JSON.parse(process.argv[2]!) as { op: string };
    const jobs: Record<string, (j: any) => Promise<unknown>> = { "seed-listing": seedListing, "seed-pages": seedPages, statements };
    console.log(`RESULT ${JSON.stringify(await jobs[job.op]!(job))}`);
    process.exit(0);
  }
}
