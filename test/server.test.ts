import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeImage, multipart } from "./support/images.ts";
import { expectStatus } from "./support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

/** The real entry point (src/server.ts) as a subprocess: environment, first start, restart, stop. */
const root = join(import.meta.dir, "..");
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir() {
  const d = mkdtempSync(join(tmpdir(), "imghost-server-"));
  dirs.push(d);
  return d;
}

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

function start(env: Record<string, string>) {
  const cleanEnv = { ...process.env };
  delete cleanEnv.DATABASE_URL;
  delete cleanEnv.ADMIN_TOKEN;
  return Bun.spawn(["bun", "run", "src/server.ts"], {
    cwd: root,
    env: { ...cleanEnv, HOST: "127.0.0.1", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
}

async function waitHealthy(port: number, proc: ReturnType<typeof start>) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}: ${await new Response(proc.stderr).text()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      if (res.status === 200) return;
    } catch {}
    await Bun.sleep(100);
  }
  throw new Error("server did not become healthy");
}

describe("environment validation", () => {
  for (const [name, value] of [
    ["PORT", "not-a-port"],
    ["PORT", "70000"],
    ["DATABASE_URL", "mysql://x"],
    ["BASE_URL", "ftp://example.com"],
    ["ADMIN_TOKEN", "short"],
    ["TRUST_PROXY", "maybe"],
  ]) {
    test(`${name}=${value} → a readable message and exit code 1`, async () => {
      const proc = start({ DATA_DIR: tempDir(), [name]: value });
      expect(await proc.exited).toBe(1);
      const stderr = await new Response(proc.stderr).text();
      expect(stderr).toContain("Invalid environment");
      expect(stderr).toContain(name);
    });
  }
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
  });
});
