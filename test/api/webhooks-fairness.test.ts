import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { createEndpoint } from "../../src/services/webhooks.ts";
import { parseAllowList } from "../../src/webhooks/address-guard.ts";
import { rowsOf } from "../../src/webhooks/outbox.ts";
import { startQueue } from "../../src/webhooks/queue.ts";
import { secretBox } from "../../src/webhooks/secret-box.ts";
import { createTestContext, type TestContext, type TestUser } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

setDefaultTimeout(120_000);

/**
 * Fairness between subscribers (docs/decisions/webhook-fairness.md): a hanging receiver holds only its own slots —
 * never a queue worker, never another account's deliveries, never the site-wide ones — and a retry's delay is
 * counted from the failed attempt's end. The queue runs in this process with the server's default concurrency (8).
 */
let ctx: TestContext;
let queue: Awaited<ReturnType<typeof startQueue>>;

beforeAll(async () => {
  ctx = await createTestContext({
    webhooks: { box: secretBox(randomBytes(32)), allow: parseAllowList("127.0.0.1"), timeoutMs: 35_000 },
  });
  // the receivers are on loopback: WEBHOOK_ALLOW opens it to users' endpoints by their group's grant
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { webhook_allow_internal: true });
  queue = await startQueue(ctx.deps, ctx.connection, { concurrency: 8 });
});

afterAll(async () => {
  await queue?.stop();
  await ctx?.close();
});

/** A receiver that notes when each webhook-id arrived; `hangMs` holds every answer that long, or until release(). */
function receiver(hangMs = 0) {
  const got = new Map<string, number>();
  let requests = 0;
  let released = false;
  const held = new Set<() => void>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const at = Date.now();
      requests++;
      const id = req.headers.get("webhook-id")!;
      await req.text();
      if (!got.has(id)) got.set(id, at);
      if (hangMs > 0 && !released) {
        await new Promise<void>((go) => {
          const timer = setTimeout(go, hangMs);
          held.add(() => (clearTimeout(timer), go()));
        });
      }
      return new Response("ok");
    },
  });
  /** Answers the requests held, and every later one at once. */
  const release = () => {
    released = true;
    for (const go of held) go();
    held.clear();
  };
  return {
    got,
    url: `http://127.0.0.1:${server.port}/hook`,
    requests: () => requests,
    release,
    stop: () => {
      release();
      server.stop(true);
    },
  };
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

async function upload(user: TestUser, n: number): Promise<string> {
  const bytes = await makeImage("png", 24 + (n % 50), 24, `#${randomBytes(3).toString("hex")}`);
  const res = await ctx.upload(user.token, { bytes, filename: `f${n}.png`, contentType: "image/png" });
  return expectStatus(res, 200).data.key as string;
}

const remove = async (user: TestUser, key: string) =>
  expectStatus(await ctx.json(`/api/v1/images/${encodeURIComponent(key)}`, { method: "DELETE", headers: ctx.bearer(user.token) }), 200);

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

describe("a hanging endpoint", () => {
  test("hangs 30 s a request while 40 uploads go out: other accounts' and site-wide deliveries keep a p99 under 2 s", async () => {
    const hog = await ctx.createUser();
    const other = await ctx.createUser();
    const hanging = receiver(30_000);
    const quick = receiver();
    const purge = receiver();
    try {
      await createEndpoint(ctx.deps, { ownerId: hog.id }, { url: hanging.url, events: ["image.uploaded", "image.deleted"] });
      const mine = await createEndpoint(ctx.deps, { ownerId: other.id }, { url: quick.url, events: ["image.uploaded", "image.deleted"] });
      // a CDN purge: every upload and delete of the site
      const site = await createEndpoint(ctx.deps, { site: true }, { url: purge.url, events: ["image.uploaded", "image.deleted"] });

      // 40 uploads of the hog's (8 at a time), the other account's uploads and deletes in between, and deletes of the hog's
      const hogKeys: string[] = [];
      const otherKeys: string[] = [];
      for (let round = 0; round < 5; round++) {
        hogKeys.push(...(await Promise.all(Array.from({ length: 8 }, (_, i) => upload(hog, round * 8 + i)))));
        otherKeys.push(await upload(other, 100 + round));
      }
      for (const key of hogKeys.slice(0, 10)) await remove(hog, key);
      for (const key of otherKeys) await remove(other, key);

      // the hanging receiver got its first requests, and holds them
      await until("the hanging receiver's first requests", () => hanging.requests() >= 1);
      const siteExpected = hogKeys.length + otherKeys.length + 10 + otherKeys.length;
      const otherExpected = otherKeys.length * 2;
      await until("every site-wide and other-account delivery", () => purge.got.size >= siteExpected && quick.got.size >= otherExpected).catch(async (e) => {
        const late = rowsOf<{ id: string; message_id: string; status: string; attempts: number }>(
          await ctx.db.execute(
            sql`select id, message_id, status, attempts from webhook_deliveries where endpoint_id in (${mine.endpoint.id}, ${site.endpoint.id})`,
          ),
        ).filter((r) => !purge.got.has(r.message_id) && !quick.got.has(r.message_id));
        throw new Error(`${(e as Error).message}: not received ${JSON.stringify(late)}`);
      });
      // the hanging endpoint holds its own slots only (4 from this instance), whatever its backlog
      expect(hanging.requests()).toBeLessThanOrEqual(4);

      // latency: from the event's transaction (its delivery's created_at, taken when that transaction began, so at or
      // before the commit) to the receiver's first sight of its webhook-id
      const rows = rowsOf<{ endpoint_id: number; message_id: string; created_ms: number }>(
        await ctx.db.execute(sql`select endpoint_id, message_id, (extract(epoch from created_at) * 1000)::float8 as created_ms
          from webhook_deliveries where endpoint_id in (${mine.endpoint.id}, ${site.endpoint.id})`),
      );
      const latencies = rows.map((r) => {
        const got = (r.endpoint_id === site.endpoint.id ? purge : quick).got.get(r.message_id);
        if (got === undefined) throw new Error(`delivery ${r.message_id} was not received`);
        return got - r.created_ms;
      });
      expect(latencies.length).toBe(siteExpected + otherExpected);
      const p50 = percentile(latencies, 50);
      const p99 = percentile(latencies, 99);
      console.log(
        `webhooks fairness: ${latencies.length} deliveries to the other account and the site beside a 30 s hanging endpoint: ` +
          `p50 ${p50.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms; the hanging one got ${hanging.requests()} requests`,
      );
      expect(p99).toBeLessThan(2_000);
    } finally {
      // its requests answered: the sends in flight end and are recorded
      hanging.stop();
      quick.stop();
      purge.stop();
      await ctx.db.execute(sql`delete from webhook_endpoints`);
    }
  });
});

describe("bounds", () => {
  test("one account's hanging endpoints hold 8 sends at most together (4 each), whatever their backlog", async () => {
    const hog = await ctx.createUser();
    const hanging = receiver(30_000);
    const purge = receiver();
    try {
      for (let i = 0; i < 3; i++) await createEndpoint(ctx.deps, { ownerId: hog.id }, { url: `${hanging.url}/${i}`, events: ["image.uploaded"] });
      await createEndpoint(ctx.deps, { site: true }, { url: purge.url, events: ["image.uploaded"] });
      for (let round = 0; round < 2; round++) await Promise.all(Array.from({ length: 6 }, (_, i) => upload(hog, round * 6 + i)));
      await until("the site-wide deliveries", () => purge.got.size >= 12);
      await until("8 sends held", () => hanging.requests() >= 8);
      await Bun.sleep(500); // a ninth would arrive meanwhile
      expect(hanging.requests()).toBe(8); // 36 deliveries wanted, 12 allowed per endpoint: the account's bound
    } finally {
      hanging.stop();
      purge.stop();
      await ctx.db.execute(sql`delete from webhook_endpoints`);
    }
  });

  test("the users' total reached, another account waits; site-wide deliveries never do", async () => {
    const settings = ctx.deps.config.webhooks!;
    settings.usersInFlight = 4;
    const hog = await ctx.createUser();
    const other = await ctx.createUser();
    const hanging = receiver(30_000);
    const quick = receiver();
    const purge = receiver();
    try {
      await createEndpoint(ctx.deps, { ownerId: hog.id }, { url: hanging.url, events: ["image.uploaded"] });
      await createEndpoint(ctx.deps, { ownerId: other.id }, { url: quick.url, events: ["image.uploaded"] });
      await createEndpoint(ctx.deps, { site: true }, { url: purge.url, events: ["image.uploaded"] });
      await Promise.all(Array.from({ length: 4 }, (_, i) => upload(hog, i)));
      await until("the hog's 4 sends", () => hanging.requests() >= 4);
      await upload(other, 10);
      await until("the site-wide deliveries", () => purge.got.size >= 5, 5_000);
      await Bun.sleep(500);
      expect(quick.got.size).toBe(0); // held back by the users' total
      // a slot freed wakes it at once
      hanging.release();
      await until("the other account's delivery", () => quick.got.size >= 1, 5_000);
    } finally {
      settings.usersInFlight = undefined;
      hanging.stop();
      quick.stop();
      purge.stop();
      await ctx.db.execute(sql`delete from webhook_endpoints`);
    }
  });
});

describe("retries", () => {
  test("after a timeout, the retry's delay is counted from the failure, not from the attempt's start", async () => {
    const settings = ctx.deps.config.webhooks!;
    const saved = { timeoutMs: settings.timeoutMs, retryDelaysMs: settings.retryDelaysMs };
    settings.timeoutMs = 1_500;
    settings.retryDelaysMs = [2_000, 2_000];
    // hangs until the attempt times out, the first time only
    const starts: number[] = [];
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      async fetch(req) {
        starts.push(Date.now());
        await req.text();
        if (starts.length === 1) await Bun.sleep(5_000);
        return new Response("ok");
      },
    });
    try {
      const user = await ctx.createUser();
      const { endpoint } = await createEndpoint(ctx.deps, { ownerId: user.id }, { url: `http://127.0.0.1:${server.port}/`, events: ["image.uploaded"] });
      await upload(user, 1);
      const [failed] = await until("the timed-out attempt's record", async () => {
        const rows = rowsOf<{ attempts: number; last_error: string; last_ms: number; next_ms: number }>(
          await ctx.db.execute(sql`select attempts, last_error, (extract(epoch from last_attempt_at) * 1000)::float8 as last_ms,
            (extract(epoch from next_attempt_at) * 1000)::float8 as next_ms from webhook_deliveries where endpoint_id = ${endpoint.id}`),
        );
        return rows[0]?.attempts === 1 ? rows : undefined;
      });
      expect(failed!.last_error).toBe("failed: timed out after 1.5 s");
      // last_attempt_at is the attempt's start; the retry is due 2 s after its end, 1.5 s later
      expect(failed!.next_ms - failed!.last_ms).toBeGreaterThanOrEqual(1_500 + 2_000 - 20);
      await until("the retry", () => starts.length >= 2, 15_000);
      expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(1_500 + 2_000 - 20);
    } finally {
      Object.assign(settings, saved);
      server.stop(true);
      await ctx.db.execute(sql`delete from webhook_endpoints`);
    }
  });
});
