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

/** Image rows of listing accounts: one INSERT … SELECT generate_series each, then ANALYZE. */
async function seedListing(job: { database: DbRef; dataDir: string; accounts: { userId: number; tag: string; count: number }[] }) {
  const database = await openDb(job.database, job.dataDir);
  const t0 = performance.now();
  try {
    for (const { userId, tag, count } of job.accounts) {
      await database.db.execute(sql`
        insert into images (key, user_id, strategy_id, path, thumbnail_path, name, origin_name, size, mimetype,
                            extension, width, height, md5, sha1, is_public, uploader_ip, created_at)
        select ${tag} || '-' || g, ${userId}, 1, '2024/01/01/' || ${tag} || '-' || g || '.png', null, ${tag} || '-' || g || '.png',
               'shot.png', 2048, 'image/png', 'png', 300, 200, md5(g::text), md5(g::text) || '01234567', true, '127.0.0.1',
               timestamptz '2024-01-01 00:00:00+00' - g * interval '1 second'
        from generate_series(1, ${count}) as g`);
      await database.db.execute(sql`update users set image_num = image_num + ${count}, used_bytes = used_bytes + ${count * 2048} where id = ${userId}`);
    }
    await database.db.execute(sql`analyze images`);
    await database.db.execute(sql`checkpoint`).catch(() => {}); // superuser only; the embedded server's writes reach disk before it stops
  } finally {
    await database.close();
  }
  return { ms: performance.now() - t0 };
}

const FIRST = [
  "Aiko",
  "Akira",
  "Anna",
  "Ben",
  "Carlos",
  "Chen",
  "David",
  "Elena",
  "Fatima",
  "Hiro",
  "Ines",
  "James",
  "Julia",
  "Kenji",
  "Lena",
  "Liam",
  "Maria",
  "Mei",
  "Noah",
  "Olga",
  "Omar",
  "Priya",
  "Ravi",
  "Sara",
  "Sofia",
  "Tom",
  "Yuki",
  "Zoe",
];
const LAST = [
  "Tanaka",
  "Suzuki",
  "Sato",
  "Smith",
  "Garcia",
  "Müller",
  "Rossi",
  "Kim",
  "Nguyen",
  "Silva",
  "Novak",
  "Cohen",
  "Patel",
  "Dubois",
  "Jensen",
  "Ivanova",
];
const WORDS = [
  "beach",
  "sunset",
  "cat",
  "dog",
  "family",
  "birthday",
  "hiking",
  "city",
  "garden",
  "concert",
  "dinner",
  "mountain",
  "lake",
  "snow",
  "party",
  "wedding",
  "receipt",
  "whiteboard",
  "diagram",
  "meme",
];
const ALBUM_NAMES = [
  "Holidays",
  "Family",
  "Screenshots",
  "Work",
  "Receipts",
  "Cats",
  "Garden",
  "Concerts",
  "Hiking",
  "Wedding",
  "Japan 2024",
  "Memes",
  "Diagrams",
  "City walks",
  "Food",
  "Snow",
  "Lake house",
  "Birthdays",
  "Archive",
  "Misc",
];
const textArray = (xs: string[]) => `{${xs.map((x) => `"${x}"`).join(",")}}`;

/**
 * The user center at scale: `users` users (every 16th surname Tanaka), `albums` albums and `images` images of one
 * account — created_at over the last year in id order, sizes 30 KB – 9 MB skewed small, ~30 % private, ~75 % in an
 * album (the first ones fuller), names as cameras, phones and people name files, "zanzibar" in ~0.02 % — then VACUUM ANALYZE.
 */
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
    await db.execute(sql`
      insert into users (username, name, email, group_id, registered_ip, created_at)
      select lower(f) || '.' || lower(l) || g, f || ' ' || l, lower(f) || '.' || g || '@' || (array['mail.example','corp.example','uni.example','home.example'])[1 + g % 4],
             (select id from groups where is_default limit 1), '127.0.0.1', now() - (${job.users} - g) * interval '50 minutes'
      from generate_series(1, ${job.users}) as g,
           lateral (select (${textArray(FIRST)}::text[])[1 + (g * 7) % ${FIRST.length}] as f, (${textArray(LAST)}::text[])[1 + g % ${LAST.length}] as l) as n`);
    const albumIds = rowsOf<{ id: number }>(
      await db.execute(sql`
        insert into albums (user_id, name, created_at)
        select ${job.ownerId}, (${textArray(ALBUM_NAMES)}::text[])[g], now() - interval '365 days' + g * interval '10 days'
        from generate_series(1, ${job.albums}) as g returning id`),
    ).map((r) => Number(r.id));
    await db.execute(sql`update users set album_num = ${albumIds.length} where id = ${job.ownerId}`);
    await db.transaction(async (tx) => {
      await tx.execute(sql`select setseed(0.18)`); // deterministic: the same rows every run
      await tx.execute(sql`
        insert into images (key, user_id, album_id, strategy_id, path, thumbnail_path, name, origin_name, size, mimetype,
                            extension, width, height, md5, sha1, is_public, uploader_ip, created_at)
        select k.key, ${job.ownerId}, a.album_id, 1,
               to_char(t.at, 'YYYY/MM/DD') || '/' || k.key || '.' || n.ext, to_char(t.at, 'YYYY/MM/DD') || '/' || k.key || '.thumb.webp',
               k.key || '.' || n.ext, n.origin, s.size, case n.ext when 'png' then 'image/png' else 'image/jpeg' end, n.ext,
               d.w, d.h, md5(g::text), md5(g::text) || substr(md5((g + 1)::text), 1, 8), r.vis >= 0.3, '127.0.0.1', t.at
        from generate_series(1, ${job.images}) as g,
             lateral (select random() as kind, random() as vis, random() as alb, random() as sz, random() as dim, (random() * 1000)::int as num,
                             (random() * ${WORDS.length - 1})::int as w1, (random() * ${WORDS.length - 1})::int as w2 where g > 0) as r,
             lateral (select now() - interval '365 days' + (g::float8 / ${job.images}) * interval '365 days' + (r.num - 500) * interval '30 ms' as at) as t,
             lateral (select 'b' || lpad(to_hex(g), 6, '0') || substr(md5('k' || g), 1, 6) as key) as k,
             lateral (select case when r.alb < 0.25 then null
                                  else (${`{${albumIds.join(",")}}`}::int[])[1 + floor(power((r.alb - 0.25) / 0.75, 1.6) * ${albumIds.length})::int] end as album_id) as a,
             lateral (select (30000 + floor(power(r.sz, 2.5) * 9000000))::bigint as size) as s,
             lateral (select (array[4032,3024,1920,1170,2560,1080,800])[1 + floor(r.dim * 7)::int] as w,
                             (array[3024,4032,1080,2532,1440,1920,600])[1 + floor(r.dim * 7)::int] as h) as d,
             lateral (select case
               when r.kind < 0.0002 then 'Zanzibar trip ' || r.num || '.jpg'
               when r.kind < 0.35 then 'IMG_' || to_char(t.at, 'YYYYMMDD_HH24MISS') || '.jpg'
               when r.kind < 0.55 then 'Screenshot ' || to_char(t.at, 'YYYY-MM-DD') || ' at ' || to_char(t.at, 'HH24.MI.SS') || '.png'
               when r.kind < 0.65 then 'PXL_' || to_char(t.at, 'YYYYMMDD_HH24MISSMS') || '.jpg'
               when r.kind < 0.82 then (${textArray(WORDS)}::text[])[1 + r.w1] || '-' || (${textArray(WORDS)}::text[])[1 + r.w2] || '-' || lpad(r.num::text, 3, '0') || '.jpg'
               when r.kind < 0.92 then 'photo_' || r.num || '.jpeg'
               else 'image (' || r.num || ').png' end as origin) as n0,
             lateral (select n0.origin, case when n0.origin like '%.png' then 'png' else 'jpg' end as ext) as n`);
    });
    await db.execute(sql`
      update users set image_num = s.n, used_bytes = s.bytes
      from (select count(*)::int as n, coalesce(sum(size), 0)::bigint as bytes from images where user_id = ${job.ownerId}) as s where id = ${job.ownerId}`);
    for (const table of ["images", "users", "albums"]) await db.execute(sql.raw(`vacuum analyze ${table}`));
    await db.execute(sql`checkpoint`).catch(() => {});
    const albums = rowsOf<{ id: number; images: number }>(
      await db.execute(
        sql`select a.id, (select count(*)::int from images i where i.album_id = a.id) as images from albums a where a.user_id = ${job.ownerId} order by a.id`,
      ),
    ).map((a) => ({ id: Number(a.id), images: Number(a.images) }));
    const like = (w: string) => `%${w}%`;
    const [f] = rowsOf<Record<string, number>>(
      await db.execute(sql`
        select count(*) filter (where album_id is null)::int as none, count(*) filter (where not is_public)::int as private,
               count(*) filter (where origin_name ilike ${like(job.words.common!)})::int as common, count(*) filter (where origin_name ilike ${like(job.words.rare!)})::int as rare,
               (select count(*)::int from users) as users,
               (select count(*)::int from users where username ilike ${like(job.words.user!)} or name ilike ${like(job.words.user!)} or email ilike ${like(job.words.user!)}) as matching
        from images where user_id = ${job.ownerId}`),
    );
    return {
      ms: performance.now() - t0,
      albums,
      ...(Object.fromEntries(Object.entries(f!).map(([k, v]) => [k, Number(v)])) as Record<
        "none" | "private" | "common" | "rare" | "users" | "matching",
        number
      >),
    };
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
