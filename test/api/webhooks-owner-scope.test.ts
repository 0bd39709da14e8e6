import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { createEndpoint } from "../../src/services/webhooks.ts";
import { parseAllowList } from "../../src/webhooks/address-guard.ts";
import { rowsOf } from "../../src/webhooks/outbox.ts";
import { startQueue } from "../../src/webhooks/queue.ts";
import { secretBox } from "../../src/webhooks/secret-box.ts";
import { ADMIN_TOKEN, createTestContext, quietly, type TestContext } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";
import { visitorClass } from "../support/visitor.ts";

setDefaultTimeout(60_000);

/**
 * Webhooks scoped to their owners (docs/decisions/webhook-owner-scope.md, webhook-switch-on.md): WEBHOOK_ALLOW and a
 * user's endpoint (the group's grant), what a user's delivery log and refusals may say, and an endpoint switched off
 * and on again (its missed events kept, and sent on request), on the pages, the admin API and the CLI's API.
 */
const NOT_PUBLIC = "This address is private or internal; webhooks can only be sent to public addresses.";
const PASSWORD = "correct horse battery";

let ctx: TestContext;
let queue: Awaited<ReturnType<typeof startQueue>>;
let addressSeq = 0;
const Visitor = visitorClass(
  () => ctx,
  () => `198.51.100.${++addressSeq}`,
);
const location = (res: Response) => res.headers.get("location");
const events = (...names: string[]) => Object.fromEntries(names.map((n) => [`event_${n}`, "1"]));
const api = (method: string, path: string, body?: unknown) =>
  ctx.json(path, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

beforeAll(async () => {
  ctx = await createTestContext({
    webhooks: { box: secretBox(randomBytes(32)), allow: parseAllowList("127.0.0.1"), timeoutMs: 2_000, retryDelaysMs: [200, 300, 400] },
  });
  queue = await startQueue(ctx.deps, ctx.connection, { concurrency: 4, pollIntervalMs: 100 });
  // the receivers are on loopback: the default group has the grant (the first test makes a group without it)
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { webhook_allow_internal: true });
});

const receivers: { stop(): void }[] = [];
afterEach(async () => {
  while (receivers.length) receivers.pop()!.stop();
  await ctx.db.execute(sql`delete from webhook_endpoints`);
});

afterAll(async () => {
  await queue?.stop();
  await ctx?.close();
});

/** A loopback receiver: what arrived (webhook-id, type), and an answer the test may change. */
function receiver() {
  const got: { id: string; type: string }[] = [];
  let answer: () => Response = () => new Response("ok");
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = JSON.parse(await req.text()) as { type: string };
      got.push({ id: req.headers.get("webhook-id")!, type: body.type });
      return answer();
    },
  });
  receivers.push({ stop: () => server.stop(true) });
  return {
    got,
    url: `http://127.0.0.1:${server.port}/hook`,
    answer(fn: () => Response) {
      answer = fn;
    },
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

let seq = 0;
/** A signed-in member of a group (default: the default group, which has the grant). */
async function member(groupId = ctx.defaultGroupId, role: "user" | "admin" = "user") {
  const username = `wo${++seq}_${Math.random().toString(36).slice(2, 6)}`;
  const user = await ctx.createUser({ username, email: `${username}@example.com`, password: PASSWORD, group_id: groupId, role });
  const visitor = new Visitor();
  expect((await visitor.signIn(username)).status).toBe(303);
  return { user, visitor };
}

async function upload(token: string) {
  const bytes = await makeImage("png", 30, 20, `#${randomBytes(3).toString("hex")}`);
  return expectStatus(await ctx.upload(token, { bytes, filename: "a.png", contentType: "image/png" }), 200).data.key as string;
}

const deliveries = (endpointId: number) =>
  ctx.db
    .execute(
      sql`select id, message_id, status, attempts, last_status_code, last_latency_ms, last_error from webhook_deliveries where endpoint_id = ${endpointId} order by id`,
    )
    .then((r) =>
      rowsOf<{
        id: string;
        message_id: string;
        status: string;
        attempts: number;
        last_status_code: number | null;
        last_latency_ms: number | null;
        last_error: string | null;
      }>(r),
    );

async function userEndpoint(visitor: InstanceType<typeof Visitor>, url: string, ...names: string[]) {
  const res = await visitor.post("/user/webhooks", { url, ...events(...(names.length ? names : ["image.uploaded"])) });
  const html = await res.text();
  return { res, html, id: Number(/href="\/user\/webhooks\/(\d+)"/.exec(html)?.[1]) };
}

describe("WEBHOOK_ALLOW and a user's endpoint: the group's grant", () => {
  test("refused without the grant although WEBHOOK_ALLOW lists the host; accepted with it; a site-wide endpoint always", async () => {
    const group = await ctx.admin("POST", "/api/admin/groups", { name: `nogrant${++seq}`, strategy_ids: [ctx.localStrategyId] });
    expect(group.webhook_allow_internal).toBe(false); // off by default
    const { user, visitor } = await member(group.id);
    const r = receiver();

    const refused = await userEndpoint(visitor, r.url);
    expect(refused.res.status).toBe(422);
    expect(refused.html).toContain(NOT_PUBLIC);
    expect(refused.html).not.toContain("loopback");
    expect(rowsOf(await ctx.db.execute(sql`select count(*)::int as n from webhook_endpoints where owner_id = ${user.id}`))).toEqual([{ n: 0 }]);

    // the site-wide endpoint to the same receiver: WEBHOOK_ALLOW is the operator's, for the site's endpoints
    const site = expectStatus(await api("POST", "/api/admin/webhooks", { url: r.url, events: ["image.uploaded"] }), 200).data;

    // the administrator grants it to the group: accepted, and delivered
    const granted = expectStatus(await api("PATCH", `/api/admin/groups/${group.id}`, { webhook_allow_internal: true }), 200).data;
    expect(granted.webhook_allow_internal).toBe(true);
    const made = await userEndpoint(visitor, r.url);
    expect(made.res.status).toBe(200);
    expect(made.id).toBeGreaterThan(0);
    await upload(user.token);
    await until(
      "the user's and the site's deliveries",
      async () => (await deliveries(made.id))[0]?.status === "delivered" && (await deliveries(site.id))[0]?.status === "delivered",
    );
    expect(r.got).toHaveLength(2);

    // withdrawn: checked again at delivery, the user's is refused (saying no address), the site's still goes out
    expectStatus(await api("PATCH", `/api/admin/groups/${group.id}`, { webhook_allow_internal: false }), 200);
    await quietly(async () => {
      await upload(user.token);
      await until("the refused attempt", async () => (await deliveries(made.id))[1]?.attempts);
    });
    expect((await deliveries(made.id))[1]).toMatchObject({
      status: "pending",
      last_status_code: null,
      last_error: "refused: the address is private or internal; webhooks can only be sent to public addresses",
    });
    await until("the site's second delivery", async () => (await deliveries(site.id))[1]?.status === "delivered");
    expect(r.got).toHaveLength(3);
  });

  test("the Groups page shows the grant, off for a new group, and saves it through the admin API", async () => {
    const { visitor } = await member(ctx.defaultGroupId, "admin");
    const form = await (await visitor.get("/user/admin/groups/new")).text();
    expect(form).toContain("<legend>Webhooks</legend>");
    expect(form).toMatch(/<input type="checkbox" id="group-webhook-allow-internal" name="webhook_allow_internal" value="1"(?! checked)/);
    const name = `grant${++seq}`;
    const res = await visitor.post("/user/admin/groups", {
      name,
      enabled: "1",
      allow_api: "1",
      max_file_size_kb: "1024",
      max_pixels: "1", // the form speaks megapixels
      default_capacity_kb: "1024",
      convert_quality: "80",
      review_provider: "none",
      review_timeout_ms: "5000",
      metadata: "strip_location",
      ext_png: "1",
      webhook_allow_internal: "1",
    });
    expect([res.status, location(res)]).toEqual([303, "/user/admin/groups?done=created"]);
    const group = ((await ctx.admin("GET", "/api/admin/groups?per_page=500")).groups as { id: number; name: string; webhook_allow_internal: boolean }[]).find(
      (g) => g.name === name,
    )!;
    expect(group.webhook_allow_internal).toBe(true);
    const edit = await (await visitor.get(`/user/admin/groups/${group.id}`)).text();
    expect(edit).toMatch(/name="webhook_allow_internal" value="1" checked/);
    expect(await (await visitor.get("/user/admin/groups?per_page=500")).text()).toContain("internal webhooks");
    const audit = (await ctx.admin("GET", "/api/admin/audit-log?limit=20")).entries as { action: string; detail: Record<string, unknown> }[];
    expect(audit.some((e) => e.action === "POST /api/admin/groups" && e.detail.webhook_allow_internal === true)).toBe(true);
  });
});

describe("refusals never say what a name resolves to", () => {
  test("a name resolving to a private address: the form and the API say it is private or internal; the operator's log has the address", async () => {
    const settings = ctx.deps.config.webhooks!;
    settings.resolve = async () => ["10.1.2.3"];
    try {
      const { visitor } = await member();
      const { logged } = await quietly(async () => {
        const page = await userEndpoint(visitor, "http://db.internal.test/hook");
        expect(page.res.status).toBe(422);
        expect(page.html).toContain(NOT_PUBLIC);
        expect(page.html).not.toContain("10.1.2.3");
        const res = await api("POST", "/api/admin/webhooks", { url: "http://db.internal.test/hook", events: ["image.uploaded"] });
        expectStatus(res, 422);
        expect(res.body.errors.url).toEqual([NOT_PUBLIC]);
        expect(JSON.stringify(res.body)).not.toContain("10.1.2.3");
      });
      expect(logged.some((l) => String(l.msg).includes("10.1.2.3 is a private address"))).toBe(true);
    } finally {
      settings.resolve = undefined;
    }
  });
});

describe("the delivery log", () => {
  test("a user endpoint's log shows the status, the latency and the attempts, never the answer's body nor a redirect's target; the site's keeps them", async () => {
    const { user, visitor } = await member();
    const r = receiver();
    r.answer(() => new Response("INTERNAL-ANSWER-BODY db=10.9.9.9", { status: 500 }));
    const made = await userEndpoint(visitor, r.url);
    const site = expectStatus(await api("POST", "/api/admin/webhooks", { url: r.url, events: ["image.uploaded"] }), 200).data;
    await upload(user.token);
    await until("both failed", async () => (await deliveries(made.id))[0]?.status === "failed" && (await deliveries(site.id))[0]?.status === "failed");
    const [mine] = await deliveries(made.id);
    expect(mine).toMatchObject({ attempts: 4, last_status_code: 500, last_error: "answered 500" });
    expect(mine!.last_latency_ms).toBeGreaterThanOrEqual(0);
    const page = await (await visitor.get(`/user/webhooks/${made.id}`)).text();
    expect(page).not.toContain("INTERNAL-ANSWER-BODY");
    expect(page).not.toContain("10.9.9.9");
    expect(page).toContain('<td data-label="Attempts">4</td>');
    expect(page).toContain('<td data-label="Answer">500</td>');
    expect(page).toMatch(/<td data-label="Latency \(ms\)">\d+<\/td>/);
    // the operator's own site-wide log keeps the answer's first 200 characters (their endpoint, their network)
    const log = expectStatus(await api("GET", `/api/admin/webhooks/${site.id}/deliveries`), 200).data;
    expect(log.deliveries[0].last_error).toBe("answered 500: INTERNAL-ANSWER-BODY db=10.9.9.9");

    // a redirect: its target is the receiver's answer too
    r.answer(() => new Response(null, { status: 302, headers: { location: "http://10.9.9.9/internal" } }));
    await upload(user.token);
    await until("the redirect's attempt", async () => (await deliveries(made.id))[1]?.attempts);
    expect((await deliveries(made.id))[1]!.last_error).toBe("answered 302 (a redirect, not followed)");
    expect(await (await visitor.get(`/user/webhooks/${made.id}`)).text()).not.toContain("10.9.9.9");
  });

  test("the migration cuts what a user endpoint's log already holds, and leaves the site's", async () => {
    const { user } = await member();
    const own = await createEndpoint(ctx.deps, { ownerId: user.id }, { url: "https://93.184.216.34/own", events: ["image.uploaded"] });
    const site = await createEndpoint(ctx.deps, { site: true }, { url: "https://93.184.216.34/site", events: ["image.uploaded"] });
    const texts = [
      "answered 500: internal secrets",
      "answered 307 (redirect to http://10.0.0.1/x, not followed)",
      "refused: 10.0.0.5 is a private address",
      'refused: db.internal resolved to "fe80::1%eth0", not an IP address',
      "failed: connected to 10.0.0.9, not to the checked 93.184.216.34",
      "failed: timed out after 10 s",
      "not sent: the endpoint is disabled",
    ];
    for (const endpoint of [own.endpoint, site.endpoint]) {
      for (const [i, text] of texts.entries()) {
        await ctx.db.execute(sql`insert into webhook_deliveries (endpoint_id, message_id, seq, event_type, subject, body, status, last_error)
          values (${endpoint.id}, ${`msg_old_${endpoint.id}_${i}`}, ${i + 1}, 'image.uploaded', 'image:x', '{}', 'failed', ${text})`);
      }
    }
    const file = readFileSync(join(import.meta.dir, "..", "..", "drizzle", "0014_webhook_fairness.sql"), "utf8");
    const update = file.split("--> statement-breakpoint").find((s) => s.includes('UPDATE "webhook_deliveries"'))!;
    await ctx.db.execute(sql.raw(update));
    expect((await deliveries(own.endpoint.id)).map((d) => d.last_error)).toEqual([
      "answered 500",
      "answered 307 (a redirect, not followed)",
      "refused: the address is private or internal; webhooks can only be sent to public addresses",
      "refused: the address is private or internal; webhooks can only be sent to public addresses",
      "failed: connected to another address than the one checked",
      "failed: timed out after 10 s",
      "not sent: the endpoint was switched off",
    ]);
    expect((await deliveries(site.endpoint.id)).map((d) => d.last_error)).toEqual(texts);
  });
});

describe("switching an endpoint off and on", () => {
  test("the page: events while off are kept as not sent; switching on sends them (checked by default), or not; 'send again since' any time", async () => {
    const { user, visitor } = await member();
    const r = receiver();
    const made = await userEndpoint(visitor, r.url);
    const page = `/user/webhooks/${made.id}`;
    expect(location(await visitor.post(`${page}/disable`))).toBe(`${page}?done=disabled`);
    await upload(user.token);
    await upload(user.token);
    const off = await deliveries(made.id);
    expect(off.map((d) => [d.status, d.attempts, d.last_error])).toEqual([
      ["failed", 0, "not sent: the endpoint was switched off"],
      ["failed", 0, "not sent: the endpoint was switched off"],
    ]);
    await Bun.sleep(300);
    expect(r.got).toEqual([]);

    // the page offers to send them, checked by default, from the switch-off
    const html = await (await visitor.get(page)).text();
    expect(html).toContain("not sent: the endpoint was switched off");
    expect(html).toMatch(/<input type="checkbox" id="resend-missed" name="resend" value="1" checked/);
    const since = /id="resend-missed-since" name="since" type="datetime-local" value="([^"]+)"/.exec(html)?.[1];
    expect(since).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/);
    expect(html).not.toContain(`action="/user/webhooks/${made.id}/resend-failed"`); // off: nothing to send it to

    const on = await visitor.post(`${page}/enable`, { resend: "1", since: since! });
    expect([on.status, location(on)]).toEqual([303, `${page}?done=enabled-resent&n=2`]);
    expect(await (await visitor.get(location(on)!)).text()).toContain("2 failed deliveries are sent again");
    await until("the two missed events", () => r.got.length >= 2);
    expect(r.got.map((g) => g.id).sort()).toEqual(off.map((d) => d.message_id).sort()); // the same webhook-ids
    await until("both recorded as delivered", async () => (await deliveries(made.id)).every((d) => d.status === "delivered"));

    // off again, then on without them: nothing from the past is sent
    await visitor.post(`${page}/disable`);
    await upload(user.token);
    expect(location(await visitor.post(`${page}/enable`, {}))).toBe(`${page}?done=enabled`);
    await Bun.sleep(300);
    expect(r.got).toHaveLength(2);
    // … until asked, from the delivery log's form
    const log = await (await visitor.get(page)).text();
    expect(log).toContain(`action="${page}/resend-failed"`);
    const again = await visitor.post(`${page}/resend-failed`, { since: "2000-01-01T00:00" });
    expect(location(again)).toBe(`${page}?done=resent-failed&n=1`);
    await until("the third event", () => r.got.length >= 3);
    // a time that does not read is refused, and so is sending while off
    expect((await visitor.post(`${page}/resend-failed`, { since: "yesterday" })).status).toBe(400);
    await visitor.post(`${page}/disable`);
    expect((await visitor.post(`${page}/resend-failed`, { since: "2000-01-01T00:00" })).status).toBe(400);
    expect((await visitor.post(`${page}/enable`, { resend: "1", since: "" })).status).toBe(400);
  });

  test("the admin API: PATCH enabled sends nothing by itself; resend-failed sends the failed since a time; refused while off", async () => {
    const { user } = await member();
    const r = receiver();
    const site = expectStatus(await api("POST", "/api/admin/webhooks", { url: r.url, events: ["image.uploaded"] }), 200).data;
    const off = expectStatus(await api("PATCH", `/api/admin/webhooks/${site.id}`, { enabled: false }), 200).data;
    await upload(user.token);
    const [missed] = await deliveries(site.id);
    expect(missed).toMatchObject({ status: "failed", attempts: 0, last_error: "not sent: the endpoint was switched off" });
    const whileOff = await api("POST", `/api/admin/webhooks/${site.id}/resend-failed`, { since: off.disabled_at });
    expectStatus(whileOff, 400);
    expect(whileOff.body.message).toContain("switch it on first");
    expectStatus(await api("PATCH", `/api/admin/webhooks/${site.id}`, { enabled: true }), 200);
    await Bun.sleep(300);
    expect(r.got).toEqual([]);
    expectStatus(await api("POST", `/api/admin/webhooks/${site.id}/resend-failed`, { since: "yesterday" }), 422);
    expectStatus(await api("POST", `/api/admin/webhooks/999999/resend-failed`, { since: off.disabled_at }), 404);
    // a time after the event: nothing
    expect(expectStatus(await api("POST", `/api/admin/webhooks/${site.id}/resend-failed`, { since: "2999-01-01T00:00:00Z" }), 200).data).toEqual({ queued: 0 });
    const sent = expectStatus(await api("POST", `/api/admin/webhooks/${site.id}/resend-failed`, { since: off.disabled_at }), 200).data;
    expect(sent).toEqual({ queued: 1 });
    await until("the missed event", () => r.got.length >= 1);
    expect(r.got[0]!.id).toBe(missed!.message_id);
    // a user's endpoint is not the site's: 404
    const mine = await createEndpoint(ctx.deps, { ownerId: user.id }, { url: "https://93.184.216.34/x", events: ["image.uploaded"] });
    expectStatus(await api("POST", `/api/admin/webhooks/${mine.endpoint.id}/resend-failed`, { since: off.disabled_at }), 404);
  });

  test("the admin page switches a site-wide endpoint on with what it missed, through the admin API", async () => {
    const { user } = await member();
    const { visitor } = await member(ctx.defaultGroupId, "admin");
    const r = receiver();
    const site = expectStatus(await api("POST", "/api/admin/webhooks", { url: r.url, events: ["image.uploaded"] }), 200).data;
    const page = `/user/admin/webhooks/${site.id}`;
    await visitor.post(`${page}/disable`);
    await upload(user.token);
    const html = await (await visitor.get(page)).text();
    const since = /id="resend-missed-since" name="since" type="datetime-local" value="([^"]+)"/.exec(html)?.[1];
    const on = await visitor.post(`${page}/enable`, { resend: "1", since: since! });
    expect(location(on)).toBe(`${page}?done=enabled-resent&n=1`);
    await until("the missed event", () => r.got.length >= 1);
    const audit = (await ctx.admin("GET", "/api/admin/audit-log?limit=5")).entries as { action: string }[];
    expect(audit.map((e) => e.action)).toContain("POST /api/admin/webhooks/{id}/resend-failed");
  });
});
