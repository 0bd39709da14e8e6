import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { processState } from "../../src/db/embedded/index.ts";
import { freePort, spawnServer, waitHealthy } from "../support/processes.ts";

/**
 * The first hour on a new machine, with the real server and CLI as a user runs them:
 * - a fresh clone of this repository's committed HEAD, in a directory only its owner may enter (mode 700), set up
 *   with the README's commands (`bun install`, `bun run server`, `bun run cli user create …`, `bun run cli token
 *   create …`, an upload): as root (the embedded PostgreSQL then runs in a user namespace) and as an unprivileged
 *   user; as root with user namespaces forbidden, the postgres-user fallback, and the refusal when neither works;
 * - a start right after a crash: the whole process tree SIGKILLed, or the server alone, and started again at once;
 *   a live server on the same DATA_DIR is still refused;
 * - a busy port is reported before anything is created.
 */
setDefaultTimeout(90_000); // installs and servers on a busy 2-core machine

const repo = join(import.meta.dir, "..", "..");
const isRoot = process.getuid?.() === 0;
const onLinux = process.platform === "linux";
const temps: string[] = [];
const servers: Bun.Subprocess[] = [];
afterAll(async () => {
  for (const proc of servers) if (proc.exitCode === null) proc.kill("SIGKILL");
  await Promise.all(servers.map((p) => p.exited));
  await Bun.sleep(200); // their PostgreSQL's parent-death signal: a fast shutdown before the directories go
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

/** A new directory of mode 700 (mkdtemp's), owned by `owner` when given. */
function privateDir(owner?: { uid: number; gid: number }) {
  const dir = mkdtempSync(join(tmpdir(), "imghost-first-"));
  temps.push(dir);
  chmodSync(dir, 0o700);
  if (owner) chownSync(dir, owner.uid, owner.gid);
  return dir;
}

interface User {
  name: string;
  uid: number;
  gid: number;
}

function passwdUser(name: string): User | null {
  for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
    const f = line.split(":");
    if (f[0] === name) return { name, uid: Number(f[2]), gid: Number(f[3]) };
  }
  return null;
}

/** The environment a user's shell would have: none of the test run's database or server settings. */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(DATABASE_URL|TEST_DATABASE_URL|ADMIN_TOKEN|BASE_URL|DATA_DIR|PORT|HOST|METRICS_TOKEN|IMAGE_HOST_.*)$/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

/** `argv` as `user` (setpriv, util-linux), or as this process. */
function as(user: User | undefined, argv: string[]) {
  return user ? ["setpriv", `--reuid=${user.uid}`, `--regid=${user.gid}`, "--init-groups", "--", ...argv] : argv;
}

async function run(argv: string[], options: { cwd: string; env: Record<string, string>; user?: User; stdin?: string }) {
  const proc = Bun.spawn(as(options.user, argv), {
    cwd: options.cwd,
    env: options.env,
    stdin: options.stdin === undefined ? "ignore" : new TextEncoder().encode(options.stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

async function runOk(argv: string[], options: Parameters<typeof run>[1]) {
  const r = await run(argv, options);
  if (r.code !== 0) throw new Error(`${argv.join(" ")} exited with ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r;
}

const logOf = (file: string) => (existsSync(file) ? readFileSync(file, "utf8") : "");

/**
 * `bun run server` in `cwd`, as `user`, with `env` alone (a user's shell's); resolves once /health answers 200 (or
 * throws with the server's output). `previous`: the pid of a killed server on the same port, whose end is awaited
 * after the spawn (so that it is not the one answering).
 */
async function startServer(cwd: string, env: Record<string, string>, log: string, user?: User, previous?: number) {
  const proc = spawnServer({ cwd, argv: as(user, ["bun", "run", "server"]), inherit: false, env, stdout: { file: log }, stderr: { file: log } });
  servers.push(proc);
  while (previous && processState(previous) !== "dead") await Bun.sleep(10);
  await waitHealthy(proc, `http://127.0.0.1:${env.PORT}`, 45_000);
  return proc;
}

/** `bun run server` in `cwd` with `env` alone, expected to refuse to start: its exit code and what it printed. */
async function refusedStart(cwd: string, env: Record<string, string>) {
  const proc = spawnServer({ cwd, argv: ["bun", "run", "server"], inherit: false, env, stdout: "pipe", stderr: "pipe" });
  servers.push(proc);
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

async function stopServer(proc: Bun.Subprocess) {
  proc.kill("SIGTERM");
  expect(await proc.exited).toBe(0);
}

/** A fresh clone of this repository's committed HEAD in `dir`/img (no hard links into this checkout's objects). */
async function cloneInto(dir: string) {
  const checkout = join(dir, "img");
  await runOk(["git", "clone", "--quiet", "--no-hardlinks", repo, checkout], { cwd: dir, env: cleanEnv() });
  return checkout;
}

/** The README's walk-through against a running server: a user, a token, an upload that can be fetched back. */
async function readmeWalkThrough(checkout: string, env: Record<string, string>, user?: User) {
  await runOk(["bun", "run", "cli", "user", "create", "alice", "--email", "alice@example.com"], { cwd: checkout, env, user });
  const created = await runOk(["bun", "run", "cli", "token", "create", "alice"], { cwd: checkout, env, user });
  const token = created.stdout.trim().split("\n").at(-1)!.trim();
  expect(token).toMatch(/^\d+\|\S+$/);
  const form = new FormData();
  const png = new Uint8Array(
    await sharp({ create: { width: 64, height: 48, channels: 3, background: "#3366cc" } })
      .png()
      .toBuffer(),
  );
  form.append("file", new Blob([png], { type: "image/png" }), "screenshot.png");
  const res = await fetch(`http://127.0.0.1:${env.PORT}/api/v1/upload`, { method: "POST", headers: { Authorization: `Bearer ${token}` }, body: form });
  const body = (await res.json()) as { status: boolean; data: { links: { url: string } } };
  if (res.status !== 200) throw new Error(`upload: ${res.status} ${JSON.stringify(body)}`);
  const image = await fetch(body.data.links.url.replace(/^http:\/\/localhost:/, "http://127.0.0.1:"));
  expect(image.status).toBe(200);
  expect(new Uint8Array(await image.arrayBuffer())).toEqual(png);
}

/** The server process holding DATA_DIR (`bun run server` runs it as a child of its own). */
function serverPid(dataDir: string) {
  return Number(readFileSync(join(dataDir, "server.lock"), "utf8").trim().split(/\s+/)[0]);
}

/** The postmaster of the embedded PostgreSQL in DATA_DIR/postgres. */
function postmasterPid(dataDir: string) {
  return Number(readFileSync(join(dataDir, "postgres", "postmaster.pid"), "utf8").split("\n")[0]);
}

const userNamespaceOf = (pid: number) => readlinkSync(`/proc/${pid}/ns/user`);

/** Whether root may make a user namespace here, as the embedded server would. */
async function userNamespacesAllowed() {
  const inside = passwdUser("postgres") ?? passwdUser("daemon");
  if (!inside) return false;
  const r = await run(["unshare", "--user", `--map-user=${inside.uid}`, `--map-group=${inside.gid}`, "--", "true"], { cwd: "/", env: cleanEnv() });
  return r.code === 0;
}

// all of this is about the embedded default: once per CI run (the pass on TEST_DATABASE_URL's server skips it)
const otherPass = Boolean(process.env.TEST_DATABASE_URL);
if (otherPass) console.log("first-start: skipped in the TEST_DATABASE_URL pass (it tests the embedded default, run in the embedded pass)");
const skipUnlessRootOnLinux = otherPass || !isRoot || !onLinux;
if (!otherPass && skipUnlessRootOnLinux) {
  console.log(
    `first-start: the clone-as-root and unprivileged-user tests need root on Linux (they switch users with setpriv); ` +
      `skipped here (uid ${process.getuid?.()}, ${process.platform}). CI runs as root.`,
  );
}

describe("a fresh clone, set up with the README's commands", () => {
  test.skipIf(skipUnlessRootOnLinux)("as root, in a directory only root may enter", async () => {
    const top = privateDir();
    expect(statSync(top).mode & 0o777).toBe(0o700);
    const checkout = await cloneInto(top);
    const t0 = performance.now();
    await runOk(["bun", "install"], { cwd: checkout, env: cleanEnv() });
    console.log(`first-start (root): bun install in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    const env = cleanEnv({ PORT: String(await freePort()), HOST: "127.0.0.1" });
    if (!(await userNamespacesAllowed())) {
      // no way around PostgreSQL's refusal of root here: the start is refused, naming the remedies
      const r = await refusedStart(checkout, env);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("Run the server as a user other than root");
      console.log("first-start: user namespaces are not allowed on this machine: checked the refusal instead of the start");
      return;
    }
    const t1 = performance.now();
    const server = await startServer(checkout, env, join(top, "server.log"));
    console.log(`first-start (root): first start (initdb, migrations) in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
    const dataDir = join(checkout, "data");
    // PostgreSQL ran in a user namespace of its own, and its files are root's outside
    const postmaster = postmasterPid(dataDir);
    expect(userNamespaceOf(postmaster)).not.toBe(userNamespaceOf(process.pid));
    expect(statSync(join(dataDir, "postgres")).uid).toBe(0);
    expect(statSync(join(dataDir, "postgres", "PG_VERSION")).uid).toBe(0);
    expect(logOf(join(top, "server.log"))).not.toContain('Created the system user "postgres"');

    await readmeWalkThrough(checkout, env);
    await stopServer(server);

    // and again: the cluster is found and started as it was made
    const again = await startServer(checkout, env, join(top, "server-2.log"));
    const users = await fetch(`http://127.0.0.1:${env.PORT}/api/admin/users`, {
      headers: { Authorization: `Bearer ${readFileSync(join(dataDir, "admin-token"), "utf8").trim()}` },
    });
    expect(JSON.stringify(await users.json())).toContain('"alice"');
    await stopServer(again);

    // where user namespaces are forbidden, the postgres user cannot run binaries below /root-like directories: refused, with the remedies
    const refused = await refusedStart(checkout, { ...env, DATA_DIR: join(top, "data-without-namespaces"), IMAGE_HOST_NO_USER_NAMESPACE: "1" });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("cannot be made (disabled by IMAGE_HOST_NO_USER_NAMESPACE=1)");
    expect(refused.stderr).toContain("Run the server as a user other than root, allow user namespaces");
    expect(refused.stderr).toContain("or set DATABASE_URL");
  });

  const nobody = onLinux ? passwdUser("nobody") : null;
  test.skipIf(skipUnlessRootOnLinux || !nobody)("as an unprivileged user, in a directory only that user may enter", async () => {
    const user = nobody!;
    const top = privateDir(user);
    const checkout = await cloneInto(top);
    await runOk(["chown", "-R", `${user.uid}:${user.gid}`, checkout], { cwd: top, env: cleanEnv() });
    // node_modules: this checkout's, through a symlink, when the user can reach it (the root test runs the real
    // `bun install`; the user's own would download every package again: 3–35 s here); else the user's own install
    const home = { HOME: top, BUN_INSTALL_CACHE_DIR: join(top, ".bun-cache"), XDG_CACHE_HOME: join(top, ".cache") };
    const modules = join(repo, "node_modules");
    if ((await run(["test", "-x", join(modules, ".bin")], { cwd: "/", env: cleanEnv(), user })).code === 0) {
      symlinkSync(modules, join(checkout, "node_modules"));
    } else {
      const t0 = performance.now();
      await runOk(["bun", "install"], { cwd: checkout, env: cleanEnv(home), user });
      console.log(`first-start (${user.name}): bun install in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }

    const env = cleanEnv({ ...home, PORT: String(await freePort()), HOST: "127.0.0.1" });
    const server = await startServer(checkout, env, join(top, "server.log"), user);
    const dataDir = join(checkout, "data");
    // no namespace needed: PostgreSQL runs as the user, and everything it made is the user's
    expect(userNamespaceOf(postmasterPid(dataDir))).toBe(userNamespaceOf(process.pid));
    expect(statSync(join(dataDir, "postgres")).uid).toBe(user.uid);
    expect(statSync(join(dataDir, "admin-token")).uid).toBe(user.uid);
    await readmeWalkThrough(checkout, env, user);
    await stopServer(server);
  });

  const postgresUser = onLinux ? passwdUser("postgres") : null;
  test.skipIf(skipUnlessRootOnLinux || !postgresUser)(
    "as root where user namespaces are forbidden or cannot reach DATA_DIR: the postgres user runs it, and keeps running it",
    async () => {
      // a DATA_DIR the postgres user can reach; this checkout's binaries (reachable unless it lies below a private directory)
      const reach = await run(["test", "-x", join(repo, "node_modules/.bin")], { cwd: "/", env: cleanEnv(), user: postgresUser! });
      if (reach.code !== 0) {
        console.log(`first-start: the postgres user cannot reach ${repo}/node_modules: fallback test skipped`);
        return;
      }
      const top = privateDir();
      chmodSync(top, 0o755);
      const env = cleanEnv({ PORT: String(await freePort()), HOST: "127.0.0.1", DATA_DIR: join(top, "data") });
      const first = await startServer(repo, { ...env, IMAGE_HOST_NO_USER_NAMESPACE: "1" }, join(top, "server.log"));
      expect(statSync(join(top, "data", "postgres")).uid).toBe(postgresUser!.uid);
      expect(userNamespaceOf(postmasterPid(join(top, "data")))).toBe(userNamespaceOf(process.pid));
      await stopServer(first);
      // namespaces allowed again: a cluster that belongs to postgres still runs as postgres
      const second = await startServer(repo, env, join(top, "server-2.log"));
      expect(readFileSync(`/proc/${postmasterPid(join(top, "data"))}/status`, "utf8")).toMatch(new RegExp(`^Uid:\\s+${postgresUser!.uid}\\s`, "m"));
      await stopServer(second);

      // a DATA_DIR below another user's private directory is out of the namespace's reach (root without its
      // privileges): the postgres user, which may pass such directories, makes the cluster instead
      const other = passwdUser("nobody");
      if (other) {
        const theirs = join(top, "theirs");
        mkdirSync(theirs, { mode: 0o700 });
        chownSync(theirs, other.uid, other.gid);
        const third = await startServer(repo, { ...env, DATA_DIR: join(theirs, "data") }, join(top, "server-3.log"));
        expect(statSync(join(theirs, "data", "postgres")).uid).toBe(postgresUser!.uid);
        await stopServer(third);
      }
    },
  );
});

describe("a start right after a crash", () => {
  const ADMIN_TOKEN = "first-start-test-admin-token-0123456789";
  let dataDir: string;
  let port: number;
  let env: Record<string, string>;
  let logs = 0;
  const log = () => join(dataDir, "..", `server-${++logs}.log`);
  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  async function freshServer() {
    if (!dataDir) {
      dataDir = join(privateDir(), "data");
      port = await freePort();
      env = cleanEnv({ PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir, ADMIN_TOKEN });
    }
    return startServer(repo, env, log());
  }

  /** The postmaster's children (its backends and auxiliary processes). */
  function childrenOf(pid: number) {
    return readdirSync("/proc")
      .filter((name) => /^\d+$/.test(name))
      .filter((name) => {
        try {
          const stat = readFileSync(`/proc/${name}/stat`, "utf8");
          return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid;
        } catch {
          return false;
        }
      })
      .map(Number);
  }

  test.skipIf(otherPass || !onLinux)("the whole process tree SIGKILLed (server, PostgreSQL, its backends), started again at once", async () => {
    const server = await freshServer();
    const created = await admin("POST", "/api/admin/users", { username: "crash1", email: "crash1@example.com" });
    expect(created.status).toBe(200);
    const postmaster = postmasterPid(dataDir);
    const holder = serverPid(dataDir);
    const tree = [...new Set([server.pid, holder, postmaster, ...childrenOf(postmaster)])]; // `bun run` + the server it runs
    expect(tree.length).toBeGreaterThan(3);
    for (const pid of tree) process.kill(pid, "SIGKILL");
    const t0 = performance.now();
    const restarted = await startServer(repo, env, log(), undefined, holder); // no pause, nothing reaped yet
    console.log(`first-start: whole tree killed, back in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const users = await (await admin("GET", "/api/admin/users")).text();
    expect(users).toContain('"crash1"');
    await stopServer(restarted);
  });

  test.skipIf(otherPass || !onLinux)("the server alone SIGKILLed (its PostgreSQL left running), started again at once", async () => {
    await freshServer();
    const created = await admin("POST", "/api/admin/users", { username: "crash2", email: "crash2@example.com" });
    expect(created.status).toBe(200);
    const postmaster = postmasterPid(dataDir);
    const holder = serverPid(dataDir);
    process.kill(holder, "SIGKILL");
    const t0 = performance.now();
    const restarted = await startServer(repo, env, log(), undefined, holder);
    console.log(`first-start: server killed alone, back in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    // the orphaned postmaster was stopped and a new one started
    expect(postmasterPid(dataDir)).not.toBe(postmaster);
    const stat = (() => {
      try {
        return readFileSync(`/proc/${postmaster}/stat`, "utf8");
      } catch {
        return "gone";
      }
    })();
    expect(stat === "gone" || / Z /.test(stat)).toBe(true);
    expect(await (await admin("GET", "/api/admin/users")).text()).toContain('"crash2"');

    // a live server on the same DATA_DIR is still refused, at once
    const t1 = performance.now();
    const second = await refusedStart(repo, { ...env, PORT: String(await freePort()) });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`is in use by process ${serverPid(dataDir)}`);
    expect(performance.now() - t1).toBeLessThan(10_000);
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    await stopServer(restarted);
  });
});

test("a busy port is reported before anything is created", async () => {
  const busy = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("taken") });
  try {
    const dataDir = join(privateDir(), "data");
    const t0 = performance.now();
    const r = await refusedStart(repo, cleanEnv({ PORT: String(busy.port), HOST: "127.0.0.1", DATA_DIR: dataDir }));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`PORT: ${busy.port} is already in use on 127.0.0.1`);
    expect(existsSync(join(dataDir, "postgres"))).toBe(false);
    expect(existsSync(dataDir)).toBe(false);
    console.log(`first-start: busy port refused in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    await busy.stop(true);
  }
});
