/** The benchmark's plumbing: child processes, cleanup however a run ends, ports, databases, statistics, the run's facts. */
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import postgres from "postgres";

export const ROOT = resolve(import.meta.dir, "../../..");
export const PG_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";

// ---------------------------------------------------------------- cleanup

const cleanups: { name: string; fn: () => unknown }[] = [];

/** Registers an undo step; they run last-in first-out, each bounded to 15 s, however the run ends. Returns its removal. */
export function onCleanup(name: string, fn: () => unknown): () => void {
  const entry = { name, fn };
  cleanups.push(entry);
  return () => void (cleanups.includes(entry) && cleanups.splice(cleanups.indexOf(entry), 1));
}

let cleaning: Promise<void> | undefined;
export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length) {
      const { name, fn } = cleanups.pop()!;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<void>((ok) => (timer = setTimeout(() => ok(console.error(`cleanup: ${name} timed out after 15 s`)), 15_000)));
      await Promise.race([Promise.resolve().then(fn), late])
        .catch((e) => console.error(`cleanup: ${name}: ${(e as Error).message}`))
        .finally(() => clearTimeout(timer));
    }
  })().finally(() => (cleaning = undefined));
  return cleaning;
}

/** Set once a signal stopped the run: what fails after that is the stopping, not a finding. */
export let interrupted = false;
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\nbench: ${signal}, stopping servers…`);
    void cleanup().finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------- processes

/** Runs a command to its end (stopped with the benchmark); its output and exit code. */
export async function run(cmd: string[], opts: { env?: Record<string, string | undefined>; timeoutMs?: number; cwd?: string } = {}) {
  const proc = Bun.spawn(cmd, { cwd: opts.cwd, env: opts.env as Record<string, string> | undefined, stdout: "pipe", stderr: "pipe" });
  const timer = opts.timeoutMs ? setTimeout(() => proc.kill("SIGKILL"), opts.timeoutMs) : undefined;
  const unregister = onCleanup(`${cmd[0]} (pid ${proc.pid})`, () => stopProcess(proc, 5000));
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  unregister();
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** SIGTERM, then SIGKILL after `graceMs`. */
export async function stopProcess(proc: { kill(signal?: NodeJS.Signals): void; exited: Promise<number> }, graceMs: number, signal: NodeJS.Signals = "SIGTERM") {
  try {
    proc.kill(signal);
  } catch {}
  if (!(await Promise.race([proc.exited.then(() => true), Bun.sleep(graceMs).then(() => false)]))) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
}

/**
 * A job in a process of its own (scripts/bench/worker.ts): the figures it printed on its `RESULT` line. Work that
 * must not run in the measured servers, nor share this process with the load generator, runs there.
 */
export async function worker<T>(job: { op: string } & Record<string, unknown>, timeoutMs = 600_000): Promise<T> {
  const r = await run([process.execPath, join(ROOT, "scripts/bench/worker.ts"), JSON.stringify(job)], { timeoutMs });
  const line = r.stdout.split("\n").find((l) => l.startsWith("RESULT "));
  if (r.code !== 0 || !line) throw new Error(`worker ${job.op} failed (${r.code}): ${(r.stderr || r.stdout).slice(-2000)}`);
  return JSON.parse(line.slice(7)) as T;
}

/** A loopback port nobody listens on right now. */
export function freePort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/** A temporary directory that an embedded PostgreSQL started by root (as the user postgres) can reach; removed at cleanup. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(os.tmpdir(), `imghost-${prefix}-`));
  chmodSync(dir, 0o755);
  onCleanup(`remove ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// ---------------------------------------------------------------- PostgreSQL

/** The bench's PostgreSQL server: its version and settings, or why it is not reachable. */
export async function postgresInfo(url = PG_URL): Promise<{ version: string | null; settings: string; problem: string }> {
  const c = postgres(url, { max: 1, connect_timeout: 3, onnotice: () => {} });
  try {
    const version = (await c<{ v: string }[]>`select current_setting('server_version') as v`)[0]!.v;
    const rows = await c<{ name: string; setting: string }[]>`
      select name, setting from pg_settings where name in ('fsync', 'synchronous_commit', 'shared_buffers') order by name`;
    const settings = rows.map((r) => `${r.name}=${r.name === "shared_buffers" ? `${(Number(r.setting) * 8) / 1024} MB` : r.setting}`).join(", ");
    return { version, settings, problem: "" };
  } catch (e) {
    return { version: null, settings: "", problem: (e as Error).message };
  } finally {
    await c.end({ timeout: 1 }).catch(() => {});
  }
}

/** A fresh database on the PostgreSQL server at `serverUrl`, dropped at cleanup: the new database's URL. */
export async function freshDatabase(prefix: string, serverUrl = PG_URL): Promise<string> {
  const name = `${prefix}_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  onCleanup(`drop database ${name}`, async () => {
    const c = postgres(serverUrl, { max: 1, onnotice: () => {} });
    await c.unsafe(`drop database if exists ${name} with (force)`).finally(() => c.end());
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

// ---------------------------------------------------------------- statistics and formatting

export function median(xs: number[]): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
/** Nearest-rank percentile. */
export function percentile(xs: number[], p: number): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]! : NaN;
}
/** Three significant figures at most, thousands separated: 27,000 / 512 / 12.3 / 0.85. */
export function fmt(x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return "–";
  const a = Math.abs(x);
  return a >= 1000 ? Math.round(x).toLocaleString("en-US") : a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : x.toFixed(2);
}
export const ratio = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? "–" : `${x.toFixed(2)}×`);
export const mb = (kb: number) => (Number.isFinite(kb) ? String(Math.round(kb / 1024)) : "–");
export const met = (ok: boolean) => (ok ? "met" : "**not met**");

/** A markdown table: the first column left-aligned, the others right-aligned (`left`: all left). */
export function markdownTable(head: string[], rows: string[][], left = false): string {
  const esc = (s: string) => s.replace(/\|/g, "\\|");
  return [
    `| ${head.map(esc).join(" | ")} |`,
    `|${head.map((_, i) => (i === 0 || left ? "---" : "---:")).join("|")}|`,
    ...rows.map((r) => `| ${r.map(esc).join(" | ")} |`),
  ].join("\n");
}

// ---------------------------------------------------------------- the run's facts

const loadavg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" / ");

/** The code measured: the commit, and whether src/ differs from it. */
async function source(): Promise<string> {
  const head = await run(["git", "-C", ROOT, "log", "-1", "--format=%h %s"]);
  if (head.code !== 0) return "not a git checkout";
  const dirty = (await run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "package.json", "bun.lock", "drizzle"])).stdout.trim();
  const subject = head.stdout.trim();
  return `commit ${subject.length > 90 ? `${subject.slice(0, 87)}…` : subject}${dirty ? ` + uncommitted changes in ${dirty.split("\n").length} files of src/, drizzle/ or the package files` : ""}`;
}

/** Starts the clock of a part; `facts()` at its end is the table of date, command, code, machine, load and run time. */
export async function startFacts(command: string) {
  const started = performance.now();
  const load0 = loadavg();
  const code = await source();
  const cpu = os.cpus()[0]?.model.trim() ?? "?";
  return {
    seconds: () => (performance.now() - started) / 1000,
    facts(extra: [string, string][] = []): string {
      const busy = os.loadavg()[0]! > os.availableParallelism() ? " — **busy machine: absolute figures are low and noisy; ratios hold better**" : "";
      return markdownTable(
        ["", ""],
        [
          ["date", new Date().toISOString()],
          ["command", `\`${command}\``],
          ["code measured", code],
          ["machine", `${os.availableParallelism()} cores, ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.platform()} ${os.release()}`],
          ["load average (1 / 5 / 15 min)", `${load0} at start, ${loadavg()} at the end${busy}`],
          ...extra,
          ["run time", `${((performance.now() - started) / 1000).toFixed(0)} s`],
        ],
        true,
      );
    },
  };
}

/** /proc/pressure/cpu "some": the share of time a task waited for a CPU (avg10 / avg60), or "" off Linux. */
export function cpuPressure(): string {
  try {
    const m = /^some avg10=([\d.]+) avg60=([\d.]+)/m.exec(readFileSync("/proc/pressure/cpu", "utf8"));
    return m ? `${m[1]} % / ${m[2]} %` : "";
  } catch {
    return "";
  }
}

/** The floors' process (scripts/bench/worker.ts --ipc), with the server's worker pool size: `ask` sends it one job at a time. */
export async function floorProcess(env: Record<string, string>) {
  let pending: ((m: { ok: boolean; result?: unknown; error?: string; ready?: boolean }) => void) | null = null;
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  const proc = Bun.spawn([process.execPath, join(ROOT, "scripts/bench/worker.ts"), "--ipc"], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdout: "inherit",
    stderr: "inherit",
    ipc: (m) => (m?.ready ? ready() : pending?.(m)),
  });
  onCleanup(`floor (pid ${proc.pid})`, () => stopProcess(proc, 1000, "SIGKILL"));
  await Promise.race([isReady, Bun.sleep(30_000).then(() => Promise.reject(new Error("the floor process did not start")))]);
  return {
    pid: proc.pid,
    ask: <T>(job: { op: string } & Record<string, unknown>) =>
      new Promise<T>((resolve, reject) => {
        pending = (m) => ((pending = null), m.ok ? resolve(m.result as T) : reject(new Error(`floor: ${m.error}`)));
        proc.send(job);
      }),
  };
}
