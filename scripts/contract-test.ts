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
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort, spawnServer, waitHealthy } from "../test/support/processes.ts";

const root = resolve(import.meta.dir, "..");
const ADMIN_TOKEN = "contract-admin-token-0123456789abcdef";
const HEALTH_TIMEOUT_MS = 60_000;
const DREDD_TIMEOUT_MS = Number(process.env.CONTRACT_TIMEOUT_SECONDS ?? 300) * 1000;
const STOP_TIMEOUT_MS = 10_000;

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

  // DATABASE_URL is not passed on: always the embedded database
  server = spawnServer({
    env: {
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      BASE_URL: url,
      ADMIN_TOKEN,
      SWEEP_INTERVAL_SECONDS: "3600",
      TRUST_PROXY: "1", // the 429 cases come from their own X-Forwarded-For addresses
    },
    stdout: "inherit",
    stderr: "inherit",
  });
  await waitHealthy(server, url, HEALTH_TIMEOUT_MS);

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
