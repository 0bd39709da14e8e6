/**
 * Contract test: runs Dredd against the real server, started here as a subprocess.
 *
 *   bun run test:contract            # the whole run
 *   bun run test:contract --names    # extra arguments go to Dredd (here: list the transaction names)
 *
 * The server gets a free loopback port, a temporary DATA_DIR (the embedded PostgreSQL) and a fixed ADMIN_TOKEN; the
 * hooks (test/contract/hooks.cjs) seed users, tokens and images through the admin API. The run is bounded
 * (CONTRACT_TIMEOUT_SECONDS, default 300) and the server is always stopped; the exit code is Dredd's.
 */
import { type Subprocess, spawn } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");
const ADMIN_TOKEN = "contract-admin-token-0123456789abcdef";
const HEALTH_TIMEOUT_MS = 60_000;
const DREDD_TIMEOUT_MS = Number(process.env.CONTRACT_TIMEOUT_SECONDS ?? 300) * 1000;
const STOP_TIMEOUT_MS = 10_000;

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => ok(port));
    });
  });
}

async function waitForHealth(url: string, server: Subprocess) {
  const deadline = Date.now() + HEALTH_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`the server exited with code ${server.exitCode} before it was ready`);
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) return;
    } catch {}
    await Bun.sleep(200);
  }
  throw new Error(`the server did not answer 200 on /health within ${HEALTH_TIMEOUT_MS / 1000} s`);
}

async function stop(proc: Subprocess | undefined, name: string) {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill("SIGTERM");
  const done = await Promise.race([proc.exited.then(() => true), Bun.sleep(STOP_TIMEOUT_MS).then(() => false)]);
  if (!done) {
    console.error(`${name} did not stop within ${STOP_TIMEOUT_MS / 1000} s of SIGTERM; killing it`);
    proc.kill("SIGKILL");
    await proc.exited;
  }
}

const work = mkdtempSync(join(tmpdir(), "imghost-contract-"));
const dataDir = join(work, "data");
const specPath = join(root, "openapi/openapi-3.0.json");
let server: Subprocess | undefined;
let dredd: Subprocess | undefined;
let cleaned = false;

async function cleanup() {
  if (cleaned) return;
  cleaned = true;
  await stop(dredd, "Dredd");
  await stop(server, "The server");
  rmSync(work, { recursive: true, force: true });
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    console.error(`${signal}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}

let code = 1;
try {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;

  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: String(port),
    HOST: "127.0.0.1",
    DATA_DIR: dataDir,
    BASE_URL: url,
    ADMIN_TOKEN,
    DATABASE_URL: undefined, // always the embedded database
    SWEEP_INTERVAL_SECONDS: "3600",
    TRUST_PROXY: "1", // the 429 cases come from their own X-Forwarded-For addresses
  };
  server = spawn(["bun", "run", "src/server.ts"], { cwd: root, env, stdout: "inherit", stderr: "inherit" });
  await waitForHealth(url, server);

  const args = [
    join(root, "node_modules/dredd/bin/dredd"),
    specPath,
    url,
    `--hookfiles=${join(root, "test/contract/hooks.cjs")}`,
    "--language=nodejs",
    "--loglevel=warning",
    ...(process.env.CI || !process.stdout.isTTY ? ["--no-color"] : []),
    ...process.argv.slice(2),
  ];
  dredd = spawn(["node", ...args], {
    cwd: root,
    env: { ...process.env, CONTRACT_SERVER_URL: url, CONTRACT_ADMIN_TOKEN: ADMIN_TOKEN },
    stdout: "inherit",
    stderr: "inherit",
  });
  const timedOut = Symbol("timeout");
  const result = await Promise.race([dredd.exited, Bun.sleep(DREDD_TIMEOUT_MS).then(() => timedOut)]);
  if (result === timedOut) {
    console.error(`Dredd did not finish within ${DREDD_TIMEOUT_MS / 1000} s`);
    code = 1;
  } else {
    code = result as number;
  }
} catch (e) {
  console.error(`contract test: ${(e as Error).message}`);
  code = 1;
} finally {
  await cleanup();
}
process.exit(code);
