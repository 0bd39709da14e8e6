import { expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { LEASE_SECONDS } from "../src/services/limits.ts";
import { RECONCILE_GRACE_SECONDS } from "../src/services/reconcile.ts";
import { makeImage, makeNoisyJpeg, multipart } from "./support/images.ts";
import { expectStatus } from "./support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

/**
 * The real server (src/server.ts) on PostgreSQL, SIGKILLed in the middle of a burst of uploads and deletes, then
 * restarted: records, objects, counters and upload slots must agree again once the reconciler has run.
 */
const serverUrl = process.env.TEST_DATABASE_URL;
const root = join(import.meta.dir, "..");
const ADMIN_TOKEN = "crash-test-admin-token-0123456789abcdef";
const USERS = 6;
const CONCURRENT_UPLOADS = 2;
const BURST_MS = 1500;

async function freePort(): Promise<number> {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  await probe.stop(true);
  return port;
}

/** Starts src/server.ts and resolves once /health answers 200. */
async function startServer(env: Record<string, string>) {
  const proc = Bun.spawn(["bun", "run", "src/server.ts"], { cwd: root, env: { ...process.env, ...env }, stdout: "ignore", stderr: "pipe" });
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`the server exited with ${proc.exitCode}: ${await new Response(proc.stderr).text()}`);
    const res = await fetch(`${env.BASE_URL}/health`).catch(() => null);
    if (res?.status === 200) return proc;
    await Bun.sleep(100);
  }
  proc.kill("SIGKILL");
  throw new Error("the server did not become healthy within 20 s");
}

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string, prefix = ""): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(dir, `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
  );
}

test.skipIf(!serverUrl)(
  `SIGKILL mid-burst, restart, reconcile: every record has its object and every object a record, counters match, slots lapse${
    serverUrl ? "" : " (needs PostgreSQL: set TEST_DATABASE_URL; the embedded database belongs to one process)"
  }`,
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "imghost-crash-"));
    const dbName = `imghost_crash_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
    const admin = postgres(serverUrl!, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${dbName}`);
    const databaseUrl = Object.assign(new URL(serverUrl!), { pathname: `/${dbName}` }).toString();
    const db = postgres(databaseUrl, { max: 2, onnotice: () => {} });
    let server: Awaited<ReturnType<typeof startServer>> | undefined;
    try {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const env = {
        DATABASE_URL: databaseUrl,
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: "127.0.0.1",
        BASE_URL: base,
        ADMIN_TOKEN,
        UPLOAD_BODIES_PER_ADDRESS: "100", // every request of this test comes from 127.0.0.1
      };
      server = await startServer(env);

      const call = async (method: string, path: string, init: { token?: string; json?: unknown; body?: BodyInit; type?: string } = {}) => {
        const type = init.json !== undefined ? "application/json" : init.type;
        const res = await fetch(`${base}${path}`, {
          method,
          headers: { authorization: `Bearer ${init.token ?? ADMIN_TOKEN}`, ...(type ? { "content-type": type } : {}) },
          body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
        });
        return { status: res.status, body: (await res.json()) as any };
      };
      const adminCall = async (method: string, path: string, json?: unknown) => expectStatus(await call(method, path, { json }), 200).data;
      const photo = await makeNoisyJpeg(900, 600); // stored with a thumbnail
      const screenshot = await makeImage("png", 40, 30); // its own thumbnail
      const upload = (token: string, i: number) => {
        const file = i % 2 ? { value: photo, filename: "p.jpg", contentType: "image/jpeg" } : { value: screenshot, filename: "s.png", contentType: "image/png" };
        const m = multipart([{ name: "file", ...file }]);
        return call("POST", "/api/v1/upload", { token, body: m.body, type: m.contentType });
      };

      const group = await adminCall("POST", "/api/admin/groups", { name: "crash", concurrent_uploads: CONCURRENT_UPLOADS, strategy_ids: [1] });
      const users: { id: number; token: string; keys: string[] }[] = [];
      for (let i = 0; i < USERS; i++) {
        const username = `crash${i}`;
        const user = await adminCall("POST", "/api/admin/users", { username, email: `${username}@example.com`, group_id: group.id });
        const { token } = await adminCall("POST", `/api/admin/users/${user.id}/tokens`);
        const keys = [];
        for (let j = 0; j < 4; j++) keys.push(expectStatus(await upload(token, j), 200).data.key);
        users.push({ id: user.id, token, keys });
      }

      // the burst: every account keeps its upload slots busy and deletes its earlier images, until the kill
      let killed = false;
      const unansweredDeletes = new Set<string>();
      const answered: number[] = [];
      const uploading = async (token: string) => {
        for (let i = 0; !killed; i++) {
          const res = await upload(token, i).catch(() => null);
          if (res) answered.push(res.status);
        }
      };
      const deleting = async (user: (typeof users)[number]) => {
        for (const key of user.keys) {
          if (killed) return;
          unansweredDeletes.add(key);
          await Bun.sleep(Math.random() * 300);
          const res = await call("DELETE", `/api/v1/images/${key}`, { token: user.token }).catch(() => null);
          if (res) unansweredDeletes.delete(key);
        }
      };
      const burst = users.flatMap((u) => [...Array.from({ length: CONCURRENT_UPLOADS }, () => uploading(u.token)), deleting(u)]);
      await Bun.sleep(BURST_MS);
      server.kill("SIGKILL");
      const killedAt = Date.now();
      killed = true;
      await server.exited;
      await Promise.all(burst);
      expect(answered.filter((s) => s === 200).length).toBeGreaterThan(0);

      server = await startServer(env);

      // an account whose slots the dead process held gets a slot back within LEASE_SECONDS
      const leases = await db<{ subject: string; n: number }[]>`
        select subject, count(*)::int as n from upload_leases where expires_at > now() group by subject order by n desc`;
      const held = leases[0];
      const probe = users.find((u) => `user:${u.id}` === held?.subject) ?? users[0]!;
      const first = await upload(probe.token, 0);
      if (held && held.n >= CONCURRENT_UPLOADS) expect(first.body.message).toContain("Too many concurrent uploads");
      let probed = first;
      while (probed.status !== 200 && Date.now() - killedAt < (LEASE_SECONDS + 5) * 1000) {
        await Bun.sleep(250);
        probed = await upload(probe.token, 0);
      }
      expectStatus(probed, 200);

      // an hour later: everything on disk is past the grace period
      const uploads = join(dataDir, "uploads");
      const anHourAgo = new Date(Date.now() - (RECONCILE_GRACE_SECONDS + 60) * 1000);
      for (const path of filesUnder(uploads)) utimesSync(join(uploads, path), anHourAgo, anHourAgo);
      let reconciled = await adminCall("POST", "/api/admin/storage/reconcile");
      while (reconciled.skipped) {
        await Bun.sleep(100); // the start-up run is still going
        reconciled = await adminCall("POST", "/api/admin/storage/reconcile");
      }
      const local = reconciled.locations[0];
      expect(local.errors).toEqual([]);

      const records = await db<{ key: string; path: string; thumbnail_path: string | null }[]>`select key, path, thumbnail_path from images`;
      const onDisk = new Set(filesUnder(uploads));
      const named = new Set(records.flatMap((r) => (r.thumbnail_path ? [r.path, r.thumbnail_path] : [r.path])));
      expect([...onDisk].filter((p) => !named.has(p))).toEqual([]); // no orphan, no temporary file
      // A delete removes the objects, then commits: killed in between, its record stays without its object. That
      // can only be a delete the kill left unanswered, and the reconciler reports it.
      const withoutObject = records.filter((r) => !onDisk.has(r.path) || (r.thumbnail_path !== null && !onDisk.has(r.thumbnail_path)));
      for (const r of withoutObject) {
        expect(unansweredDeletes.has(r.key)).toBe(true);
        expect(local.missing_objects.map((m: { key: string }) => m.key)).toContain(r.key);
      }

      const accounts = await db<{ id: number; used: number; num: number; sum: number; count: number }[]>`
        select u.id, u.used_bytes::int as used, u.image_num as num, coalesce(sum(i.size), 0)::int as sum, count(i.id)::int as count
        from users u left join images i on i.user_id = u.id group by u.id`;
      for (const u of accounts) expect([u.id, u.used, u.num]).toEqual([u.id, u.sum, u.count]);
      const strategies = await db<{ id: number; used: number; sum: number }[]>`
        select s.id, s.used_bytes::int as used, coalesce(sum(i.size), 0)::int as sum
        from strategies s left join images i on i.strategy_id = s.id group by s.id`;
      for (const s of strategies) expect([s.id, s.used]).toEqual([s.id, s.sum]);

      server.kill("SIGTERM");
      expect(await server.exited).toBe(0);
    } finally {
      server?.kill("SIGKILL");
      await db.end();
      await admin.unsafe(`drop database if exists ${dbName} with (force)`);
      await admin.end();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
  60_000,
);
