/** The servers under test: the real image host (`bun run src/server.ts`) per topology, and nginx as the reference. */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, onCleanup, ROOT, run, tail } from "./util.ts";

export interface AppServer {
  label: string;
  pid: number;
  base: string;
  dataDir: string;
  adminToken: string;
  /** When the process started (performance.now()). */
  startedAt: number;
  stop(): Promise<void>;
  log(): string;
  /** Waits until the server's output matches; the ms since the process started, or null on timeout. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<number | null>;
}

async function waitUntilUp(base: string, exited: Promise<number>, log: () => string, timeoutMs: number) {
  const deadline = performance.now() + timeoutMs;
  let gone = false;
  void exited.then(() => (gone = true));
  while (performance.now() < deadline) {
    if (gone) throw new Error(`the server exited while starting:\n${log()}`);
    try {
      const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {}
    await Bun.sleep(100);
  }
  throw new Error(`the server did not answer /health within ${timeoutMs / 1000} s:\n${log()}`);
}

async function stopProcess(proc: { pid: number; kill(signal?: number | NodeJS.Signals): void; exited: Promise<number> }, graceMs: number) {
  try {
    proc.kill("SIGTERM");
  } catch {}
  const done = await Promise.race([proc.exited.then(() => true), Bun.sleep(graceMs).then(() => false)]);
  if (!done) {
    try {
      proc.kill("SIGKILL");
    } catch {}
    await proc.exited;
  }
}

/**
 * The environment assignments that package.json's "server" script puts before `bun run src/server.ts`
 * (e.g. `UV_THREADPOOL_SIZE=${UV_THREADPOOL_SIZE:-16}`), so the benchmark starts the server as `bun run server` does.
 */
export function serverScriptEnv(root = ROOT): Record<string, string> {
  const env: Record<string, string> = {};
  try {
    const script: string = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts?.server ?? "";
    for (const m of script.matchAll(/(?:^|\s)([A-Z_][A-Z0-9_]*)=(\$\{\1:-([^}]*)\}|\S+)(?=\s)/g)) {
      const [, name, value, fallback] = m;
      env[name!] = fallback !== undefined ? (process.env[name!] ?? fallback) : value!;
    }
  } catch {}
  return env;
}

/**
 * Starts the server as its own process on a free loopback port. `databaseUrl` unset = the embedded default in
 * DATA_DIR/db. UPLOAD_BODIES_PER_ADDRESS is raised to 64: every benchmark client comes from 127.0.0.1, and the
 * default (4 bodies at once per address) would refuse most of 16 concurrent uploads with 429. LOG_OBJECT_REQUESTS
 * is false, as the reference nginx runs without an access log.
 */
export async function startAppServer(opts: {
  label: string;
  dataDir: string;
  adminToken: string;
  databaseUrl?: string;
  /** The checkout whose server runs (another commit's, for a comparison); this one by default. */
  root?: string;
}): Promise<AppServer> {
  const root = opts.root ?? ROOT;
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const startedAt = performance.now();
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  delete env.DATABASE_URL;
  Object.assign(env, serverScriptEnv(root), {
    PORT: String(port),
    HOST: "127.0.0.1",
    BASE_URL: base,
    DATA_DIR: opts.dataDir,
    ADMIN_TOKEN: opts.adminToken,
    UPLOAD_BODIES_PER_ADDRESS: "64",
    UPLOAD_BODIES_TOTAL: "64",
    // like the reference nginx's `access_log off`: no line per object request (the API's requests are still logged;
    // what the line costs is measured in docs/operations.md, Logs)
    LOG_OBJECT_REQUESTS: "false",
  });
  if (opts.databaseUrl) env.DATABASE_URL = opts.databaseUrl;
  // the log goes to a file, as under systemd to the journal: no reader in this process competes for the CPU
  const logFile = `${opts.dataDir}.server-${port}.log`; // beside DATA_DIR, which the server makes itself
  // BENCH_CPU_PROF=DIR: each server writes a CPU profile (markdown) into DIR when it stops — where a page spends its time
  const prof = process.env.BENCH_CPU_PROF ? ["--cpu-prof-md", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const proc = Bun.spawn([process.execPath, ...prof, "run", "src/server.ts"], { cwd: root, env, stdout: Bun.file(logFile), stderr: "pipe", stdin: "ignore" });
  const out = () => {
    try {
      return readFileSync(logFile, "utf8").slice(-8000);
    } catch {
      return "";
    }
  };
  const err = tail(proc.stderr);
  const log = () => `${out()}\n${err()}`.trim();
  const stop = () => stopProcess(proc, 10_000);
  const unregister = onCleanup(`${opts.label} server (pid ${proc.pid})`, stop);
  try {
    await waitUntilUp(base, proc.exited, log, 90_000);
  } catch (e) {
    await stop();
    unregister();
    throw e;
  }
  // `bun run file.ts` runs the file in the same process: the pid is the server's, whose memory we sample
  const cmdline = readFileSync(`/proc/${proc.pid}/cmdline`, "utf8").split("\0").join(" ");
  if (!cmdline.includes("src/server.ts")) throw new Error(`pid ${proc.pid} is not the server (${cmdline})`);
  return {
    label: opts.label,
    pid: proc.pid,
    base,
    dataDir: opts.dataDir,
    adminToken: opts.adminToken,
    startedAt,
    log,
    async waitForOutput(pattern, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      while (performance.now() < deadline) {
        if (pattern.test(out())) return performance.now() - startedAt;
        await Bun.sleep(100);
      }
      return null;
    },
    async stop() {
      await stop();
      unregister();
    },
  };
}

/** Admin API calls, as an operator would make them. */
export async function admin<T = any>(server: AppServer, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${server.adminToken}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`admin ${method} ${path} → ${res.status} ${text.slice(0, 500)}`);
  return (JSON.parse(text) as { data: T }).data;
}

export interface Account {
  id: number;
  username: string;
  token: string;
}

/** A user of the default group with room for everything the run uploads, and a permanent token. */
export async function createAccount(server: AppServer, username: string): Promise<Account> {
  const user = await admin<{ id: number }>(server, "POST", "/api/admin/users", {
    username,
    email: `${username}@bench.invalid`,
    capacity_kb: 1_000_000_000,
  });
  const { token } = await admin<{ token: string }>(server, "POST", `/api/admin/users/${user.id}/tokens`);
  return { id: user.id, username, token };
}

export interface Nginx {
  pid: number;
  base: string;
  config: string;
  stop(): Promise<void>;
}

/** nginx as the issue specifies: 2 workers, sendfile, no access log, root = the local strategy's directory. */
export async function startNginx(bin: string, dir: string, root: string): Promise<Nginx> {
  mkdirSync(dir, { recursive: true });
  const port = freePort();
  const asRoot = process.getuid?.() === 0;
  const config = `# generated by scripts/bench: the reference static file server
${asRoot ? "user root;\n" : ""}worker_processes 2;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  # nginx closes a keep-alive connection after 1000 requests by default; the server under test never does
  keepalive_requests 1000000;
  types { image/png png; image/jpeg jpg jpeg; image/webp webp; image/gif gif; image/avif avif; }
  default_type application/octet-stream;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${root};
  }
}
`;
  const file = join(dir, "nginx.conf");
  writeFileSync(file, config);
  const test = await run([bin, "-t", "-p", dir, "-e", join(dir, "error.log"), "-c", file]);
  if (test.code !== 0) throw new Error(`nginx -t failed: ${test.stderr}`);
  const proc = Bun.spawn([bin, "-p", dir, "-e", join(dir, "error.log"), "-c", file, "-g", "daemon off;"], {
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const err = tail(proc.stderr);
  // SIGQUIT: graceful stop of master and workers; SIGTERM after that is a fast stop
  const stop = async () => {
    try {
      proc.kill("SIGQUIT");
    } catch {}
    const done = await Promise.race([proc.exited.then(() => true), Bun.sleep(5000).then(() => false)]);
    if (!done) await stopProcess(proc, 5000);
  };
  const unregister = onCleanup(`nginx (pid ${proc.pid})`, stop);
  const base = `http://127.0.0.1:${port}`;
  const deadline = performance.now() + 10_000;
  for (;;) {
    try {
      const res = await fetch(`${base}/`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      break;
    } catch {
      if (performance.now() > deadline) {
        await stop();
        unregister();
        throw new Error(`nginx did not start: ${err()}`);
      }
      await Bun.sleep(50);
    }
  }
  return {
    pid: proc.pid,
    base,
    config,
    async stop() {
      await stop();
      unregister();
    },
  };
}
