/** What a killed server may leave behind (a postmaster, its shared memory, its lock file), found and cleared before a start. */
import { writeFileSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { PORT, type ConnectionOptions } from "./options.ts";
import { onLinux } from "./runner.ts";

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

export function readPidFile(dir: string): string[] | null {
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
export async function clearPrevious(dir: string, socketDir: string, deadline: number) {
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
