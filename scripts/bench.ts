/**
 * Benchmark: prints figures (never asserts). Everything runs in this process against 127.0.0.1.
 *
 *   bun run scripts/bench.ts            full run (< 3 minutes)
 *   bun run scripts/bench.ts --quick    short run (< 40 seconds)
 *   bun run scripts/bench.ts --images 1000000   the listing section on an account of a million images
 *
 * PGlite always; PostgreSQL too when TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres)
 * answers — each run gets a fresh database there, dropped at the end. Measurements of the two databases
 * are interleaved and printed side by side, because absolute numbers on a small shared machine drift.
 */
import os from "node:os";
import { sql } from "drizzle-orm";
import { fileTypeFromBuffer } from "file-type";
import postgres from "postgres";
import sharp from "sharp";
import { createTestContext, type TestContext, warmTemplate } from "../test/support/harness.ts";
import { makeImage, makeNoisyJpeg, multipart } from "../test/support/images.ts";

const QUICK = process.argv.includes("--quick");
const cfg = QUICK
  ? { warmup: 3, iters: 12, loadSeconds: 1.5, serveSeconds: 1.5, listWarmup: 3, listReqs: 20, seedImages: 5000, budgetMs: 38_000 }
  : { warmup: 5, iters: 40, loadSeconds: 5, serveSeconds: 5, listWarmup: 5, listReqs: 50, seedImages: 5000, budgetMs: 175_000 };
// --images N: how many images the listing section seeds into one account (e.g. 1000000 for the million case)
const imagesArg = process.argv.indexOf("--images");
if (imagesArg > 0) {
  const n = Number(process.argv[imagesArg + 1]);
  if (!Number.isInteger(n) || n < 4500 || n > 5_000_000) throw new Error("--images takes an integer from 4500 to 5000000");
  cfg.seedImages = n;
  cfg.budgetMs += Math.ceil(n / 1000) * 60; // seeding costs ~20 s per million rows per database
}
const PG_URL = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const HOST = "http://img.test"; // the harness's base URL, for in-process requests

// ---------------------------------------------------------------- cleanup and watchdog

const cleanups: (() => Promise<unknown>)[] = [];
async function cleanup() {
  while (cleanups.length) {
    const fn = cleanups.pop()!;
    await Promise.race([fn().catch((e) => console.error(`cleanup: ${(e as Error).message}`)), Bun.sleep(5000)]);
  }
}
const started = performance.now();
const watchdog = setTimeout(async () => {
  console.error(`\nbench: time budget of ${cfg.budgetMs / 1000} s exceeded; stopping.`);
  await cleanup();
  process.exit(2);
}, cfg.budgetMs);
watchdog.unref();

// ---------------------------------------------------------------- statistics and printing

interface Stats {
  n: number;
  mean: number;
  p50: number;
  p95: number;
}
function stats(xs: number[]): Stats {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => (s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]! : NaN);
  return { n: s.length, mean: s.reduce((a, b) => a + b, 0) / (s.length || 1), p50: q(0.5), p95: q(0.95) };
}
const ms = (x: number) => (Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) : "–");
const num = (x: number) => (Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x.toFixed(1)) : "–");
const ratio = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : "–");

function table(head: string[], rows: string[][]) {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  console.log(line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of rows) console.log(line(r));
}
const section = (title: string) => console.log(`\n== ${title}`);

async function time<T>(fn: () => Promise<T> | T): Promise<[number, T]> {
  const t0 = performance.now();
  const v = await fn();
  return [performance.now() - t0, v];
}

// ---------------------------------------------------------------- databases

interface Target {
  label: string;
  ctx: TestContext;
  base: string; // http://127.0.0.1:port
  server: ReturnType<typeof Bun.serve>;
  user: { id: number; token: string };
}

/** The harness picks its database from TEST_DATABASE_URL when createTestContext is called. */
async function withDatabaseUrl<T>(url: string | undefined, fn: () => Promise<T>): Promise<T> {
  const saved = process.env.TEST_DATABASE_URL;
  if (url) process.env.TEST_DATABASE_URL = url;
  else delete process.env.TEST_DATABASE_URL;
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete process.env.TEST_DATABASE_URL;
    else process.env.TEST_DATABASE_URL = saved;
  }
}

async function postgresProblem(url: string): Promise<{ error: string } | { version: string }> {
  const client = postgres(url, { max: 1, connect_timeout: 2, idle_timeout: 1, onnotice: () => {} });
  try {
    const [row] = await client<{ v: string }[]>`select current_setting('server_version') as v`;
    return { version: row!.v };
  } catch (e) {
    return { error: (e as Error).message };
  } finally {
    await client.end({ timeout: 1 }).catch(() => {});
  }
}

async function openTarget(label: string, url: string | undefined): Promise<Target> {
  const ctx = await withDatabaseUrl(url, () => createTestContext());
  cleanups.push(() => ctx.close());
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: ctx.app.fetch });
  cleanups.push(async () => server.stop(true));
  const user = await ctx.createUser();
  return { label, ctx, server, base: `http://127.0.0.1:${server.port}`, user };
}

// ---------------------------------------------------------------- requests

interface Upload {
  name: string;
  bytes: Uint8Array;
  body: Uint8Array<ArrayBuffer>;
  contentType: string;
}
function uploadBody(bytes: Uint8Array, filename: string, mime: string): Upload {
  const m = multipart([{ name: "file", value: bytes, filename, contentType: mime }]);
  return { name: filename, bytes, body: new Uint8Array(m.body), contentType: m.contentType };
}
const uploadInit = (token: string, u: Upload): RequestInit => ({
  method: "POST",
  headers: { authorization: `Bearer ${token}`, "content-type": u.contentType },
  body: u.body,
});

async function uploadInProcess(t: Target, u: Upload): Promise<{ key: string; path: string; ms: number }> {
  const [elapsed, res] = await time(async () => {
    const r = await t.ctx.app.fetch(new Request(`${HOST}/api/v1/upload`, uploadInit(t.user.token, u)));
    return { status: r.status, body: (await r.json()) as any };
  });
  if (res.status !== 200) throw new Error(`${t.label} upload ${u.name} → ${res.status} ${JSON.stringify(res.body)}`);
  return { key: res.body.data.key, path: new URL(res.body.data.url).pathname, ms: elapsed };
}

async function inProcess(t: Target, method: string, path: string, expect = 200): Promise<number> {
  const [elapsed, status] = await time(async () => {
    const r = await t.ctx.app.fetch(new Request(`${HOST}${path}`, { method, headers: { authorization: `Bearer ${t.user.token}` } }));
    await r.arrayBuffer();
    return r.status;
  });
  if (status !== expect) throw new Error(`${t.label} ${method} ${path} → ${status}`);
  return elapsed;
}

interface Load {
  ok: number;
  errors: number;
  firstError: string;
  seconds: number;
  lat: Stats;
}
/** `clients` loops send requests back to back over HTTP until the deadline. */
async function load(clients: number, seconds: number, send: () => Promise<Response>, expect: number): Promise<Load> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError = "";
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < deadline) {
        const s = performance.now();
        try {
          const res = await send();
          const body = await res.arrayBuffer();
          if (res.status === expect) latencies.push(performance.now() - s);
          else {
            errors++;
            firstError ||= `${res.status} ${new TextDecoder().decode(body).slice(0, 200)}`;
          }
        } catch (e) {
          errors++;
          firstError ||= (e as Error).message;
        }
      }
    }),
  );
  return { ok: latencies.length, errors, firstError, seconds: (performance.now() - t0) / 1000, lat: stats(latencies) };
}

// ---------------------------------------------------------------- 1. upload pipeline

async function pipeline(targets: Target[], png: Upload, jpeg: Upload) {
  section(`1. Upload pipeline per image, in-process app.fetch, sequential (${cfg.iters} iterations after ${cfg.warmup} warm-up, interleaved)`);
  const hash = (b: Uint8Array) => {
    new Bun.CryptoHasher("md5").update(b).digest("hex");
    new Bun.CryptoHasher("sha1").update(b).digest("hex");
  };
  for (const img of [png, jpeg]) {
    const meta = await sharp(img.bytes).metadata();
    const big = meta.width! > 400 || meta.height! > 400;
    const samples = new Map<string, number[]>();
    const add = (k: string, v: number) => samples.set(k, [...(samples.get(k) ?? []), v]);
    const decodeLabel = big ? "sharp 400×400 WebP thumbnail (q80)" : "sharp full decode to raw (validation)";
    for (let i = 0; i < cfg.warmup + cfg.iters; i++) {
      const keep = i >= cfg.warmup;
      const rec = (k: string, v: number) => keep && add(k, v);
      for (const t of targets) {
        const up = await uploadInProcess(t, img);
        rec(`upload  [${t.label}]`, up.ms);
        rec(`delete  [${t.label}]`, await inProcess(t, "DELETE", `/api/v1/images/${up.key}`));
      }
      for (const t of targets) {
        rec(`GET /api/v1/profile [${t.label}] (auth only)`, await inProcess(t, "GET", "/api/v1/profile"));
        rec(`db round trip, select 1 [${t.label}]`, (await time(() => t.ctx.db.execute(sql`select 1`)))[0]);
      }
      const storage = targets[0]!.ctx.deps.storage.for({ id: 1, driver: "local", config: {} });
      const scratch = `2024/01/01/bench-${i}-${img.name}`;
      rec("local storage put (mkdir + write + rename)", (await time(() => storage.put(scratch, img.bytes, "application/octet-stream")))[0]);
      await storage.delete(scratch);
      rec("file-type sniff", (await time(() => fileTypeFromBuffer(img.bytes)))[0]);
      rec("sharp metadata()", (await time(() => sharp(img.bytes).metadata()))[0]);
      rec(
        decodeLabel,
        (
          await time(() =>
            big
              ? sharp(img.bytes).rotate().resize(400, 400, { fit: "inside", withoutEnlargement: true }).webp({ quality: 80 }).toBuffer()
              : sharp(img.bytes).rotate().raw().toBuffer(),
          )
        )[0],
      );
      rec("md5 + sha1 (Bun.CryptoHasher)", (await time(() => hash(img.bytes)))[0]);
    }
    const s = new Map([...samples].map(([k, v]) => [k, stats(v)]));
    console.log(`\n${img.name}: ${meta.width}×${meta.height} ${meta.format}, ${(img.bytes.byteLength / 1024).toFixed(1)} KB${big ? " (thumbnail path)" : " (no thumbnail)"}`);
    table(
      ["step", "mean ms", "p50 ms", "p95 ms"],
      [...s].map(([k, v]) => [k, ms(v.mean), ms(v.p50), ms(v.p95)]),
    );
    const unavoidable = (f: "mean" | "p50") => s.get(decodeLabel)![f] + s.get("md5 + sha1 (Bun.CryptoHasher)")![f];
    const checks = (f: "mean" | "p50") => unavoidable(f) + s.get("sharp metadata()")![f] + s.get("file-type sniff")![f];
    const rows = targets.map((t) => {
      const u = s.get(`upload  [${t.label}]`)!;
      return [
        t.label,
        ratio(u.mean / unavoidable("mean")),
        ratio(u.p50 / unavoidable("p50")),
        ms(u.p50 - checks("p50")),
      ];
    });
    console.log("");
    table(["upload / (decode-or-thumbnail + hash)", "by mean", "by p50", "ms beyond sniff+metadata+decode+hash (p50)"], rows);
  }
}

// ---------------------------------------------------------------- 2. upload throughput

async function throughput(targets: Target[], png: Upload) {
  section(`2. Upload throughput over HTTP, ${png.name}, ${cfg.loadSeconds} s per cell (client and server share this process)`);
  const rows: string[][] = [];
  const notes: string[] = [];
  for (const clients of [1, 4, 16]) {
    const row = [String(clients)];
    const rates: number[] = [];
    for (const t of targets) {
      Bun.gc(true);
      const r = await load(clients, cfg.loadSeconds, () => fetch(`${t.base}/api/v1/upload`, uploadInit(t.user.token, png)), 200);
      const rate = r.ok / r.seconds;
      rates.push(rate);
      row.push(num(rate), ms(r.lat.p50), ms(r.lat.p95));
      if (r.errors) notes.push(`${t.label}, ${clients} clients: ${r.errors} failed requests, first: ${r.firstError}`);
    }
    if (targets.length > 1) row.push(ratio(rates[1]! / rates[0]!));
    rows.push(row);
  }
  const head = ["clients"];
  for (const t of targets) head.push(`${t.label} up/s`, "p50 ms", "p95 ms");
  if (targets.length > 1) head.push(`${targets[1]!.label}/${targets[0]!.label}`);
  table(head, rows);
  for (const n of notes) console.log(`  ! ${n}`);
}

// ---------------------------------------------------------------- 3. serving

async function serving(targets: Target[], png: Upload) {
  const clients = 16;
  section(`3. Serving GET /i/<path> of ${png.name}, ${clients} clients, ${cfg.serveSeconds} s per cell`);
  const objects = new Map<Target, { path: string; etag: string }>();
  for (const t of targets) {
    const up = await uploadInProcess(t, png);
    const res = await fetch(`${t.base}${up.path}`);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${t.label} GET ${up.path} → ${res.status}`);
    objects.set(t, { path: up.path, etag: res.headers.get("etag")! });
  }
  const rows: string[][] = [];
  const notes: string[] = [];
  for (const [mode, expect] of [
    ["200 full body", 200],
    ["304 If-None-Match", 304],
  ] as const) {
    const row: string[] = [mode];
    const rates: number[] = [];
    for (const t of targets) {
      const o = objects.get(t)!;
      const headers: Record<string, string> = expect === 304 ? { "if-none-match": o.etag } : {};
      Bun.gc(true);
      const r = await load(clients, cfg.serveSeconds, () => fetch(`${t.base}${o.path}`, { headers }), expect);
      const rate = r.ok / r.seconds;
      rates.push(rate);
      row.push(num(rate), ms(r.lat.p50), ms(r.lat.p95));
      if (r.errors) notes.push(`${t.label}, ${mode}: ${r.errors} failed requests, first: ${r.firstError}`);
    }
    if (targets.length > 1) row.push(ratio(rates[1]! / rates[0]!));
    rows.push(row);
  }
  const head = ["request"];
  for (const t of targets) head.push(`${t.label} req/s`, "p50 ms", "p95 ms");
  if (targets.length > 1) head.push(`${targets[1]!.label}/${targets[0]!.label}`);
  table(head, rows);
  for (const n of notes) console.log(`  ! ${n}`);
}

// ---------------------------------------------------------------- 4. listing

async function seed(t: Target, count: number): Promise<{ id: number; token: string }> {
  const user = await t.ctx.createUser();
  const tag = user.username;
  const size = 2048;
  await t.ctx.db.execute(sql`
    insert into images (key, user_id, strategy_id, path, thumbnail_path, name, origin_name, size, mimetype,
                        extension, width, height, md5, sha1, is_public, uploader_ip, created_at)
    select ${tag} || '-' || g, ${user.id}, ${t.ctx.localStrategyId},
           '2024/01/01/' || ${tag} || '-' || g || '.png', null, ${tag} || '-' || g || '.png', 'shot.png', ${size},
           'image/png', 'png', 300, 200, md5(g::text), md5(g::text) || '01234567', true, '127.0.0.1',
           now() - g * interval '1 minute'
    from generate_series(1, ${count}) as g`);
  await t.ctx.db.execute(
    sql`update users set image_num = image_num + ${count}, used_bytes = used_bytes + ${count * size} where id = ${user.id}`,
  );
  await t.ctx.db.execute(sql`analyze images`);
  return user;
}

async function listing(targets: Target[]) {
  const pages = [1, 150];
  section(
    `4. Listing GET /api/v1/images?per_page=30 over HTTP, one account with ${cfg.seedImages} images (SQL-seeded, then ANALYZE), ` +
      `mean of ${cfg.listReqs} sequential requests, interleaved`,
  );
  const seeded = new Map<Target, { id: number; token: string }>();
  const seedTimes: string[] = [];
  for (const t of targets) {
    const [elapsed, user] = await time(() => seed(t, cfg.seedImages));
    seeded.set(t, user);
    seedTimes.push(`${t.label} ${ms(elapsed)} ms`);
  }
  const samples = new Map<string, number[]>();
  const notes = new Set<string>();
  for (let i = 0; i < cfg.listWarmup + cfg.listReqs; i++) {
    for (const page of pages) {
      for (const t of targets) {
        const s = performance.now();
        const res = await fetch(`${t.base}/api/v1/images?per_page=30&page=${page}`, {
          headers: { authorization: `Bearer ${seeded.get(t)!.token}` },
        });
        const body = (await res.json()) as any;
        const elapsed = performance.now() - s;
        if (res.status !== 200 || body.data.data.length !== 30 || body.data.total !== cfg.seedImages) {
          notes.add(`${t.label} page ${page}: status ${res.status}, ${body?.data?.data?.length} items, total ${body?.data?.total}`);
        }
        if (i >= cfg.listWarmup) samples.set(`${t.label}:${page}`, [...(samples.get(`${t.label}:${page}`) ?? []), elapsed]);
      }
    }
  }
  const rows = pages.map((page) => {
    const row = [`page=${page}${page > 1 ? ` (offset ${(page - 1) * 30})` : ""}`];
    for (const t of targets) {
      const s = stats(samples.get(`${t.label}:${page}`)!);
      row.push(ms(s.mean), ms(s.p50), ms(s.p95));
    }
    if (targets.length > 1) {
      row.push(ratio(stats(samples.get(`${targets[1]!.label}:${page}`)!).mean / stats(samples.get(`${targets[0]!.label}:${page}`)!).mean));
    }
    return row;
  });
  const head = ["request"];
  for (const t of targets) head.push(`${t.label} mean ms`, "p50", "p95");
  if (targets.length > 1) head.push(`${targets[1]!.label}/${targets[0]!.label}`);
  table(head, rows);
  for (const t of targets) {
    const deep = stats(samples.get(`${t.label}:150`)!).mean / stats(samples.get(`${t.label}:1`)!).mean;
    console.log(`  ${t.label}: deep page / first page = ${ratio(deep)}`);
  }
  console.log(`  seeding: ${seedTimes.join(", ")}`);
  for (const n of notes) console.log(`  ! ${n}`);
}

// ---------------------------------------------------------------- main

async function main() {
  const cpus = os.cpus();
  console.log(`image-host benchmark${QUICK ? " (--quick)" : ""} — ${new Date().toISOString()}`);
  console.log(
    `machine: ${navigator.hardwareConcurrency} cores (os.cpus: ${cpus.length} × ${cpus[0]?.model ?? "?"}), ` +
      `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.platform()} ${os.release()}, load avg ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`,
  );
  console.log(`runtime: Bun ${Bun.version}, sharp ${sharp.versions.sharp} / libvips ${sharp.versions.vips}, sharp threads ${sharp.concurrency()}`);

  const pg = await postgresProblem(PG_URL);
  const pgUrlShown = PG_URL.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
  console.log(
    "version" in pg
      ? `databases: PGlite (embedded) and PostgreSQL ${pg.version} at ${pgUrlShown} (fresh database per run)`
      : `databases: PGlite only — PostgreSQL at ${pgUrlShown} is not reachable (${pg.error}); its columns are skipped`,
  );

  const [tplMs] = await time(() => withDatabaseUrl(undefined, () => warmTemplate()));
  const targets: Target[] = [];
  const [openMs] = await time(async () => {
    targets.push(await withDatabaseUrl(undefined, () => openTarget("PGlite", undefined)));
    if ("version" in pg) targets.push(await openTarget("PostgreSQL", PG_URL));
  });
  console.log(`setup (not timed below): PGlite template ${ms(tplMs)} ms, contexts + servers ${ms(openMs)} ms`);

  const png = uploadBody(await makeImage("png", 300, 200), "screenshot.png", "image/png");
  const jpeg = uploadBody(await makeNoisyJpeg(2000, 1500, 45), "photo.jpg", "image/jpeg");

  await pipeline(targets, png, jpeg);
  await throughput(targets, png);
  await serving(targets, png);
  await listing(targets);

  console.log(`\ntotal ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

let code = 0;
try {
  await main();
} catch (e) {
  console.error(e);
  code = 1;
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
process.exit(code);
