/** Who runs PostgreSQL: this user, the same user in a user namespace (under root), or the system user `postgres`. */
import { spawn } from "bun";
import { execFileSync } from "node:child_process";
import { statSync, existsSync, readFileSync } from "node:fs";
import type { Binaries } from "./binaries.ts";

interface RunAs {
  uid: number;
  gid: number;
}

/**
 * How PostgreSQL is run: as this process's user; under root, in a user namespace where root appears as the
 * unprivileged `uid`/`gid` (an existing passwd entry: initdb looks its name up); or as another user (`postgres`).
 */
export type Runner = { kind: "self" } | { kind: "userns"; uid: number; gid: number; unshare: string } | ({ kind: "user" } & RunAs);

export const onLinux = process.platform === "linux";
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
export function probeUserNamespace(bin: Binaries): Promise<Runner | string> {
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
export function postgresUser(): RunAs {
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

export const ROOT_REMEDIES =
  "Run the server as a user other than root, allow user namespaces (what forbids them to root is usually a " +
  "container's seccomp profile, or the sysctl user.max_user_namespaces=0), or set DATABASE_URL.";

/**
 * Who runs PostgreSQL on cluster `dir`. Not root: this user. Root: a cluster that exists runs as its owner (in a
 * user namespace when that is root); a new one in a user namespace, else as the `postgres` user.
 */
export async function runnerFor(bin: Binaries, dir: string): Promise<Runner> {
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
export function command(argv: string[], runner: Runner, deathSignal: "SIGINT" | "SIGKILL"): { cmd: string[]; ids: Partial<RunAs> } {
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
