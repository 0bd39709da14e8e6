import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { freePort } from "../support/processes.ts";

/**
 * The README's Quick start, run exactly as written on a fresh clone.
 *
 * - The ```sh block under the "## Quick start" heading of the clone's README.md is the script; its lines are run
 *   one by one, unchanged. Blank lines and comment lines are skipped (the shell would skip them too).
 * - The clone: `git clone --no-hardlinks` of this repository's committed HEAD into a new temp directory. The
 *   server line (the one running `bun run server`, which starts with `bun install`) runs there as written: `bun
 *   install` fills the clone's own node_modules from Bun's global cache (warm after this checkout's install), so
 *   nothing is linked into this checkout.
 * - The server line runs in the background (`bash -c LINE`, a process group of its own); every other line runs in
 *   one bash process fed line by line (so `TOKEN=…` is seen by the next line, as in a terminal), with standard
 *   input from /dev/null and 60 s each; each must exit 0.
 * - The port: the README tells users who change it to set PORT (or BASE_URL) for the server and the CLI alike, so
 *   every line gets a free PORT and BASE_URL=http://localhost:PORT in its environment, and nothing else of the test
 *   run's (no DATABASE_URL, ADMIN_TOKEN, DATA_DIR): the embedded default in the clone's ./data.
 * - The upload line uploads `screenshot.png`, "any image of yours": the test puts a small PNG there first.
 * - Checks: every line exits 0, the upload prints the API's envelope with "status":true, and the user-center
 *   address the block names (its origin swapped for BASE_URL) answers 200 or a redirect.
 * Skipped, saying so, only where git is missing.
 */
setDefaultTimeout(120_000);

const repo = join(import.meta.dir, "..", "..");
const LINE_TIMEOUT_MS = 60_000;
const temps: string[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => {});
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

/** The lines of the ```sh block under "## Quick start". */
export function quickStart(markdown: string): string[] {
  const section = /^## Quick start[^\n]*\n([\s\S]*?)(?=^## )/m.exec(markdown)?.[1];
  if (!section) throw new Error('README.md has no "## Quick start" section');
  const block = /^```sh\n([\s\S]*?)^```/m.exec(section)?.[1];
  if (!block) throw new Error("the Quick start has no ```sh block");
  return block.split("\n").filter((l) => l.trim() !== "");
}

const isComment = (line: string) => line.trim().startsWith("#");

/** A user's shell environment: none of the test run's database or server settings. */
function userEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(DATABASE_URL|TEST_DATABASE_URL|ADMIN_TOKEN|BASE_URL|DATA_DIR|PORT|HOST|METRICS_TOKEN|LOG_.*|IMAGE_HOST_.*)$/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

/** One bash process that runs lines one at a time, keeping its variables between them. */
function lineShell(cwd: string, env: Record<string, string>) {
  const proc = Bun.spawn(["bash"], { cwd, env, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  const decoder = new TextDecoder();
  let buffer = "";
  const reader = proc.stdout.getReader();
  const pump = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
    }
  })();
  let n = 0;
  return {
    proc,
    /** Runs `line` as written (inside `{ …\n}`, so that an assignment stays and a trailing comment ends at the newline). */
    async run(line: string): Promise<{ code: number; output: string }> {
      const marker = `@@quickstart-line-${++n}-exit `;
      proc.stdin.write(`{ ${line}\n} </dev/null 2>&1; printf '\\n${marker}%d\\n' "$?"\n`);
      proc.stdin.flush();
      const deadline = Date.now() + LINE_TIMEOUT_MS;
      for (;;) {
        const at = buffer.indexOf(marker);
        const end = at >= 0 ? buffer.indexOf("\n", at) : -1;
        if (end >= 0) {
          const output = buffer.slice(0, at);
          const code = Number(buffer.slice(at + marker.length, end));
          buffer = buffer.slice(end + 1);
          return { code, output };
        }
        if (proc.exitCode !== null) throw new Error(`bash ended (${proc.exitCode}) while running: ${line}\n${buffer}`);
        if (Date.now() > deadline) throw new Error(`still running after ${LINE_TIMEOUT_MS / 1000} s: ${line}\n${buffer}`);
        await Bun.sleep(25);
      }
    },
    async close() {
      proc.stdin.end();
      const ended = await Promise.race([proc.exited, Bun.sleep(5000).then(() => null)]);
      if (ended === null) proc.kill("SIGKILL");
      await pump.catch(() => {});
    },
  };
}

const hasGit = Bun.which("git") !== null;
if (!hasGit) console.log("readme-quickstart: skipped: git is not installed (the test runs the Quick start in a fresh git clone)");

test.skipIf(!hasGit)("the README's Quick start, exactly as written, on a fresh clone", async () => {
  const started = performance.now();
  const top = mkdtempSync(join(tmpdir(), "imghost-quickstart-"));
  temps.push(top);
  // as root where user namespaces are forbidden, the embedded PostgreSQL runs as the user postgres, which must be
  // able to reach the checkout: a directory anyone may enter (the mode-700 case is test/first-start's)
  chmodSync(top, 0o755);
  const checkout = join(top, "img");
  const clone = Bun.spawnSync(["git", "clone", "--quiet", "--no-hardlinks", repo, checkout], { env: userEnv({}), stderr: "pipe" });
  if (clone.exitCode !== 0) throw new Error(`git clone: ${clone.stderr.toString()}`);

  const lines = quickStart(readFileSync(join(checkout, "README.md"), "utf8"));
  expect(lines.length).toBeLessThanOrEqual(12);
  const serverLine = lines.find((l) => /\bbun run server\b/.test(l) && !isComment(l));
  if (!serverLine) throw new Error("the Quick start has no line running `bun run server`");
  const userCenter = lines.join("\n").match(/http:\/\/localhost:3000(\/user\/[\w/-]*)/)?.[1];
  if (!userCenter) throw new Error("the Quick start names no user-center address (http://localhost:3000/user/…)");
  const uploadLine = lines.find((l) => !isComment(l) && /\/api\/v1\/upload\b/.test(l));
  if (!uploadLine) throw new Error("the Quick start has no upload line");
  const image = /file=@([\w.-]+)/.exec(uploadLine)?.[1];
  if (!image) throw new Error(`the upload line names no file: ${uploadLine}`);
  // "any image of yours"
  await Bun.write(
    join(checkout, image),
    await sharp({ create: { width: 640, height: 400, channels: 3, background: "#3366cc" } })
      .png()
      .toBuffer(),
  );

  const port = await freePort("0.0.0.0");
  const baseUrl = `http://localhost:${port}`;
  const env = userEnv({ PORT: String(port), BASE_URL: baseUrl });

  // the server line, in the background
  const serverLog = join(top, "server.log");
  const server = Bun.spawn(["bash", "-c", serverLine], {
    cwd: checkout,
    env,
    stdin: "ignore",
    stdout: Bun.file(serverLog),
    stderr: Bun.file(serverLog),
    detached: true,
  });
  cleanups.push(async () => {
    if (server.exitCode !== null) return;
    const lock = join(checkout, "data", "server.lock");
    const serverPid = existsSync(lock) ? Number(readFileSync(lock, "utf8").trim().split(/\s+/)[0]) : 0;
    try {
      if (serverPid > 0)
        process.kill(serverPid, "SIGTERM"); // drains, stops its PostgreSQL, exits
      else process.kill(-server.pid, "SIGTERM");
    } catch {
      // already gone
    }
    const ended = await Promise.race([server.exited, Bun.sleep(15_000).then(() => null)]);
    if (ended === null) {
      try {
        process.kill(-server.pid, "SIGKILL");
      } catch {
        // already gone
      }
      await server.exited;
    }
  });
  const log = () => (existsSync(serverLog) ? readFileSync(serverLog, "utf8") : "");
  for (const deadline = Date.now() + LINE_TIMEOUT_MS; ; ) {
    if (server.exitCode !== null) throw new Error(`${serverLine}\nexited with ${server.exitCode}:\n${log()}`);
    const res = await fetch(`http://127.0.0.1:${port}/health`).catch(() => null);
    if (res?.status === 200) break;
    if (Date.now() > deadline) throw new Error(`${serverLine}\ndid not answer /health within ${LINE_TIMEOUT_MS / 1000} s:\n${log()}`);
    await Bun.sleep(100);
  }
  console.log(`readme-quickstart: clone, bun install and server start in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  // every other line, in order, in one shell
  const shell = lineShell(checkout, env);
  cleanups.unshift(() => shell.close());
  for (const line of lines) {
    if (line === serverLine || isComment(line)) continue;
    const { code, output } = await shell.run(line);
    if (code !== 0) throw new Error(`${line}\nexited with ${code}:\n${output}\n--- server log ---\n${log()}`);
    if (line === uploadLine) {
      expect(output).toContain('"status":true');
      const body = JSON.parse(output.trim()) as { status: boolean; data: { links: { url: string } } };
      expect(body.status).toBe(true);
      const stored = await fetch(body.data.links.url);
      expect(stored.status).toBe(200);
    }
  }

  const page = await fetch(`${baseUrl}${userCenter}`, { redirect: "manual" });
  expect([200, 301, 302, 303, 307, 308]).toContain(page.status);
  console.log(`readme-quickstart: ${lines.length} lines run as written in ${((performance.now() - started) / 1000).toFixed(1)} s`);
});
