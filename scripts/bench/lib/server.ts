/**
 * The servers under test: the image host as `bun run server` starts it (this checkout's, or another's with `root`),
 * nginx as the reference, and the tools the load needs (wrk, nginx: from Debian's packages when missing).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { render } from "./report.ts";
import { freePort, onCleanup, ROOT, run, stopProcess } from "./run.ts";

/**
 * The environment assignments package.json's "server" script puts before `bun run src/server.ts`
 * (`UV_THREADPOOL_SIZE=${UV_THREADPOOL_SIZE:-16}`), so the benchmark starts the server as `bun run server` does.
 */
export function serverScriptEnv(root = ROOT): Record<string, string> {
  const env: Record<string, string> = {};
  const script: string = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts?.server ?? "";
  for (const [, name, value, fallback] of script.matchAll(/(?:^|\s)([A-Z_][A-Z0-9_]*)=(\$\{\1:-([^}]*)\}|\S+)(?=\s)/g)) {
    env[name!] = fallback !== undefined ? (process.env[name!] ?? fallback) : value!;
  }
  return env;
}
export const serverCommand = (extra = "") =>
  `${Object.entries(serverScriptEnv())
    .map(([k, v]) => `${k}=${v} `)
    .join("")}${extra}bun run src/server.ts`;

export interface AppServer {
  label: string;
  pid: number;
  port: number;
  base: string;
  dataDir: string;
  adminToken: string;
  stop(): Promise<void>;
  /** The end of what it wrote (its log goes to a file beside DATA_DIR, as under systemd to the journal). */
  log(): string;
  /** Waits until its output matches: the ms since the process started, or null on timeout. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<number | null>;
}

/**
 * The server as its own process on a free loopback port; `databaseUrl` unset = the embedded default. Every benchmark
 * client comes from 127.0.0.1: UPLOAD_BODIES_PER_ADDRESS is raised to 64 so that 16 concurrent uploads are not
 * refused with 429. LOG_OBJECT_REQUESTS=false, as the reference nginx runs without an access log.
 */
export async function startAppServer(opts: {
  label: string;
  dataDir: string;
  adminToken?: string;
  databaseUrl?: string;
  /** The checkout whose server runs (another commit's, for a comparison); this one by default. */
  root?: string;
  env?: Record<string, string>;
}): Promise<AppServer> {
  const root = opts.root ?? ROOT;
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const adminToken = opts.adminToken ?? Buffer.from(crypto.getRandomValues(new Uint8Array(30))).toString("base64url");
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "DATABASE_URL") env[k] = v;
  Object.assign(env, serverScriptEnv(root), {
    PORT: String(port),
    HOST: "127.0.0.1",
    BASE_URL: base,
    DATA_DIR: opts.dataDir,
    ADMIN_TOKEN: adminToken,
    UPLOAD_BODIES_PER_ADDRESS: "64",
    UPLOAD_BODIES_TOTAL: "64",
    LOG_OBJECT_REQUESTS: "false",
    ...opts.env,
  });
  if (opts.databaseUrl) env.DATABASE_URL = opts.databaseUrl;
  const logFile = `${opts.dataDir}.server-${port}.log`; // beside DATA_DIR, which the server makes itself
  const started = performance.now();
  const proc = Bun.spawn([process.execPath, "run", "src/server.ts"], {
    cwd: root,
    env,
    stdout: Bun.file(logFile),
    stderr: Bun.file(`${logFile}.err`),
    stdin: "ignore",
  });
  const read = (f: string) => {
    try {
      return readFileSync(f, "utf8").slice(-8000);
    } catch {
      return "";
    }
  };
  const log = () => `${read(logFile)}\n${read(`${logFile}.err`)}`.trim();
  const unregister = onCleanup(`${opts.label} server (pid ${proc.pid})`, () => stopProcess(proc, 10_000));
  const stop = async () => {
    await stopProcess(proc, 10_000);
    unregister();
  };
  for (const deadline = performance.now() + 90_000; ; await Bun.sleep(100)) {
    if (proc.exitCode !== null) throw new Error(`${opts.label}: the server exited while starting:\n${log()}`);
    const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
    if (res?.status === 200) break;
    if (performance.now() > deadline) {
      await stop();
      throw new Error(`${opts.label}: no answer to /health within 90 s:\n${log()}`);
    }
  }
  return {
    label: opts.label,
    pid: proc.pid, // `bun run file.ts` runs the file in this same process: the pid is the server's
    port,
    base,
    dataDir: opts.dataDir,
    adminToken,
    stop,
    log,
    async waitForOutput(pattern, timeoutMs) {
      for (const deadline = performance.now() + timeoutMs; performance.now() < deadline; await Bun.sleep(100)) {
        if (pattern.test(read(logFile))) return performance.now() - started;
      }
      return null;
    },
  };
}

/** An admin API call, as an operator makes it: the answer's `data`. */
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
  token: string;
}
/** A user of the default group with room for everything a run uploads, and a permanent token. */
export async function createAccount(server: AppServer, username: string, extra: Record<string, unknown> = {}): Promise<Account> {
  const user = await admin<{ id: number }>(server, "POST", "/api/admin/users", {
    username,
    email: `${username}@bench.invalid`,
    capacity_kb: 1_000_000_000,
    ...extra,
  });
  return { id: user.id, token: (await admin<{ token: string }>(server, "POST", `/api/admin/users/${user.id}/tokens`)).token };
}

/** One upload of a prebuilt multipart body (or of bytes as a JPEG form): the answer's data, the time it took. */
export async function uploadOnce(
  server: AppServer,
  token: string,
  body: { bodyFile: string; contentType: string } | Uint8Array,
  headers: Record<string, string> = {},
) {
  const form = body instanceof Uint8Array ? new FormData() : null;
  form?.append("file", new Blob([body as Uint8Array<ArrayBuffer>], { type: "image/jpeg" }), "photo.jpg");
  const init = form
    ? { body: form, headers: { authorization: `Bearer ${token}`, ...headers } }
    : {
        body: await Bun.file((body as { bodyFile: string }).bodyFile).arrayBuffer(),
        headers: { authorization: `Bearer ${token}`, "content-type": (body as { contentType: string }).contentType, ...headers },
      };
  const t0 = performance.now();
  const res = await fetch(`${server.base}/api/v1/upload`, { method: "POST", ...init });
  const text = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw Object.assign(new Error(`${server.label}: upload → ${res.status} ${text.slice(0, 300)}`), { status: res.status, text });
  const data = (JSON.parse(text) as { data: { key: string; url: string; pathname: string; size: number } }).data;
  return { ...data, path: new URL(data.url).pathname, ms, t: performance.now() };
}

// ---------------------------------------------------------------- tools and nginx

export interface Tools {
  wrk: string;
  nginx: string;
  wrkVersion: string;
  nginxVersion: string;
}

/** wrk and nginx, installed from Debian's packages (apt-get, as root or with sudo -n) when missing. */
export async function ensureTools(): Promise<Tools> {
  const which = (name: string, fallback: string) => Bun.which(name) ?? (existsSync(fallback) ? fallback : null);
  const find = () => ({ wrk: which("wrk", "/usr/bin/wrk"), nginx: which("nginx", "/usr/sbin/nginx") });
  let found = find();
  if (!found.wrk || !found.nginx) {
    const sudo = process.getuid?.() === 0 ? [] : ["sudo", "-n"];
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    for (const nginx of ["nginx-light", "nginx"]) {
      const want = [...(found.wrk ? [] : ["wrk"]), ...(found.nginx ? [] : [nginx])];
      console.log(`installing ${want.join(" ")} from Debian's packages (apt-get)…`);
      let r = await run([...sudo, "apt-get", "install", "-y", "--no-install-recommends", ...want], { env, timeoutMs: 300_000 });
      if (r.code !== 0) await run([...sudo, "apt-get", "update"], { env, timeoutMs: 300_000 }); // a fresh machine has no package lists
      if (r.code !== 0) r = await run([...sudo, "apt-get", "install", "-y", "--no-install-recommends", ...want], { env, timeoutMs: 300_000 });
      found = find();
      if (found.wrk && found.nginx) break;
    }
  }
  if (!found.wrk || !found.nginx) throw new Error("bench needs wrk and nginx: apt-get install -y wrk nginx-light (as root, or with sudo)");
  const w = await run([found.wrk, "--version"]);
  return {
    wrk: found.wrk,
    nginx: found.nginx,
    wrkVersion: `${w.stdout}${w.stderr}`
      .split("\n")[0]!
      .replace(/ Copyright.*/, "")
      .trim(),
    nginxVersion: (await run([found.nginx, "-v"])).stderr.trim().replace(/^nginx version: /, ""),
  };
}

/** nginx as the reference: 2 workers, sendfile, no access log, `root` served on a free loopback port. */
export async function startNginx(bin: string, dir: string, root: string) {
  mkdirSync(dir, { recursive: true });
  const port = freePort();
  const config = render("nginx.conf", { user: process.getuid?.() === 0 ? "user root;\n" : "", dir, port, root });
  const file = join(dir, "nginx.conf");
  writeFileSync(file, config);
  const args = [bin, "-p", dir, "-e", join(dir, "error.log"), "-c", file];
  const test = await run([...args, "-t"]);
  if (test.code !== 0) throw new Error(`nginx -t failed: ${test.stderr}`);
  const proc = Bun.spawn([...args, "-g", "daemon off;"], { stdout: "ignore", stderr: "ignore", stdin: "ignore" });
  const stop = () => stopProcess(proc, 5000, "SIGQUIT"); // SIGQUIT: a graceful stop of master and workers
  const unregister = onCleanup(`nginx (pid ${proc.pid})`, stop);
  const base = `http://127.0.0.1:${port}`;
  for (
    const deadline = performance.now() + 10_000;
    !(await fetch(base).then(
      (r) => r.arrayBuffer(),
      () => null,
    ));
    await Bun.sleep(50)
  ) {
    if (performance.now() > deadline) throw new Error(`nginx did not start: ${readFileSync(join(dir, "error.log"), "utf8").slice(-2000)}`);
  }
  return { pid: proc.pid, base, config, stop: async () => (await stop(), unregister()) };
}
