import { expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { Webhook } from "standardwebhooks";
import { makeImage, multipart } from "../support/images.ts";
import { freePort, startServer } from "../support/processes.ts";

setDefaultTimeout(120_000);

/**
 * Webhook delivery with real servers (src/server.ts): a kill -9 while a delivery is in flight loses nothing (the restarted
 * instance sends it again), and two instances on one database deliver every event, none twice.
 */
const ADMIN_TOKEN = "webhooks-crash-admin-token-0123456789abcdef";
const serverUrl = process.env.TEST_DATABASE_URL;

function receiver() {
  const got: { id: string; type: string; key: string; verified: boolean }[] = [];
  let secret = "";
  let hold = false;
  const held: (() => void)[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const body = await req.text();
      const headers: Record<string, string> = req.headers.toJSON();
      let verified = false;
      try {
        new Webhook(secret).verify(body, headers);
        verified = true;
      } catch {}
      const parsed = JSON.parse(body) as { type: string; data: { key: string } };
      got.push({ id: headers["webhook-id"]!, type: parsed.type, key: parsed.data.key, verified });
      if (hold) await new Promise<void>((go) => held.push(go)); // in flight until released (or the sender dies)
      return new Response("ok");
    },
  });
  return {
    got,
    url: `http://127.0.0.1:${server.port}/hook`,
    setSecret: (s: string) => (secret = s),
    hold(on: boolean) {
      hold = on;
      if (!on) while (held.length) held.shift()!();
    },
    stop: () => server.stop(true),
  };
}

async function api(base: string, path: string, init: RequestInit & { token?: string } = {}) {
  const res = await fetch(`${base}${path}`, {
    ...init,
    headers: {
      ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
      ...(init.body && typeof init.body === "string" ? { "content-type": "application/json" } : {}),
      ...init.headers,
    },
  });
  const body = (await res.json()) as { status: boolean; message: string; data: any };
  if (res.status !== 200) throw new Error(`${init.method ?? "GET"} ${path} → ${res.status} ${JSON.stringify(body)}`);
  return body.data;
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

/** An account with a token, and a site-wide endpoint for image.uploaded pointing at the receiver. */
async function setUp(base: string, r: ReturnType<typeof receiver>) {
  const user = await api(base, "/api/admin/users", {
    method: "POST",
    token: ADMIN_TOKEN,
    body: JSON.stringify({ username: "carol", email: "carol@example.com" }),
  });
  const made = await api(base, `/api/admin/users/${user.id}/tokens`, { method: "POST", token: ADMIN_TOKEN, body: JSON.stringify({}) });
  const created = await api(base, "/api/admin/webhooks", {
    method: "POST",
    token: ADMIN_TOKEN,
    body: JSON.stringify({ url: r.url, events: ["image.uploaded"] }),
  });
  r.setSecret(created.secret);
  return made.token as string;
}

async function uploadOne(base: string, token: string, n: number) {
  const { body, contentType } = multipart([{ name: "file", filename: `i${n}.png`, contentType: "image/png", value: await makeImage("png", 20 + n, 20) }]);
  const res = await fetch(`${base}/api/v1/upload`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": contentType }, body });
  const answer = (await res.json()) as { data: { key: string } };
  if (res.status !== 200) throw new Error(`upload → ${res.status} ${JSON.stringify(answer)}`);
  return answer.data.key;
}

test("kill -9 while a delivery is in flight: the restarted instance delivers the event (at least once, same webhook-id)", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "imghost-webhook-kill-"));
  const r = receiver();
  const port = await freePort();
  const env = { DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", BASE_URL: `http://127.0.0.1:${port}`, ADMIN_TOKEN, WEBHOOK_ALLOW: "127.0.0.1" };
  let server = await startServer({ env: { LOG_LEVEL: "warn", ...env }, timeoutMs: 60_000 });
  try {
    const token = await setUp(env.BASE_URL, r);
    r.hold(true);
    const key = await uploadOne(env.BASE_URL, token, 1);
    await until("the delivery in flight", () => r.got.length >= 1);
    server.kill("SIGKILL");
    await server.exited;
    r.hold(false);
    server = await startServer({ env: { LOG_LEVEL: "warn", ...env }, timeoutMs: 60_000 });
    await until("the event again after the restart", () => r.got.length >= 2, 60_000);
    expect(r.got.map((g) => [g.type, g.key, g.verified])).toEqual([
      ["image.uploaded", key, true],
      ["image.uploaded", key, true],
    ]);
    expect(r.got[1]!.id).toBe(r.got[0]!.id); // the same message: the receiver deduplicates by webhook-id
  } finally {
    server.kill("SIGTERM");
    await server.exited;
    r.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test.skipIf(!serverUrl)(`two instances on one database deliver every event once${serverUrl ? "" : " (needs PostgreSQL: set TEST_DATABASE_URL)"}`, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "imghost-webhook-two-"));
  const dbName = `imghost_webhooks_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
  const admin = postgres(serverUrl!, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${dbName}`);
  const databaseUrl = Object.assign(new URL(serverUrl!), { pathname: `/${dbName}` }).toString();
  const r = receiver();
  const servers: Awaited<ReturnType<typeof startServer>>[] = [];
  try {
    const envs = await Promise.all(
      [0, 1].map(async () => {
        const port = await freePort();
        return {
          DATABASE_URL: databaseUrl,
          DATA_DIR: dataDir,
          PORT: String(port),
          HOST: "127.0.0.1",
          BASE_URL: `http://127.0.0.1:${port}`,
          ADMIN_TOKEN,
          WEBHOOK_ALLOW: "127.0.0.1",
          WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString("base64"),
        };
      }),
    );
    servers.push(await startServer({ env: { LOG_LEVEL: "warn", ...envs[0]! }, timeoutMs: 60_000 }));
    servers.push(await startServer({ env: { LOG_LEVEL: "warn", ...envs[1]! }, timeoutMs: 60_000 }));
    const token = await setUp(envs[0]!.BASE_URL, r);
    // 8 at a time, half on each instance (an account may have 16 uploads in progress per instance)
    const keys: string[] = [];
    for (let n = 0; n < 40; n += 8)
      keys.push(...(await Promise.all(Array.from({ length: 8 }, (_, i) => uploadOne(envs[(n + i) % 2]!.BASE_URL, token, n + i)))));
    await until("40 events", () => r.got.length >= 40);
    await Bun.sleep(1_000); // a doubled delivery would arrive meanwhile
    expect(r.got.length).toBe(40);
    expect(new Set(r.got.map((g) => g.id)).size).toBe(40);
    expect(r.got.map((g) => g.key).sort()).toEqual([...keys].sort());
    expect(r.got.every((g) => g.verified)).toBe(true);
  } finally {
    for (const s of servers) s.kill("SIGTERM");
    await Promise.all(servers.map((s) => s.exited));
    r.stop();
    await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin.end();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
