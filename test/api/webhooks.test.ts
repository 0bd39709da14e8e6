import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { createEndpoint, updateEndpoint } from "../../src/services/webhooks.ts";
import { parseAllowList } from "../../src/webhooks/address-guard.ts";
import { rowsOf } from "../../src/webhooks/outbox.ts";
import { emitEvent } from "../../src/webhooks/events.ts";
import { startQueue } from "../../src/webhooks/queue.ts";
import { secretBox } from "../../src/webhooks/secret-box.ts";
import { createTestContext, quietly, type TestUser } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

setDefaultTimeout(60_000);

/**
 * Events delivered to a local receiver by this test's own queue worker (graphile-worker, in this process),
 * with a fast retry schedule. Every request the receiver takes is checked with the `standardwebhooks` library.
 */
type Ctx = Awaited<ReturnType<typeof createTestContext>>;
let ctx: Ctx;
let queue: Awaited<ReturnType<typeof startQueue>>;
let alice: TestUser;

interface Received {
  id: string;
  type: string;
  data: Record<string, unknown>;
  verified: boolean;
  at: number;
}

/** A receiver whose answer the test sets: `(req) => Response | Promise<Response>`. */
function receiver() {
  const got: Received[] = [];
  let secret = "";
  let answer: (n: number) => Response | Promise<Response> = () => new Response("ok");
  let n = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = await req.text();
      const headers: Record<string, string> = req.headers.toJSON();
      let verified = false;
      try {
        new Webhook(secret).verify(body, headers);
        verified = true;
      } catch {}
      const parsed = JSON.parse(body) as { type: string; data: Record<string, unknown> };
      got.push({ id: headers["webhook-id"]!, type: parsed.type, data: parsed.data, verified, at: Date.now() });
      return answer(n++);
    },
  });
  return {
    got,
    url: `http://127.0.0.1:${server.port}/hook`,
    set secret(s: string) {
      secret = s;
    },
    answer(fn: (n: number) => Response | Promise<Response>) {
      answer = fn;
    },
    stop: () => server.stop(true),
  };
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

const png = () => makeImage("png", 40, 30, `#${randomBytes(3).toString("hex")}`);

async function upload(user: TestUser, name = "a.png") {
  return expectStatus(await ctx.upload(user.token, { bytes: await png(), filename: name, contentType: "image/png" }), 200).data as {
    key: string;
    pathname: string;
    links: { url: string; thumbnail_url: string };
  };
}

const del = async (user: TestUser, key: string) =>
  expectStatus(await ctx.json(`/api/v1/images/${encodeURIComponent(key)}`, { method: "DELETE", headers: ctx.bearer(user.token) }), 200);

async function deliveriesOf(endpointId: number) {
  return rowsOf<{
    id: string;
    event_type: string;
    subject: string;
    status: string;
    attempts: number;
    last_status_code: number | null;
    last_error: string | null;
  }>(
    await ctx.db.execute(
      sql`select id, event_type, subject, status, attempts, last_status_code, last_error from webhook_deliveries where endpoint_id = ${endpointId} order by id`,
    ),
  );
}

const receivers: ReturnType<typeof receiver>[] = [];
async function subscribe(user: TestUser, events = ["image.uploaded", "image.deleted", "image.expired", "token.revoked"]) {
  const r = receiver();
  receivers.push(r);
  const { endpoint, secret } = await createEndpoint(ctx.deps, { ownerId: user.id }, { url: r.url, events });
  r.secret = secret;
  return { r, endpoint, secret };
}

beforeAll(async () => {
  ctx = await createTestContext({
    webhooks: {
      box: secretBox(randomBytes(32)),
      allow: parseAllowList("127.0.0.1"),
      retryDelaysMs: [200, 300, 400, 500, 600, 700, 800],
      disableAfterMs: 60_000,
      timeoutMs: 1_000,
    },
  });
  queue = await startQueue(ctx.deps, ctx.connection, { concurrency: 4, pollIntervalMs: 100 });
  // the receivers are on loopback: WEBHOOK_ALLOW opens it to users' endpoints only by their group's grant
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { webhook_allow_internal: true });
  alice = await ctx.createUser();
});

afterEach(async () => {
  while (receivers.length) await receivers.pop()!.stop();
  await ctx.db.execute(sql`delete from webhook_endpoints`);
});

afterAll(async () => {
  await queue?.stop();
  await ctx?.close();
});

describe("events", () => {
  test("an upload and a delete arrive signed (standardwebhooks verifies them), with the image's addresses and no secret", async () => {
    const { r } = await subscribe(alice);
    const up = await upload(alice, "holiday.png");
    await del(alice, up.key);
    await until("both events", () => r.got.length >= 2);
    expect(r.got.map((g) => [g.type, g.verified])).toEqual([
      ["image.uploaded", true],
      ["image.deleted", true],
    ]);
    const [uploaded, deleted] = r.got as [Received, Received];
    expect(uploaded.data).toMatchObject({
      key: up.key,
      owner: { id: alice.id, username: alice.username },
      strategy: { id: ctx.localStrategyId },
      pathname: up.pathname,
      origin_name: "holiday.png",
      mimetype: "image/png",
      url: up.links.url,
      thumbnail_url: up.links.thumbnail_url,
      is_public: true,
    });
    expect(uploaded.data.size).toBeGreaterThan(0);
    expect(uploaded.data.addresses).toBeUndefined();
    expect(deleted.data).toMatchObject({ key: up.key, url: up.links.url });
    expect(deleted.data.addresses).toEqual([...new Set([up.links.url, up.links.thumbnail_url])]);
    // one message id per event, never the same for two
    expect(new Set(r.got.map((g) => g.id)).size).toBe(2);
    const text = JSON.stringify(r.got);
    expect(text).not.toContain(alice.token);
    expect(text).not.toContain("whsec_");
  });

  test("the signature does not verify with another secret, nor after the body changed", async () => {
    const { r, secret } = await subscribe(alice);
    r.secret = `whsec_${randomBytes(32).toString("base64")}`;
    await upload(alice);
    await until("the event", () => r.got.length >= 1);
    expect(r.got[0]!.verified).toBe(false);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  });

  test("a rolled-back change sends nothing: the event is in the change's transaction", async () => {
    const { endpoint } = await subscribe(alice);
    await ctx.db
      .transaction(async (tx) => {
        await emitEvent(tx, { type: "image.deleted", ownerId: alice.id, subject: "image:x", at: new Date(), data: { key: "x" } });
        throw new Error("the change fails after its event was written");
      })
      .catch(() => {});
    // and a refused upload (a 4xx) writes none either
    const refused = await ctx.upload(alice.token, { bytes: new TextEncoder().encode("not an image"), filename: "x.png", contentType: "image/png" });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    const jobs = rowsOf<{ n: number }>(
      await ctx.db.execute(sql`select count(*)::int as n from graphile_worker.jobs where task_identifier in ('webhook_event', 'webhook_deliver')`),
    );
    expect(jobs[0]!.n).toBe(0);
    expect(await deliveriesOf(endpoint.id)).toEqual([]);
  });

  test("the change writes its deliveries itself: one row and one job per endpoint that wants the event, in its transaction", async () => {
    const { endpoint } = await subscribe(alice);
    const other = await subscribe(alice, ["token.revoked"]); // does not want uploads
    await queue.stop(); // nothing is delivered meanwhile: what the upload wrote stays to be read
    try {
      const image = await upload(alice);
      const rows = rowsOf<{ endpoint_id: number; subject: string; status: string; body: string }>(
        await ctx.db.execute(sql`select endpoint_id, subject, status, body from webhook_deliveries where subject = ${`image:${image.key}`}`),
      );
      expect(rows.map((r) => [r.endpoint_id, r.status])).toEqual([[endpoint.id, "pending"]]);
      const body = JSON.parse(rows[0]!.body);
      expect(body).toMatchObject({ type: "image.uploaded", data: { key: image.key, pathname: image.pathname, url: image.links.url, owner: { id: alice.id } } });
      const jobs = rowsOf<{ task_identifier: string }>(await ctx.db.execute(sql`select task_identifier from graphile_worker.jobs`));
      expect(jobs.map((j) => j.task_identifier)).toEqual(["webhook_deliver"]);
      expect(await deliveriesOf(other.endpoint.id)).toEqual([]);
    } finally {
      queue = await startQueue(ctx.deps, ctx.connection, { concurrency: 4, pollIntervalMs: 100 });
    }
    await until("the delivery", async () => (await deliveriesOf(endpoint.id))[0]?.status === "delivered");
  });

  test("a webhook_event job left queued by an earlier version still makes its deliveries", async () => {
    const { r, endpoint } = await subscribe(alice);
    const payload = {
      id: "msg_legacy1",
      seq: 1,
      type: "image.deleted",
      timestamp: new Date().toISOString(),
      owner_id: alice.id,
      subject: "image:legacy",
      data: { key: "legacy" },
    };
    await ctx.db.execute(sql`select graphile_worker.add_job('webhook_event', ${JSON.stringify(payload)}::json, queue_name => 'webhook_events')`);
    await until("the legacy event", () => r.got.length >= 1);
    expect(r.got[0]).toMatchObject({ id: "msg_legacy1", type: "image.deleted", verified: true, data: { key: "legacy" } });
    expect((await deliveriesOf(endpoint.id)).map((d) => d.status)).toEqual(["delivered"]);
  });

  test("no endpoint wants it: no job is written at all", async () => {
    await upload(alice);
    const jobs = rowsOf<{ n: number }>(await ctx.db.execute(sql`select count(*)::int as n from graphile_worker.jobs`));
    expect(jobs[0]!.n).toBe(0);
  });

  test("another account's events never reach this account's endpoint", async () => {
    const bob = await ctx.createUser();
    const { r, endpoint } = await subscribe(alice);
    const mine = await upload(alice);
    await upload(bob);
    await until("alice's event", () => r.got.length >= 1);
    await Bun.sleep(500);
    expect(r.got.map((g) => g.data.key)).toEqual([mine.key]);
    expect((await deliveriesOf(endpoint.id)).length).toBe(1);
  });

  test("token.revoked names the token, never its secret", async () => {
    const { r } = await subscribe(alice, ["token.revoked"]);
    // revoke every token of the account through the admin API's sign-out
    await ctx.admin("POST", `/api/admin/users/${alice.id}/sign-out`);
    await until("token events", () => r.got.length >= 1);
    for (const g of r.got) {
      expect(g.type).toBe("token.revoked");
      expect(g.verified).toBe(true);
      expect(g.data.token).toMatchObject({ kind: expect.any(String) });
      expect(JSON.stringify(g.data)).not.toContain(alice.token);
    }
    alice = await ctx.createUser(); // alice's token is gone: the next tests use a fresh account
  });
});

describe("delivery", () => {
  test("a receiver down for a while, then back: everything arrives, in order per image", async () => {
    const { r, endpoint } = await subscribe(alice);
    const downUntil = Date.now() + 1_500;
    r.answer(() => (Date.now() < downUntil ? new Response("down", { status: 503 }) : new Response("ok")));
    const keys: string[] = [];
    for (let i = 0; i < 4; i++) {
      const up = await upload(alice, `p${i}.png`);
      keys.push(up.key);
      await del(alice, up.key);
    }
    await until("8 deliveries", async () => (await deliveriesOf(endpoint.id)).filter((d) => d.status === "delivered").length === 8);
    const delivered = r.got.filter((g) => g.at >= downUntil);
    for (const key of keys) {
      const mine = delivered.filter((g) => g.data.key === key).map((g) => g.type);
      expect(mine).toEqual(["image.uploaded", "image.deleted"]);
    }
    expect(r.got.every((g) => g.verified)).toBe(true);
    const rows = await deliveriesOf(endpoint.id);
    expect(rows.some((d) => d.attempts > 1)).toBe(true);
    expect(rows.every((d) => d.last_status_code === 200)).toBe(true);
  });

  test("500s: retried on the schedule, then failed after the last attempt, the answer's code in the log and never its body", async () => {
    const { r, endpoint } = await subscribe(alice);
    r.answer(() => new Response("broken receiver", { status: 500 }));
    await upload(alice);
    const [row] = await until("the delivery to give up", async () => {
      const rows = await deliveriesOf(endpoint.id);
      return rows[0]?.status === "failed" ? rows : undefined;
    });
    expect(row).toMatchObject({ status: "failed", attempts: 8, last_status_code: 500 });
    // a user endpoint's log shows the status, the latency and the attempts: what the receiver answered is not ours to show
    expect(row!.last_error).toBe("answered 500");
    expect(r.got.length).toBe(8);
  });

  test("a slow receiver times out (and is retried); a huge answer is read only up to the limit", async () => {
    const slow = await subscribe(alice, ["image.uploaded"]);
    slow.r.answer((n) => (n === 0 ? Bun.sleep(3_000).then(() => new Response("late")) : new Response("ok")));
    const huge = await subscribe(alice, ["image.uploaded"]);
    const chunk = new Uint8Array(1024 * 1024).fill(97);
    huge.r.answer(
      () =>
        new Response(
          new ReadableStream({
            pull(c) {
              c.enqueue(chunk); // endless: 1 MB a pull
            },
          }),
        ),
    );
    await upload(alice);
    const [slowRow] = await until("the slow one delivered on retry", async () => {
      const rows = await deliveriesOf(slow.endpoint.id);
      return rows[0]?.status === "delivered" ? rows : undefined;
    });
    expect(slowRow!.attempts).toBe(2);
    const [hugeRow] = await until("the huge one", async () => {
      const rows = await deliveriesOf(huge.endpoint.id);
      return rows[0]?.status === "delivered" ? rows : undefined;
    });
    expect(hugeRow).toMatchObject({ attempts: 1, last_status_code: 200 });
  });

  test("410 Gone disables the endpoint; its owner sees why", async () => {
    const { r, endpoint } = await subscribe(alice);
    r.answer(() => new Response("gone", { status: 410 }));
    await upload(alice);
    await until("disabled", async () => {
      const [e] = rowsOf<{ enabled: boolean; disabled_reason: string | null }>(
        await ctx.db.execute(sql`select enabled, disabled_reason from webhook_endpoints where id = ${endpoint.id}`),
      );
      return e && !e.enabled ? e : undefined;
    }).then((e) => expect(e.disabled_reason).toBe("answered 410 Gone"));
    // disabled: the next upload is in its log as not sent, and nothing is sent
    await upload(alice);
    await Bun.sleep(300);
    const rows = await deliveriesOf(endpoint.id);
    expect(rows.map((d) => [d.status, d.attempts, d.last_error])).toEqual([
      ["failed", 1, "answered 410"],
      ["failed", 0, "not sent: the endpoint was switched off"],
    ]);
    expect(r.got.length).toBe(1);
    // enabled again: events flow again
    r.answer(() => new Response("ok"));
    await updateEndpoint(ctx.deps, { ownerId: alice.id }, endpoint.id, { enabled: true });
    await upload(alice);
    await until("delivered after re-enabling", async () => (await deliveriesOf(endpoint.id)).some((d) => d.status === "delivered"));
  });

  test("a day of failures disables the endpoint", async () => {
    const { r, endpoint } = await subscribe(alice);
    r.answer(() => new Response("no", { status: 502 }));
    // the endpoint has been failing for more than a day already
    await ctx.db.execute(sql`update webhook_endpoints set failing_since = now() - interval '25 hours' where id = ${endpoint.id}`);
    await upload(alice);
    const e = await until("disabled", async () => {
      const [row] = rowsOf<{ enabled: boolean; disabled_reason: string | null }>(
        await ctx.db.execute(sql`select enabled, disabled_reason from webhook_endpoints where id = ${endpoint.id}`),
      );
      return row && !row.enabled ? row : undefined;
    });
    expect(e.disabled_reason).toStartWith("failing since ");
    expect((await deliveriesOf(endpoint.id))[0]).toMatchObject({ status: "failed", attempts: 1, last_status_code: 502 });
  });

  test("a redirect is not followed: it counts as a failed attempt", async () => {
    const target = receiver();
    receivers.push(target);
    const { r, endpoint } = await subscribe(alice, ["image.uploaded"]);
    r.answer(() => new Response(null, { status: 307, headers: { location: target.url } }));
    await upload(alice);
    await until("a failed attempt", async () => (await deliveriesOf(endpoint.id))[0]?.attempts);
    const [row] = await deliveriesOf(endpoint.id);
    expect(row!.last_status_code).toBe(307);
    expect(row!.last_error).toContain("not followed");
    expect(target.got).toEqual([]);
  });
});

describe("the verification code of docs/webhooks.md", () => {
  const readme = readFileSync(join(import.meta.dir, "..", "..", "docs", "webhooks.md"), "utf8");
  const events = readme.slice(readme.indexOf("## Events: signed webhooks"));
  const python = /```python\n([\s\S]*?)```/.exec(events)?.[1];

  test.skipIf(!Bun.which("python3"))("the Python function accepts a real delivery and refuses a changed body or another secret", async () => {
    expect(python).toBeDefined();
    const seen: { headers: Record<string, string>; body: string }[] = [];
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        seen.push({ headers: req.headers.toJSON(), body: await req.text() });
        return new Response("ok");
      },
    });
    try {
      const { secret } = await createEndpoint(ctx.deps, { ownerId: alice.id }, { url: `http://127.0.0.1:${server.port}/`, events: ["image.uploaded"] });
      await upload(alice);
      await until("the delivery", () => seen.length >= 1);
      const { headers, body } = seen[0]!;
      const check = async (key: string, text: string) => {
        const script = `${python}\nimport json, sys\nj = json.load(sys.stdin)\nprint(verify(j["secret"], j["headers"], j["body"].encode()))\n`;
        const proc = Bun.spawn(["python3", "-c", script], {
          stdin: new TextEncoder().encode(JSON.stringify({ secret: key, headers, body: text })),
          stdout: "pipe",
          stderr: "pipe",
        });
        const out = (await new Response(proc.stdout).text()).trim();
        expect(await proc.exited, await new Response(proc.stderr).text()).toBe(0);
        return out;
      };
      expect(await check(secret, body)).toBe("True");
      expect(await check(secret, body.replace("image.uploaded", "image.deleted"))).toBe("False");
      expect(await check(`whsec_${randomBytes(32).toString("base64")}`, body)).toBe("False");
    } finally {
      server.stop(true);
    }
  });
});

describe("recovery", () => {
  test("a pending delivery that lost its job (a restored backup holds deliveries, not the queue) is sent at the next start", async () => {
    const { r, endpoint } = await subscribe(alice, ["image.uploaded"]);
    r.answer(() => new Response("ok"));
    const body = JSON.stringify({ type: "image.uploaded", timestamp: new Date().toISOString(), data: { key: "restored" } });
    await ctx.db.execute(sql`insert into webhook_deliveries (endpoint_id, message_id, seq, event_type, subject, body, next_attempt_at)
      values (${endpoint.id}, 'msg_restored', nextval('webhook_event_seq'), 'image.uploaded', 'image:restored', ${body}, now() - interval '1 hour')`);
    await Bun.sleep(300);
    expect(r.got).toEqual([]); // no job: nothing happens by itself
    await queue.stop();
    queue = await startQueue(ctx.deps, ctx.connection, { concurrency: 4, pollIntervalMs: 100 });
    await until("the restored delivery", () => r.got.length >= 1);
    expect(r.got.map((g) => [g.id, g.type, g.data.key, g.verified])).toEqual([["msg_restored", "image.uploaded", "restored", true]]);
    expect((await deliveriesOf(endpoint.id))[0]).toMatchObject({ status: "delivered", attempts: 1 });
  });
});

describe("SSRF at delivery", () => {
  test("a name that resolved to an allowed address at saving, and to a private one now (DNS rebinding), is refused and logged; nothing is sent", async () => {
    const settings = ctx.deps.config.webhooks!;
    const r = receiver();
    receivers.push(r);
    const port = new URL(r.url).port;
    let answer = "127.0.0.1";
    settings.resolve = async () => [answer];
    try {
      const { endpoint, secret } = await createEndpoint(
        ctx.deps,
        { ownerId: alice.id },
        { url: `http://hooks.rebind.test:${port}/hook`, events: ["image.uploaded"] },
      );
      r.secret = secret;
      answer = "10.0.0.5";
      const { logged } = await quietly(async () => {
        await upload(alice);
        await until("a refused attempt", async () => (await deliveriesOf(endpoint.id))[0]?.attempts);
      });
      const [row] = await deliveriesOf(endpoint.id);
      expect(row).toMatchObject({ status: "pending", attempts: 1, last_status_code: null });
      // the owner is not told what the name resolves to; the operator's log is
      expect(row!.last_error).toBe("refused: the address is private or internal; webhooks can only be sent to public addresses");
      expect(r.got).toEqual([]);
      expect(logged.some((l) => String(l.msg).startsWith("webhook refused: 10.0.0.5 is a private address") && l.endpoint_id === endpoint.id)).toBe(true);
      // and back on an allowed address: the retry goes out
      answer = "127.0.0.1";
      await until("delivered on a retry", async () => (await deliveriesOf(endpoint.id))[0]?.status === "delivered");
      expect(r.got.map((g) => g.verified)).toEqual([true]);
    } finally {
      settings.resolve = undefined;
    }
  });
});
