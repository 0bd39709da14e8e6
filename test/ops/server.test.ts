import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeImage, multipart } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";
import { freePort, spawnServer, waitHealthy as waitUntilHealthy } from "../support/processes.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

/** The real entry point (src/server.ts) as a subprocess: environment, first start, restart, stop. */
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir() {
  const d = mkdtempSync(join(tmpdir(), "imghost-server-"));
  dirs.push(d);
  return d;
}

/** The server with both outputs kept; PORT 0 unless a test names one: the suite must pass beside a server on the default port. */
const start = (env: Record<string, string>) =>
  spawnServer({ env: { ADMIN_TOKEN: undefined, HOST: "127.0.0.1", PORT: "0", ...env }, stdout: "pipe", stderr: "pipe" });

const waitHealthy = (port: number, proc: ReturnType<typeof start>) => waitUntilHealthy(proc, `http://127.0.0.1:${port}`, 30_000);

describe("environment validation", () => {
  for (const [name, value, line] of [
    ["PORT", "abc", 'PORT: "abc" is not a port number (0–65535)'],
    ["PORT", "70000", 'PORT: "70000" is not a port number (0–65535)'],
    ["DATABASE_URL", "mysql://x", "DATABASE_URL: must be a postgres:// or postgresql:// URL"],
    ["BASE_URL", "ftp://example.com", 'BASE_URL: Invalid URL (given: "ftp://example.com")'],
    ["ADMIN_TOKEN", "short", "ADMIN_TOKEN: must be at least 32 characters (generate one with: openssl rand -base64 32)"],
    ["TRUST_PROXY", "maybe", 'TRUST_PROXY: must be true, false or the number of proxies in front of the server (0–10) (given: "maybe")'],
    ["SWEEP_INTERVAL_SECONDS", "0", 'SWEEP_INTERVAL_SECONDS: Too small: expected number to be >=1 (given: "0")'],
    ["TZ", "Mars/Olympus_Mons", 'TZ: "Mars/Olympus_Mons" is not a time zone (use a name like UTC or Europe/Paris)'],
    ["LOG_LEVEL", "loud", 'LOG_LEVEL: "loud" is not a log level: fatal, error, warn, info, debug, trace, silent'],
    ["LOG_FORMAT", "xml", 'LOG_FORMAT: "xml" is not a log format: json or pretty'],
    ["METRICS_TOKEN", "short", "METRICS_TOKEN: must be at least 16 characters (generate one with: openssl rand -base64 24)"],
  ] as const) {
    test(`${name}=${value} → one line naming it, exit code 1`, async () => {
      const proc = start({ DATA_DIR: tempDir(), [name]: value });
      expect(await proc.exited).toBe(1);
      const stderr = await new Response(proc.stderr).text();
      expect(stderr.trim().split("\n")).toHaveLength(1);
      expect(stderr).toStartWith(line);
    });
  }
});

/** The server started as `nobody` on DATA_DIR `dir`: it must exit 1; answers its one line of standard error. */
async function startAsNobody(dir: string): Promise<string> {
  const proc = spawnServer({
    argv: ["runuser", "-u", "nobody", "--", process.execPath, "run", "src/server.ts"],
    inherit: false,
    env: { PATH: process.env.PATH!, HOME: "/tmp", DATA_DIR: dir, HOST: "127.0.0.1", PORT: String(await freePort()) },
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(await proc.exited).toBe(1);
  return (await new Response(proc.stderr).text()).trim();
}

describe("start-up failures: one line naming the variable, exit code 1, no stack trace", () => {
  async function failsWith(env: Record<string, string>, line: string | RegExp) {
    const proc = start(env);
    expect(await proc.exited).toBe(1);
    const stderr = (await new Response(proc.stderr).text()).trim();
    expect(stderr.split("\n")).toHaveLength(1);
    expect(stderr).not.toContain("    at ");
    if (typeof line === "string") expect(stderr).toBe(line);
    else expect(stderr).toMatch(line);
  }

  test("a port another process listens on", async () => {
    const busy = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    try {
      await failsWith(
        { DATA_DIR: tempDir(), PORT: String(busy.port) },
        `PORT: ${busy.port} is already in use on 127.0.0.1 (another process listens there); choose another with PORT=…`,
      );
    } finally {
      busy.stop(true);
    }
  });

  test("an address that is not this machine's", async () => {
    // TEST-NET-3 (RFC 5737): never assigned to a machine, so binding fails with EADDRNOTAVAIL; no packet is sent
    await failsWith(
      { DATA_DIR: tempDir(), PORT: String(await freePort()), HOST: "203.0.113.7" },
      /^HOST: cannot listen on "203\.0\.113\.7" port \d+ \(EADDRNOTAVAIL\); use an address of this machine/,
    );
  });

  test("a DATA_DIR that is a file", async () => {
    const file = join(tempDir(), "not-a-dir");
    writeFileSync(file, "");
    await failsWith({ DATA_DIR: file }, `DATA_DIR: ${JSON.stringify(file)} is not a directory`);
  });

  test.skipIf(process.getuid?.() !== 0)("a DATA_DIR this user may not write (run as nobody)", async () => {
    const dir = tempDir();
    chmodSync(dir, 0o555);
    expect(await startAsNobody(dir)).toBe(`DATA_DIR: ${JSON.stringify(dir)} is not readable and writable by this user (nobody, uid 65534)`);
  });

  test.skipIf(process.getuid?.() !== 0)("a DATA_DIR that does not exist and cannot be created says so (run as nobody)", async () => {
    const parent = tempDir();
    chmodSync(parent, 0o555);
    const dir = join(parent, "data");
    expect(await startAsNobody(dir)).toBe(
      `DATA_DIR: ${JSON.stringify(dir)} does not exist and cannot be created (permission denied for this user (nobody, uid 65534))`,
    );
  });
});

describe("first start, restart, stop", () => {
  test("generates a private admin token, serves, drains on SIGTERM, restarts on the same data", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const env = { DATA_DIR: dataDir, PORT: String(port) };
    const proc = start(env);
    await waitHealthy(port, proc);
    const tokenFile = join(dataDir, "admin-token");
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    const adminToken = (await Bun.file(tokenFile).text()).trim();
    expect(adminToken.length).toBeGreaterThanOrEqual(32);

    // a second server on the same DATA_DIR is refused (one server owns the embedded database of a DATA_DIR)
    const second = start({ DATA_DIR: dataDir, PORT: String(await freePort()) });
    expect(await second.exited).toBe(1);
    expect(await new Response(second.stderr).text()).toContain("is in use by process");

    const admin = (method: string, path: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: body ? JSON.stringify(body) : undefined,
      }).then((r) => expectStatus(r, 200));
    const user = await admin("POST", "/api/admin/users", { username: "alice", email: "alice@example.com" });
    const { data: tok } = await admin("POST", `/api/admin/users/${user.data.id}/tokens`);

    // a slow upload is in flight when SIGTERM arrives: it completes, then the process exits 0
    const m = multipart([{ name: "file", value: await makeImage("png", 20, 20), filename: "a.png", contentType: "image/png" }]);
    const half = Math.floor(m.body.length / 2);
    const body = new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(m.body.subarray(0, half));
        await Bun.sleep(400);
        c.enqueue(m.body.subarray(half));
        c.close();
      },
    });
    const inflight = fetch(`http://127.0.0.1:${port}/api/v1/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${tok.token}`, "content-type": m.contentType },
      body,
    });
    await Bun.sleep(100);
    proc.kill("SIGTERM");
    const uploaded = await expectStatus(await inflight, 200);
    expect(await proc.exited).toBe(0);

    // restart: migrations are idempotent, data and token survive, seeding does not repeat
    const again = start(env);
    await waitHealthy(port, again);
    const list = await fetch(`http://127.0.0.1:${port}/api/v1/images`, { headers: { authorization: `Bearer ${tok.token}` } });
    const page = await expectStatus(list, 200);
    expect(page.data.total).toBe(1);
    expect(page.data.data[0].key).toBe(uploaded.data.key);
    const groups = await admin("GET", "/api/admin/groups");
    expect(groups.data.groups).toHaveLength(2);
    const served = await fetch(`http://127.0.0.1:${port}${new URL(uploaded.data.url).pathname}`);
    await expectStatus(served, 200);
    expect(new URL(uploaded.data.url).origin).toBe(`http://localhost:${port}`);
    again.kill("SIGTERM");
    expect(await again.exited).toBe(0);

    // standard output is not a terminal: JSON lines; Bun's own route for objects logs them too
    const lines = (await new Response(again.stdout).text())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const objectLine = lines.find((l) => l.route === "/i/*");
    expect(objectLine).toMatchObject({
      level: "info",
      method: "GET",
      status: 200,
      bytes_out: served.headers.get("content-length") && Number(served.headers.get("content-length")),
      client: "127.0.0.1",
    });
    expect(objectLine.request_id).toBe(served.headers.get("x-request-id"));
    expect(lines.find((l) => l.route === "/api/v1/images")).toMatchObject({ status: 200, caller: user.data.id });
    expect(lines.at(-1)).toMatchObject({ level: "info", msg: "stopped" });
  });

  test("LOG_OBJECT_REQUESTS=false: objects are served and counted but not logged; LOG_FORMAT=pretty: readable lines", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const proc = start({ DATA_DIR: dataDir, PORT: String(port), LOG_OBJECT_REQUESTS: "false", LOG_FORMAT: "pretty" });
    await waitHealthy(port, proc);
    expect((await fetch(`http://127.0.0.1:${port}/i/2026/01/01/none.png`)).status).toBe(404);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toContain('imagehost_http_requests_total{route="/i/*",method="GET",status="404"} 1');
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    const out = await new Response(proc.stdout).text();
    expect(out).not.toContain("/i/*");
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: Image host listening on http:\/\/127\.0\.0\.1:\d+ /m);
  });
});
