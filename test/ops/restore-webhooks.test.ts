import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { openEmbedded } from "../../src/db/client.ts";
import { readDatabaseId } from "../../src/db/repositories/database-identity.ts";
import { rowsOf } from "../../src/webhooks/outbox.ts";
import { makeImage, multipart } from "../support/images.ts";
import { freePort, startServer } from "../support/processes.ts";

/**
 * A backup restored as docs/backups.md tells it (backup create while the server runs; stop; backup restore into a new
 * DATA_DIR; start) signs webhook deliveries with the secrets shown before the backup: the archive holds DATA_DIR's
 * webhook-secret-key. It also gives the restored database the source's identity, its event sequence and a job for
 * every delivery still pending.
 */
setDefaultTimeout(180_000);

const root = join(import.meta.dir, "..", "..");
const ADMIN_TOKEN = "restore-webhooks-admin-token-0123456789";
const work = mkdtempSync(join(tmpdir(), "imghost-restore-webhooks-"));
chmodSync(work, 0o755);
const onPostgres = !!process.env.TEST_DATABASE_URL; // backup/restore are the embedded database's; the test runs them all the same

afterAll(() => rmSync(work, { recursive: true, force: true }));

async function cli(args: string[], env: Record<string, string | undefined>) {
  const proc = Bun.spawn(["bun", "run", "src/cli/index.ts", ...args], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: undefined, ADMIN_TOKEN: undefined, WEBHOOK_SECRET_KEY: undefined, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

async function serve(dataDir: string) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = await startServer({
    env: { DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", BASE_URL: base, ADMIN_TOKEN, WEBHOOK_ALLOW: "127.0.0.1" },
  });
  const call = async (method: string, path: string, body?: unknown, token = ADMIN_TOKEN) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as { data: any };
    if (res.status !== 200) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
    return json.data;
  };
  return { base, call, stop: async () => (proc.kill("SIGTERM"), await proc.exited) };
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 30_000): Promise<T> {
  for (const deadline = Date.now() + ms; ; ) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

/** The identity, the event sequence and the pending deliveries' jobs of DATA_DIR's embedded database (server stopped). */
async function inspect(dataDir: string) {
  const database = await openEmbedded(dataDir);
  try {
    const [seq] = rowsOf<{ v: string }>(await database.db.execute(sql`select last_value::text || ' ' || is_called::text as v from webhook_event_seq`));
    const pending = rowsOf<{ id: string; job: boolean }>(
      await database.db.execute(sql`
        select d.id::text as id, exists (select 1 from graphile_worker._private_jobs j where j.key = 'webhook-delivery:' || d.id::text) as job
        from webhook_deliveries d where d.status = 'pending' order by d.id`),
    );
    return { id: await readDatabaseId(database.db), seq: seq!.v, pending };
  } finally {
    await database.close();
  }
}

describe.skipIf(onPostgres)("a restored DATA_DIR signs its webhooks", () => {
  test("back up, restore into a new DATA_DIR, deliver: the receiver verifies with the secret shown before the backup", async () => {
    const received: { type: string; verified: boolean }[] = [];
    let secret = "";
    const receiver = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const body = await req.text();
        let verified = false;
        try {
          new Webhook(secret).verify(body, req.headers.toJSON());
          verified = true;
        } catch {}
        received.push({ type: (JSON.parse(body) as { type: string }).type, verified });
        return new Response("ok");
      },
    });
    const source = join(work, "data");
    const restored = join(work, "restored");
    try {
      const a = await serve(source);
      let endpointId: number;
      let imagePath: string;
      try {
        const made = await a.call("POST", "/api/admin/webhooks", { url: `http://127.0.0.1:${receiver.port}/hook`, events: ["image.uploaded"] });
        endpointId = made.id;
        secret = made.secret;
        // an endpoint that cannot be reached: its delivery is still pending (retried later) when the backup is made
        const down = await a.call("POST", "/api/admin/webhooks", { url: `http://127.0.0.1:${await freePort()}/hook`, events: ["image.uploaded"] });
        const user = await a.call("POST", "/api/admin/users", { username: "hooked", email: "hooked@example.com" });
        const { token } = await a.call("POST", `/api/admin/users/${user.id}/tokens`);
        const m = multipart([{ name: "file", value: await makeImage("png", 30, 20), filename: "a.png" }]);
        const res = await fetch(`${a.base}/api/v1/upload`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": m.contentType },
          body: m.body,
        });
        expect(res.status).toBe(200);
        imagePath = ((await res.json()) as { data: { pathname: string } }).data.pathname;
        await until("the upload's delivery, verified", () => received.find((r) => r.type === "image.uploaded" && r.verified));
        await until(
          "a failed attempt to the endpoint that is down",
          async () => (await a.call("GET", `/api/admin/webhooks/${down.id}/deliveries`)).deliveries?.[0]?.attempts >= 1,
        );

        const archive = join(work, "site.tar.gz");
        const created = await cli(["backup", "create", archive], { DATA_DIR: source });
        expect(created.stderr).toBe("");
        expect(created.code).toBe(0);
        expect(created.stdout).not.toContain("Warning");
      } finally {
        await a.stop();
      }

      const archive = join(work, "site.tar.gz");
      // restored where WEBHOOK_SECRET_KEY names another key: restored all the same, and told what to do
      const otherKey = randomBytes(32).toString("base64");
      const warned = await cli(["backup", "restore", archive], { DATA_DIR: join(work, "with-other-key"), WEBHOOK_SECRET_KEY: otherKey });
      expect(warned.code).toBe(0);
      expect(warned.stdout).toContain("Warning: The webhook secrets are sealed with key");
      expect(warned.stdout).toContain("start the server without WEBHOOK_SECRET_KEY");

      const done = await cli(["backup", "restore", archive], { DATA_DIR: restored });
      expect(done.stderr).toBe("");
      expect(done.code).toBe(0);
      expect(done.stdout).not.toContain("Warning");
      expect(readFileSync(join(restored, "webhook-secret-key"))).toEqual(readFileSync(join(source, "webhook-secret-key")));

      const [before, after] = [await inspect(source), await inspect(restored)];
      expect(after.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(after.id).toBe(before.id); // the storage's marker names it
      expect(before.seq).toEndWith(" true"); // events were numbered
      expect(after.seq).toBe(before.seq); // events after the restore come after the archived ones
      expect(after.pending.length).toBeGreaterThanOrEqual(1);
      expect(after.pending.every((p) => p.job)).toBe(true);

      received.length = 0;
      const b = await serve(restored);
      try {
        expect((await fetch(`${b.base}/i/${imagePath!}`)).status).toBe(200);
        await b.call("POST", `/api/admin/webhooks/${endpointId!}/test`);
        const got = await until("the test event at the receiver", () => received.find((r) => r.type === "webhook.test"));
        expect(got.verified).toBe(true);
      } finally {
        await b.stop();
      }
    } finally {
      await receiver.stop(true);
    }
  });
});
