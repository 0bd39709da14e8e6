import { expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { LEASE_SECONDS } from "../../src/services/limits.ts";
import { isMarkerPath } from "../../src/storage/marker.ts";
import { makeImage, makeNoisyJpeg, multipart } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";
import { freePort, startServer } from "../support/processes.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

/**
 * Crash recovery at CI scale: two real servers (src/server.ts) on one PostgreSQL and one DATA_DIR; one is SIGKILLed
 * in the middle of a burst of uploads and deletes. The survivor, without a restart and without the reconciler, must
 * within seconds list only images whose objects it serves, answer 404 for every deleted image (even those whose
 * facts it had cached), keep every account's charge equal to its images, and hold no file that no record names —
 * the pending removals of the dead instance's deletes and uploads are finished by the survivor's worker.
 */
const serverUrl = process.env.TEST_DATABASE_URL;
const ADMIN_TOKEN = "crash-test-admin-token-0123456789abcdef";
const USERS = 6;
const SEEDED = 8;
const CONCURRENT_UPLOADS = 2;
const BURST_MS = 1500;
const DELETE_WAVE_MS = 600;
/** How long after the kill everything must agree: a dead upload's lease, then a few worker passes. */
const CONVERGE_MS = (LEASE_SECONDS + 10) * 1000;

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string, prefix = ""): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(dir, `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
  );
}

test.skipIf(!serverUrl)(
  `SIGKILL one of two instances mid-burst: within seconds the survivor serves every listed image, 404s every deleted one, charges match and no file lacks a record${
    serverUrl ? "" : " (needs PostgreSQL: set TEST_DATABASE_URL; the embedded database belongs to one process)"
  }`,
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "imghost-crash-"));
    const dbName = `imghost_crash_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
    const admin = postgres(serverUrl!, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${dbName}`);
    const databaseUrl = Object.assign(new URL(serverUrl!), { pathname: `/${dbName}` }).toString();
    const db = postgres(databaseUrl, { max: 2, onnotice: () => {} });
    const servers: Awaited<ReturnType<typeof startServer>>[] = [];
    try {
      const envOf = (port: number) => ({
        DATABASE_URL: databaseUrl,
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: "127.0.0.1",
        BASE_URL: `http://127.0.0.1:${port}`,
        ADMIN_TOKEN,
        UPLOAD_BODIES_PER_ADDRESS: "100", // every request of this test comes from 127.0.0.1
      });
      const [envA, envB] = [envOf(await freePort()), envOf(await freePort())];
      const victim = await startServer({ env: envA });
      servers.push(victim);
      servers.push(await startServer({ env: envB }));
      const [a, b] = [envA.BASE_URL, envB.BASE_URL];

      const call = async (base: string, method: string, path: string, init: { token?: string; json?: unknown; body?: BodyInit; type?: string } = {}) => {
        const type = init.json !== undefined ? "application/json" : init.type;
        const res = await fetch(`${base}${path}`, {
          method,
          headers: { authorization: `Bearer ${init.token ?? ADMIN_TOKEN}`, ...(type ? { "content-type": type } : {}) },
          body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
        });
        return { status: res.status, body: (await res.json()) as any };
      };
      const adminCall = async (method: string, path: string, json?: unknown) => expectStatus(await call(b, method, path, { json }), 200).data;
      const photo = await makeNoisyJpeg(900, 600); // stored with a thumbnail
      const screenshot = await makeImage("png", 40, 30); // its own thumbnail
      const upload = (base: string, token: string, i: number) => {
        const file =
          i % 4 === 1 ? { value: photo, filename: "p.jpg", contentType: "image/jpeg" } : { value: screenshot, filename: "s.png", contentType: "image/png" };
        const m = multipart([{ name: "file", ...file }]);
        return call(base, "POST", "/api/v1/upload", { token, body: m.body, type: m.contentType });
      };
      /** An object's address on the survivor, whichever instance the address was made by. */
      const onSurvivor = (url: string) => `${b}${new URL(url).pathname}`;
      const served = async (url: string) => (await fetch(onSurvivor(url))).status;

      const group = await adminCall("POST", "/api/admin/groups", { name: "crash", concurrent_uploads: CONCURRENT_UPLOADS, strategy_ids: [1] });
      type Seeded = { key: string; url: string; thumbnail: string };
      const users: { id: number; token: string; seeded: Seeded[] }[] = [];
      for (let i = 0; i < USERS; i++) {
        const username = `crash${i}`;
        const user = await adminCall("POST", "/api/admin/users", { username, email: `${username}@example.com`, group_id: group.id });
        const { token } = await adminCall("POST", `/api/admin/users/${user.id}/tokens`);
        const seeded = [];
        for (let j = 0; j < SEEDED; j++) {
          const d = expectStatus(await upload(j % 2 ? a : b, token, j), 200).data;
          seeded.push({ key: d.key, url: d.url, thumbnail: d.thumbnail_url });
        }
        users.push({ id: user.id, token, seeded });
      }
      // the survivor serves every seeded image once, so its object server keeps their facts (no database on later hits)
      for (const s of users.flatMap((u) => u.seeded)) expect([await served(s.url), await served(s.thumbnail)]).toEqual([200, 200]);

      // the burst, on the victim: every account keeps its upload slots busy and deletes its seeded images, until the kill
      let killed = false;
      const unansweredDeletes = new Set<string>();
      const answeredDeletes = new Set<string>();
      const answered: number[] = [];
      const uploading = async (token: string) => {
        for (let i = 0; !killed; i++) {
          const res = await upload(a, token, i).catch(() => null);
          if (res) answered.push(res.status);
        }
      };
      // the deletes come in one wave just before the kill, so that some are cut between their commit and their objects' removal
      const deleting = async (user: (typeof users)[number], key: string) => {
        await Bun.sleep(BURST_MS - DELETE_WAVE_MS + Math.random() * (DELETE_WAVE_MS - 10));
        unansweredDeletes.add(key);
        const res = await call(a, "DELETE", `/api/v1/images/${key}`, { token: user.token }).catch(() => null);
        if (res) {
          unansweredDeletes.delete(key);
          if (res.status === 200) answeredDeletes.add(key);
        }
      };
      const burst = users.flatMap((u) => [...Array.from({ length: CONCURRENT_UPLOADS }, () => uploading(u.token)), ...u.seeded.map((s) => deleting(u, s.key))]);
      await Bun.sleep(BURST_MS);
      // on a busy machine the victim may not have answered yet: the kill waits for a first upload and a first delete
      // (the rest of the wave is then in flight)
      for (const deadline = Date.now() + 20_000; Date.now() < deadline; await Bun.sleep(5)) {
        if (answeredDeletes.size > 0 && answered.includes(200)) break;
      }
      victim.kill("SIGKILL");
      const killedAt = Date.now();
      killed = true;
      await victim.exited;
      await Promise.all(burst);
      expect(answered.filter((s) => s === 200).length).toBeGreaterThan(0);
      expect(answeredDeletes.size).toBeGreaterThan(0);

      // the survivor alone, no restart, no reconciler: the files on disk become exactly those the records name
      const uploads = join(dataDir, "uploads");
      const state = async () => {
        const records = await db<{ key: string; path: string; thumbnail_path: string | null }[]>`select key, path, thumbnail_path from images`;
        const named = new Set(records.flatMap((r) => (r.thumbnail_path ? [r.path, r.thumbnail_path] : [r.path])));
        const files = filesUnder(uploads).filter((p) => !isMarkerPath(p)); // the storage's database marker is no object
        const [{ pending }] = await db<{ pending: number }[]>`select count(*)::int as pending from pending_removals`;
        return { records, named, files, unowned: files.filter((p) => !named.has(p)), pending };
      };
      let now = await state();
      const unownedAtKill = now.unowned.length;
      const pendingAtKill = await db<{ reason: string; n: number }[]>`select reason, count(*)::int as n from pending_removals group by reason order by reason`;
      while ((now.unowned.length > 0 || now.pending > 0) && Date.now() - killedAt < CONVERGE_MS) {
        await Bun.sleep(250);
        now = await state();
      }
      const convergedMs = Date.now() - killedAt;
      console.log(
        `crash: ${answered.length} uploads and ${answeredDeletes.size} deletes answered, ${unansweredDeletes.size} deletes unanswered; ` +
          `${unownedAtKill} unowned files after the kill (pending removals: ${JSON.stringify(pendingAtKill)}), none ${(convergedMs / 1000).toFixed(1)} s after it`,
      );
      expect(now.unowned).toEqual([]); // no orphan object, no temporary file: within seconds, not the reconciler's hour
      expect(now.pending).toBe(0);
      expect(convergedMs).toBeLessThan(CONVERGE_MS);
      // every record's objects are there
      const onDisk = new Set(now.files);
      expect(now.records.filter((r) => !onDisk.has(r.path) || (r.thumbnail_path !== null && !onDisk.has(r.thumbnail_path)))).toEqual([]);

      // what the accounts see, on the survivor: each listed image is served; each deleted one is not, cached or not
      const listedKeys = new Set<string>();
      for (const user of users) {
        const page = expectStatus(await call(b, "GET", "/api/v1/images?per_page=100", { token: user.token }), 200).data;
        for (const image of page.data as { key: string; url: string; thumbnail_url: string }[]) {
          listedKeys.add(image.key);
          expect([image.key, await served(image.url), await served(image.thumbnail_url)]).toEqual([image.key, 200, 200]);
        }
      }
      for (const s of users.flatMap((u) => u.seeded)) {
        if (listedKeys.has(s.key)) {
          expect(answeredDeletes.has(s.key)).toBe(false); // only a delete the kill left unanswered, or none, kept an image
          continue;
        }
        expect([s.key, await served(s.url), await served(s.thumbnail)]).toEqual([s.key, 404, 404]);
      }
      // a delete the kill left unanswered is wholly done or wholly undone
      for (const key of unansweredDeletes) expect(now.records.some((r) => r.key === key)).toBe(listedKeys.has(key));

      const accounts = await db<{ id: number; used: number; num: number; sum: number; count: number }[]>`
        select u.id, u.used_bytes::int as used, u.image_num as num, coalesce(sum(i.size), 0)::int as sum, count(i.id)::int as count
        from users u left join images i on i.user_id = u.id group by u.id`;
      for (const u of accounts) expect([u.id, u.used, u.num]).toEqual([u.id, u.sum, u.count]);
      const strategies = await db<{ id: number; used: number; sum: number }[]>`
        select s.id, s.used_bytes::int as used, coalesce(sum(i.size), 0)::int as sum
        from strategies s left join images i on i.strategy_id = s.id group by s.id`;
      for (const s of strategies) expect([s.id, s.used]).toEqual([s.id, s.sum]);

      // an account whose slots the dead process held gets a slot back within LEASE_SECONDS
      const leases = await db<{ subject: string; n: number }[]>`
        select subject, count(*)::int as n from upload_leases where expires_at > now() group by subject order by n desc`;
      const held = leases[0];
      const probe = users.find((u) => `user:${u.id}` === held?.subject) ?? users[0]!;
      let probed = await upload(b, probe.token, 0);
      while (probed.status !== 200 && Date.now() - killedAt < (LEASE_SECONDS + 5) * 1000) {
        await Bun.sleep(250);
        probed = await upload(b, probe.token, 0);
      }
      expectStatus(probed, 200);

      const survivor = servers[1]!;
      survivor.kill("SIGTERM");
      expect(await survivor.exited).toBe(0);
    } finally {
      for (const server of servers) server.kill("SIGKILL");
      await db.end();
      await admin.unsafe(`drop database if exists ${dbName} with (force)`);
      await admin.end();
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
  120_000,
);
