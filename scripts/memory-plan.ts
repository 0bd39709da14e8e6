/**
 * The memory to plan for, per topology: what the whole process tree of `bun run server` holds idle, at the peak of
 * an upload burst of large photos, and once idle again. Prints figures, asserts nothing; docs/operations.md quotes them.
 *
 *   bun run scripts/memory-plan.ts                          both topologies (PostgreSQL at postgres://postgres@127.0.0.1:5432)
 *   bun run scripts/memory-plan.ts --embedded               the embedded default only
 *   bun run scripts/memory-plan.ts --seconds 30 --clients 4
 *   PG=postgres://user@host:5432 bun run scripts/memory-plan.ts --postgres
 *
 * For each topology: `bun run server` (as a user starts it: package.json's script, UV_THREADPOOL_SIZE=16) on a
 * fresh DATA_DIR and a free loopback port; on PostgreSQL a database created for the run and dropped after. One user
 * and token through the admin API (capacity raised so the burst is never refused for space). Then `--clients`
 * concurrent uploaders (default 4) send, for `--seconds` (default 20), 2000×1500 JPEGs (~1 MB) and 4000×3000 JPEGs
 * (~3–4 MB) in turn: every one is larger than the 400×400 thumbnail box, so every one is decoded in a decode
 * process (src/images/decoder.ts: up to the work queue's concurrency, each a bun + sharp process that exits after
 * 5 idle minutes).
 *
 * The process tree is every descendant of the spawned `bun run server` (found through /proc/PID/stat's parent
 * field), sampled every 100 ms: VmRSS (/proc/PID/status) and Pss (/proc/PID/smaps_rollup) per process, grouped
 * as "server" (`bun run server` and the `bun run src/server.ts` it starts), "decoders" (src/images/decode-worker.ts)
 * and "database" (the embedded PostgreSQL: postmaster, backends, auxiliaries; and the `unshare`/`setpriv` it runs
 * under). RSS summed over processes counts shared pages (PostgreSQL's shared buffers, the bun binary's text) once
 * per process; PSS divides them among the processes that share them, so the summed PSS is what the tree really
 * holds. Linux only (/proc).
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import sharp from "sharp";

const repo = join(import.meta.dir, "..");
const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const seconds = option("--seconds", 20);
const clients = option("--clients", 4);
const onlyEmbedded = args.includes("--embedded");
const onlyPostgres = args.includes("--postgres");
/** The PostgreSQL server, without a database name: a database is created on it for the run and dropped after. */
const pgBase = (process.env.PG ?? "postgres://postgres@127.0.0.1:5432").replace(/\/+$/, "");

// ---------------------------------------------------------------- /proc

type Group = "server" | "decoders" | "database";
interface Sample {
  rss: Record<Group, number>;
  pss: Record<Group, number>;
  count: Record<Group, number>;
}

function children(): Map<number, number[]> {
  const map = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "latin1");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const list = map.get(ppid) ?? [];
      list.push(Number(name));
      map.set(ppid, list);
    } catch {
      // gone meanwhile
    }
  }
  return map;
}

function tree(root: number): number[] {
  const map = children();
  const out: number[] = [];
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    out.push(pid);
    stack.push(...(map.get(pid) ?? []));
  }
  return out;
}

function kb(text: string, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text);
  return m ? Number(m[1]) : 0;
}

function groupOf(pid: number, serverPids: Set<number>): Group {
  if (serverPids.has(pid)) return "server";
  let cmd = "";
  try {
    cmd = readFileSync(`/proc/${pid}/cmdline`, "latin1").replaceAll("\0", " ");
  } catch {
    // gone
  }
  if (cmd.includes("decode-worker")) return "decoders";
  return "database";
}

function sample(root: number, serverPids: Set<number>): Sample {
  const s: Sample = { rss: { server: 0, decoders: 0, database: 0 }, pss: { server: 0, decoders: 0, database: 0 }, count: { server: 0, decoders: 0, database: 0 } };
  for (const pid of tree(root)) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "latin1");
      const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "latin1");
      const g = groupOf(pid, serverPids);
      s.rss[g] += kb(status, "VmRSS");
      s.pss[g] += kb(rollup, "Pss");
      s.count[g] += 1;
    } catch {
      // a process that ended between the listing and the read
    }
  }
  return s;
}

const total = (r: Record<Group, number>) => r.server + r.decoders + r.database;
const mb = (k: number) => `${Math.round(k / 1024)}`;

// ---------------------------------------------------------------- the server

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = s.port!;
  await s.stop(true);
  return port;
}

async function startServer(env: Record<string, string>) {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(DATABASE_URL|TEST_DATABASE_URL|BASE_URL|ADMIN_TOKEN|IMAGE_HOST_.*)$/.test(k)));
  const proc = Bun.spawn(["bun", "run", "server"], { cwd: repo, env: { ...inherited, ...env }, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const stderr = new Response(proc.stderr).text();
  for (const deadline = Date.now() + 60_000; ; ) {
    if (proc.exitCode !== null) throw new Error(`the server exited with ${proc.exitCode}: ${await stderr}`);
    const res = await fetch(`http://127.0.0.1:${env.PORT}/health`).catch(() => null);
    if (res?.status === 200) break;
    if (Date.now() > deadline) throw new Error("the server did not answer /health within 60 s");
    await Bun.sleep(100);
  }
  // `bun run server` and the `bun run src/server.ts` below it (the first bun descendant whose command names server.ts)
  const serverPids = new Set<number>([proc.pid]);
  for (const pid of tree(proc.pid)) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "latin1");
      if (cmd.includes("src/server.ts")) serverPids.add(pid);
    } catch {
      // gone
    }
  }
  return { proc, serverPids };
}

async function images() {
  const photo = async (width: number, height: number, seed: number) => {
    // smooth gradients plus noise: a photo-like JPEG, neither trivially compressible nor pure noise
    const raw = Buffer.alloc(width * height * 3);
    let x = seed * 2654435761;
    for (let i = 0; i < raw.length; i += 3) {
      x = (x * 1103515245 + 12345) >>> 0;
      const p = i / 3;
      const n = (x >>> 24) & 63;
      raw[i] = ((p % width) * 255) / width + n;
      raw[i + 1] = (Math.floor(p / width) * 255) / height + n;
      raw[i + 2] = 128 + n;
    }
    return new Uint8Array(await sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({ quality: 80 }).toBuffer());
  };
  return [await photo(2000, 1500, 1), await photo(4000, 3000, 2), await photo(2000, 1500, 3), await photo(4000, 3000, 4)];
}

interface Result {
  topology: string;
  idle: Sample;
  peak: Sample;
  peakTotals: { rss: number; pss: number };
  after: Sample;
  uploads: number;
  refused: number;
  maxDecoders: number;
}

async function measure(topology: "embedded" | "postgres", files: Uint8Array[]): Promise<Result> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), "imghost-memory-"));
  const adminToken = `memory-plan-${crypto.randomUUID()}`;
  const env: Record<string, string> = { PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir, ADMIN_TOKEN: adminToken, LOG_LEVEL: "warn", LOG_FORMAT: "json" };
  let dbName: string | null = null;
  if (topology === "postgres") {
    dbName = `memory_plan_${Date.now()}`;
    const admin = postgres(`${pgBase}/postgres`, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE DATABASE ${dbName}`);
    await admin.end();
    env.DATABASE_URL = `${pgBase}/${dbName}`;
  }
  const { proc, serverPids } = await startServer(env);
  const base = `http://127.0.0.1:${port}`;
  try {
    const adminHeaders = { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" };
    const user = (await (await fetch(`${base}/api/admin/users`, { method: "POST", headers: adminHeaders, body: JSON.stringify({ username: "mem", email: "mem@example.com", capacity_kb: 100 * 1024 * 1024 }) })).json()) as { data: { id: number } };
    const token = ((await (await fetch(`${base}/api/admin/users/${user.data.id}/tokens`, { method: "POST", headers: adminHeaders, body: "{}" })).json()) as { data: { token: string } }).data.token;

    await Bun.sleep(3000);
    const idle = sample(proc.pid, serverPids);

    let peak = idle;
    let peakRss = total(idle.rss);
    let peakPss = total(idle.pss);
    let maxDecoders = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const s = sample(proc.pid, serverPids);
        if (total(s.pss) > total(peak.pss)) peak = s;
        peakRss = Math.max(peakRss, total(s.rss));
        peakPss = Math.max(peakPss, total(s.pss));
        maxDecoders = Math.max(maxDecoders, s.count.decoders);
        await Bun.sleep(100);
      }
    })();

    let uploads = 0;
    let refused = 0;
    const until = Date.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        for (let i = c; Date.now() < until; i++) {
          const form = new FormData();
          form.append("file", new Blob([Buffer.from(files[i % files.length]!)], { type: "image/jpeg" }), `photo-${i}.jpg`);
          const res = await fetch(`${base}/api/v1/upload`, { method: "POST", headers: { Authorization: `Bearer ${token}` }, body: form });
          await res.arrayBuffer();
          if (res.status === 200) uploads++;
          else refused++;
        }
      }),
    );
    sampling = false;
    await sampler;
    await Bun.sleep(5000);
    const after = sample(proc.pid, serverPids);
    return { topology, idle, peak, peakTotals: { rss: peakRss, pss: peakPss }, after, uploads, refused, maxDecoders };
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
    if (dbName) {
      const admin = postgres(`${pgBase}/postgres`, { max: 1, onnotice: () => {} });
      await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.end();
    }
    if (existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });
  }
}

function report(r: Result) {
  const line = (label: string, s: Sample) =>
    `  ${label.padEnd(14)} PSS ${mb(total(s.pss)).padStart(4)} MB (server ${mb(s.pss.server)} in ${s.count.server}, decoders ${mb(s.pss.decoders)} in ${s.count.decoders}, database ${mb(s.pss.database)} in ${s.count.database})` +
    `   RSS summed ${mb(total(s.rss)).padStart(4)} MB (server ${mb(s.rss.server)}, decoders ${mb(s.rss.decoders)}, database ${mb(s.rss.database)})`;
  console.log(`${r.topology}: ${r.uploads} uploads accepted, ${r.refused} refused in ${seconds} s at c=${clients}; at most ${r.maxDecoders} decode processes at once`);
  console.log(line("idle", r.idle));
  console.log(line("peak (by PSS)", r.peak));
  console.log(`  ${"peak of sums".padEnd(14)} PSS ${mb(r.peakTotals.pss).padStart(4)} MB   RSS summed ${mb(r.peakTotals.rss).padStart(4)} MB`);
  console.log(line("idle after 5 s", r.after));
}

if (process.platform !== "linux") {
  console.error("memory-plan reads /proc: Linux only");
  process.exit(1);
}
const files = await images();
console.log(`images: ${files.map((f) => `${Math.round(f.length / 1024)} KB`).join(", ")} (2000×1500, 4000×3000, 2000×1500, 4000×3000 JPEGs)`);
console.log(`machine: ${navigator.hardwareConcurrency} cores, Bun ${Bun.version}; figures in MB (1 MB = 1024 KB)\n`);
if (!onlyPostgres) report(await measure("embedded", files));
if (!onlyEmbedded) report(await measure("postgres", files));
