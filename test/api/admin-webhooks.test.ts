/**
 * The site-wide webhook endpoints through the admin API: making them (the secret shown once, stored sealed),
 * reading them (never the secret), the URL and event rules, the cap under concurrency, switching on and off, rotation,
 * test events, the delivery log and resending, the audit log, and a user's endpoints seen by an administrator.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { auditLog, webhookDeliveries, webhookEndpoints } from "../../src/db/schema.ts";
import { createEndpoint, SITE_ENDPOINTS_MAX } from "../../src/services/webhooks.ts";
import { parseAllowList } from "../../src/webhooks/address-guard.ts";
import { secretBox } from "../../src/webhooks/secret-box.ts";
import { ADMIN_TOKEN, createTestContext, type TestContext } from "../support/harness.ts";
import { expectStatus } from "../support/status.ts";

setDefaultTimeout(60_000);

const box = secretBox(randomBytes(32));
let ctx: TestContext; // WEBHOOK_ALLOW=127.0.0.1
let strict: TestContext; // no allow list: 127.0.0.1 is refused
beforeAll(async () => {
  [ctx, strict] = await Promise.all([createTestContext({ webhooks: { box, allow: parseAllowList("127.0.0.1") } }), createTestContext()]);
  // WEBHOOK_ALLOW opens loopback to users' endpoints only by their group's grant
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { webhook_allow_internal: true });
});
afterAll(async () => {
  await Promise.all([ctx?.close(), strict?.close()]);
});

const HOOK = "http://127.0.0.1:9/hook";
const call = (c: TestContext, method: string, path: string, body?: unknown, token: string | null = ADMIN_TOKEN) =>
  c.json(path, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
const api = (method: string, path: string, body?: unknown, token?: string | null) => call(ctx, method, path, body, token);

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const DATE = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

async function create(body: Record<string, unknown> = {}) {
  const res = await api("POST", "/api/admin/webhooks", { url: HOOK, events: ["image.uploaded"], ...body });
  expectStatus(res, 200);
  return res.body.data as Record<string, any>;
}
const row = async (id: number) => (await ctx.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id)))[0]!;
const removeAllSite = () => ctx.db.execute(sql`delete from webhook_endpoints where owner_id is null`);

describe("making a site-wide endpoint", () => {
  test("the answer carries every field and the secret once; the row keeps it sealed, not in clear", async () => {
    const res = await api("POST", "/api/admin/webhooks", {
      url: HOOK,
      description: "CDN purge",
      events: ["image.deleted", "image.uploaded", "image.deleted"],
    });
    expectStatus(res, 200);
    expect(res.body.status).toBe(true);
    expect(res.body.message).toBe("success");
    const e = res.body.data;
    expect(Object.keys(e).sort()).toEqual(
      ["created_at", "description", "disabled_at", "disabled_reason", "enabled", "events", "failing_since", "id", "owner_id", "secret", "url"].sort(),
    );
    expect(e).toMatchObject({
      url: HOOK,
      description: "CDN purge",
      events: ["image.uploaded", "image.deleted"], // in the canonical order, once each
      enabled: true,
      disabled_reason: null,
      disabled_at: null,
      failing_since: null,
      owner_id: null,
    });
    expect(e.id).toBeGreaterThan(0);
    expect(e.created_at).toMatch(DATE);
    expect(e.secret).toMatch(SECRET);
    expect(Buffer.from(e.secret.slice(6), "base64").length).toBe(32);

    const stored = await row(e.id);
    expect(stored.ownerId).toBeNull();
    expect(stored.url).toBe(HOOK);
    expect(stored.events).toEqual(["image.uploaded", "image.deleted"]);
    expect(stored.secretSealed).not.toContain(e.secret);
    expect(stored.secretSealed).not.toContain(e.secret.slice(6));
    expect(box.open(stored.secretSealed)).toBe(e.secret);
  });

  test("list and show never carry the secret, nor anything sealed", async () => {
    const made = await create({ description: "listed" });
    const list = await api("GET", "/api/admin/webhooks");
    expectStatus(list, 200);
    const found = list.body.data.endpoints.find((x: any) => x.id === made.id);
    const { secret, ...withoutSecret } = made;
    expect(found).toEqual(withoutSecret);
    expect(list.body.data.endpoints.every((x: any) => x.owner_id === null)).toBe(true);
    const shown = await api("GET", `/api/admin/webhooks/${made.id}`);
    expectStatus(shown, 200);
    expect(shown.body.data).toEqual(withoutSecret);
    const sealed = (await row(made.id)).secretSealed;
    for (const text of [JSON.stringify(list.body), JSON.stringify(shown.body)]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(sealed);
      expect(text).not.toContain("whsec_");
      expect(text).not.toContain("secret");
    }
  });

  test("a user's endpoints are listed with ?user_id, and are not reachable by the site-wide operations", async () => {
    const user = await ctx.createUser();
    const { endpoint } = await createEndpoint(ctx.deps, { ownerId: user.id }, { url: HOOK, events: ["token.revoked"] });
    const listed = await api("GET", `/api/admin/webhooks?user_id=${user.id}`);
    expectStatus(listed, 200);
    expect(listed.body.data.endpoints).toHaveLength(1);
    expect(listed.body.data.endpoints[0]).toMatchObject({ id: endpoint.id, owner_id: user.id, events: ["token.revoked"] });
    expect((await api("GET", "/api/admin/webhooks")).body.data.endpoints.map((x: any) => x.id)).not.toContain(endpoint.id);
    expectStatus(await api("GET", `/api/admin/webhooks?user_id=99999999`), 404);
    expectStatus(await api("GET", `/api/admin/webhooks?user_id=0`), 422);
    for (const [method, suffix, body] of [
      ["GET", "", undefined],
      ["PATCH", "", { enabled: false }],
      ["DELETE", "", undefined],
      ["POST", "/secret", undefined],
      ["POST", "/test", undefined],
      ["GET", "/deliveries", undefined],
    ] as const) {
      const res = await api(method, `/api/admin/webhooks/${endpoint.id}${suffix}`, body);
      expectStatus(res, 404);
      expect(res.body.message).toBe("Webhook endpoint not found.");
    }
    expect(await row(endpoint.id)).toMatchObject({ enabled: true, ownerId: user.id });
  });
});

describe("what is refused", () => {
  const refused = async (c: TestContext, body: unknown, field: string, message: RegExp) => {
    const res = await call(c, "POST", "/api/admin/webhooks", body);
    expectStatus(res, 422);
    expect(res.body.status).toBe(false);
    expect(Object.keys(res.body.errors)).toContain(field);
    expect(res.body.errors[field].join(" ")).toMatch(message);
    return res;
  };
  test("bad schemes, credentials, loopback without WEBHOOK_ALLOW, unknown and empty events, a long description", async () => {
    const before = (await strict.db.select().from(webhookEndpoints)).length;
    await refused(strict, { url: "ftp://hooks.example.com/x", events: ["image.uploaded"] }, "url", /scheme ftp: is not allowed/);
    await refused(strict, { url: "javascript:alert(1)", events: ["image.uploaded"] }, "url", /scheme javascript: is not allowed/);
    await refused(strict, { url: "https://user:pass@93.184.216.34/x", events: ["image.uploaded"] }, "url", /must not contain a user name or password/);
    // private or internal: one wording, which never says what the address is (nor, for a name, what it resolved to)
    for (const url of ["http://127.0.0.1:9/hook", "http://169.254.169.254/latest", "http://169.254.1.1/x", "http://10.0.0.5/x", "http://[::1]/x"]) {
      const res = await refused(strict, { url, events: ["image.uploaded"] }, "url", /./);
      expect(res.body.errors.url).toEqual(["This address is private or internal; webhooks can only be sent to public addresses."]);
    }
    await refused(strict, { url: HOOK, events: ["image.exploded"] }, "events.0", /image\.uploaded/);
    await refused(strict, { url: HOOK, events: [] }, "events", /./);
    await refused(strict, { url: HOOK }, "events", /./);
    await refused(strict, { events: ["image.uploaded"] }, "url", /./);
    await refused(strict, { url: "https://93.184.216.34/x", events: ["image.uploaded"], description: "d".repeat(201) }, "description", /200/);
    expect((await strict.db.select().from(webhookEndpoints)).length).toBe(before);
    // a public address literal needs no DNS: accepted
    expectStatus(await call(strict, "POST", "/api/admin/webhooks", { url: "https://93.184.216.34/x", events: ["image.uploaded"] }), 200);
  });

  test("PATCH checks a new URL the same way and changes nothing when refused", async () => {
    const made = (await call(strict, "POST", "/api/admin/webhooks", { url: "https://93.184.216.34/y", events: ["user.disabled"] })).body.data;
    const res = await call(strict, "PATCH", `/api/admin/webhooks/${made.id}`, { url: "http://127.0.0.1/x", description: "changed" });
    expectStatus(res, 422);
    expect(res.body.errors.url[0]).toBe("This address is private or internal; webhooks can only be sent to public addresses.");
    const [stored] = await strict.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, made.id));
    expect(stored).toMatchObject({ url: "https://93.184.216.34/y", description: "" });
    expectStatus(await call(strict, "PATCH", `/api/admin/webhooks/${made.id}`, { events: [] }), 422);
    expectStatus(await call(strict, "PATCH", `/api/admin/webhooks/${made.id}`, { enabled: "yes" }), 422);
  });

  test("without the admin token: 401, nothing made", async () => {
    const before = (await ctx.db.select().from(webhookEndpoints)).length;
    for (const token of [null, "wrong-token"]) {
      const res = await api("POST", "/api/admin/webhooks", { url: HOOK, events: ["image.uploaded"] }, token);
      expectStatus(res, 401);
      expect(res.body).toMatchObject({ status: false, data: null });
      expectStatus(await api("GET", "/api/admin/webhooks", undefined, token), 401);
    }
    expect((await ctx.db.select().from(webhookEndpoints)).length).toBe(before);
  });

  test("missing ids are 404, malformed ones 422", async () => {
    expectStatus(await api("GET", "/api/admin/webhooks/99999999"), 404);
    expectStatus(await api("DELETE", "/api/admin/webhooks/99999999"), 404);
    expectStatus(await api("GET", "/api/admin/webhooks/abc"), 422);
    expectStatus(await api("POST", "/api/admin/webhooks/0/secret"), 422);
  });
});

describe("the cap", () => {
  test(`25 creates at once: exactly ${SITE_ENDPOINTS_MAX} succeed, the rest are 400`, async () => {
    await removeAllSite();
    const answers = await Promise.all(
      Array.from({ length: 25 }, (_, i) => api("POST", "/api/admin/webhooks", { url: `${HOOK}/${i}`, events: ["image.uploaded"] })),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(SITE_ENDPOINTS_MAX);
    expect(statuses.filter((s) => s === 400)).toHaveLength(25 - SITE_ENDPOINTS_MAX);
    const refusedOne = answers.find((a) => a.status === 400)!;
    expect(refusedOne.body.message).toBe(`The site may have at most ${SITE_ENDPOINTS_MAX} webhook endpoints; delete one first.`);
    const [{ n }] = (await ctx.db.select({ n: sql<number>`count(*)::int` }).from(webhookEndpoints).where(sql`owner_id is null`)) as [{ n: number }];
    expect(n).toBe(SITE_ENDPOINTS_MAX);
    // a user's endpoints do not count against the site's cap
    const user = await ctx.createUser();
    await createEndpoint(ctx.deps, { ownerId: user.id }, { url: HOOK, events: ["image.uploaded"] });
    // deleting one makes room for one
    const first = answers.find((a) => a.status === 200)!.body.data.id;
    const deleted = await api("DELETE", `/api/admin/webhooks/${first}`);
    expectStatus(deleted, 200);
    expect(deleted.body.data).toBeNull();
    expect(await ctx.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, first))).toEqual([]);
    await create();
    expectStatus(await api("POST", "/api/admin/webhooks", { url: HOOK, events: ["image.uploaded"] }), 400);
    await removeAllSite();
  });
});

describe("changing an endpoint", () => {
  test("PATCH changes the fields given; disabling records why; enabling clears disabled_reason, disabled_at and failing_since", async () => {
    const made = await create();
    const changed = await api("PATCH", `/api/admin/webhooks/${made.id}`, { url: `${HOOK}/2`, description: "new", events: ["user.disabled", "token.revoked"] });
    expectStatus(changed, 200);
    expect(changed.body.data).toMatchObject({ id: made.id, url: `${HOOK}/2`, description: "new", events: ["token.revoked", "user.disabled"], enabled: true });

    const off = await api("PATCH", `/api/admin/webhooks/${made.id}`, { enabled: false });
    expectStatus(off, 200);
    expect(off.body.data).toMatchObject({ enabled: false, disabled_reason: "switched off by its owner" });
    expect(off.body.data.disabled_at).toMatch(DATE);

    // as the sender leaves it after a day of failures
    const since = new Date(Date.now() - 25 * 3_600_000);
    await ctx.db
      .update(webhookEndpoints)
      .set({ enabled: false, disabledReason: `failing since ${since.toISOString()}`, disabledAt: new Date(), failingSince: since })
      .where(eq(webhookEndpoints.id, made.id));
    const failing = (await api("GET", `/api/admin/webhooks/${made.id}`)).body.data;
    expect(failing.failing_since).toMatch(DATE);
    expect(failing.disabled_reason).toBe(`failing since ${since.toISOString()}`);

    const on = await api("PATCH", `/api/admin/webhooks/${made.id}`, { enabled: true });
    expectStatus(on, 200);
    expect(on.body.data).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null, failing_since: null });
    expect(await row(made.id)).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null, failingSince: null, url: `${HOOK}/2` });
    // an empty change answers the endpoint as it is
    const same = await api("PATCH", `/api/admin/webhooks/${made.id}`, {});
    expectStatus(same, 200);
    expect(same.body.data).toEqual(on.body.data);
  });

  test("rotating answers a new secret once and re-seals; the old one no longer opens", async () => {
    const made = await create();
    const sealedBefore = (await row(made.id)).secretSealed;
    const res = await api("POST", `/api/admin/webhooks/${made.id}/secret`);
    expectStatus(res, 200);
    const { secret, ...rest } = res.body.data;
    const { secret: oldSecret, ...madeRest } = made;
    expect(rest).toEqual(madeRest);
    expect(secret).toMatch(SECRET);
    expect(secret).not.toBe(oldSecret);
    const sealedAfter = (await row(made.id)).secretSealed;
    expect(sealedAfter).not.toBe(sealedBefore);
    expect(sealedAfter).not.toContain(secret.slice(6));
    expect(box.open(sealedAfter)).toBe(secret);
    expectStatus(await api("POST", "/api/admin/webhooks/99999999/secret"), 404);
  });
});

describe("test events, the delivery log, resending", () => {
  test("a test event makes one pending webhook.test delivery for this endpoint only", async () => {
    const made = await create();
    const other = await create({ events: ["image.uploaded", "image.deleted", "image.expired", "token.revoked", "user.disabled"] });
    const res = await api("POST", `/api/admin/webhooks/${made.id}/test`);
    expectStatus(res, 200);
    const deliveryId = res.body.data.delivery_id;
    expect(Number.isInteger(deliveryId)).toBe(true);
    const rows = await ctx.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId));
    expect(rows).toHaveLength(1);
    const d = rows[0]!;
    expect(d).toMatchObject({ endpointId: made.id, eventType: "webhook.test", status: "pending", attempts: 0, subject: `test:${made.id}` });
    expect(d.messageId).toMatch(/^msg_[0-9a-f]{32}$/);
    const body = JSON.parse(d.body);
    expect(Object.keys(body)).toEqual(["type", "timestamp", "data"]);
    expect(body.type).toBe("webhook.test");
    expect(body.data.endpoint_id).toBe(made.id);
    expect(await ctx.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, other.id))).toEqual([]);
    // a job was queued for it
    const jobs = await ctx.db.execute(sql`select 1 from graphile_worker.jobs where key = ${`webhook-delivery:${deliveryId}`}`);
    expect((Array.isArray(jobs) ? jobs : (jobs as any).rows).length).toBe(1);
    expectStatus(await api("POST", "/api/admin/webhooks/99999999/test"), 404);
  });

  test("the log lists deliveries newest first, 50 a page, with every field; resend is 404 while pending, 200 after", async () => {
    const made = await create();
    const ids: number[] = [];
    for (let i = 0; i < 52; i++) ids.push((await api("POST", `/api/admin/webhooks/${made.id}/test`)).body.data.delivery_id);
    const page1 = await api("GET", `/api/admin/webhooks/${made.id}/deliveries`);
    expectStatus(page1, 200);
    const list = page1.body.data.deliveries;
    expect(list).toHaveLength(50);
    expect(list.map((d: any) => d.id)).toEqual([...ids].reverse().slice(0, 50));
    expect(page1.body.data.next_before).toBe(list[49].id);
    const newest = list[0];
    expect(Object.keys(newest).sort()).toEqual(
      [
        "attempts",
        "created_at",
        "delivered_at",
        "event_type",
        "id",
        "last_attempt_at",
        "last_error",
        "last_latency_ms",
        "last_status_code",
        "message_id",
        "next_attempt_at",
        "status",
      ].sort(),
    );
    expect(newest).toMatchObject({
      id: ids[51],
      event_type: "webhook.test",
      status: "pending",
      attempts: 0,
      last_status_code: null,
      last_latency_ms: null,
      last_error: null,
      last_attempt_at: null,
      delivered_at: null,
    });
    expect(newest.message_id).toMatch(/^msg_/);
    expect(newest.created_at).toMatch(DATE);
    expect(newest.next_attempt_at).toMatch(DATE);
    const page2 = await api("GET", `/api/admin/webhooks/${made.id}/deliveries?before=${page1.body.data.next_before}`);
    expectStatus(page2, 200);
    expect(page2.body.data.deliveries.map((d: any) => d.id)).toEqual([ids[1], ids[0]]);
    expect(page2.body.data.next_before).toBeNull();
    expectStatus(await api("GET", `/api/admin/webhooks/${made.id}/deliveries?before=0`), 422);
    expectStatus(await api("GET", "/api/admin/webhooks/99999999/deliveries"), 404);

    // pending: not resent
    const target = ids[0]!;
    const pending = await api("POST", `/api/admin/webhooks/${made.id}/deliveries/${target}/resend`);
    expectStatus(pending, 404);
    expect(pending.body.message).toMatch(/still pending/);
    // no such delivery (or another endpoint's)
    const missing = await api("POST", `/api/admin/webhooks/${made.id}/deliveries/999999999/resend`);
    expectStatus(missing, 404);
    expect(missing.body.message).toBe("Delivery not found.");
    const other = await create();
    expect((await api("POST", `/api/admin/webhooks/${other.id}/deliveries/${target}/resend`)).body.message).toBe("Delivery not found.");
    expectStatus(await api("POST", `/api/admin/webhooks/${made.id}/deliveries/abc/resend`), 422);

    // failed, as the sender leaves it: resent, pending again and queued
    await ctx.db
      .update(webhookDeliveries)
      .set({ status: "failed", attempts: 8, nextAttemptAt: null, lastError: "answered 500", lastStatusCode: 500 })
      .where(eq(webhookDeliveries.id, target));
    const failed = (await api("GET", `/api/admin/webhooks/${made.id}/deliveries?before=${ids[1]}`)).body.data.deliveries[0];
    expect(failed).toMatchObject({ id: target, status: "failed", attempts: 8, last_status_code: 500, last_error: "answered 500", next_attempt_at: null });
    const resent = await api("POST", `/api/admin/webhooks/${made.id}/deliveries/${target}/resend`);
    expectStatus(resent, 200);
    expect(resent.body.data).toBeNull();
    const [again] = await ctx.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, target));
    expect(again!.status).toBe("pending");
    expect(again!.nextAttemptAt).not.toBeNull();
    expectStatus(await api("POST", `/api/admin/webhooks/${made.id}/deliveries/${target}/resend`), 404);
  });

  test("deleting an endpoint deletes its delivery log", async () => {
    const made = await create();
    await api("POST", `/api/admin/webhooks/${made.id}/test`);
    expectStatus(await api("DELETE", `/api/admin/webhooks/${made.id}`), 200);
    expect(await ctx.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, made.id))).toEqual([]);
    expectStatus(await api("GET", `/api/admin/webhooks/${made.id}`), 404);
  });
});

describe("the audit log", () => {
  test("every change is logged with its route and target; the secret never appears; reads are not logged", async () => {
    const [{ startId }] = (await ctx.db.select({ startId: sql<number>`coalesce(max(${auditLog.id}), 0)::int` }).from(auditLog)) as [{ startId: number }];
    const made = await create({ description: "audited" });
    await api("GET", `/api/admin/webhooks/${made.id}`);
    await api("GET", "/api/admin/webhooks");
    await api("PATCH", `/api/admin/webhooks/${made.id}`, { enabled: false });
    const rotated = (await api("POST", `/api/admin/webhooks/${made.id}/secret`)).body.data.secret;
    const deliveryId = (await api("POST", `/api/admin/webhooks/${made.id}/test`)).body.data.delivery_id;
    await ctx.db.update(webhookDeliveries).set({ status: "failed" }).where(eq(webhookDeliveries.id, deliveryId));
    expectStatus(await api("POST", `/api/admin/webhooks/${made.id}/deliveries/${deliveryId}/resend`), 200);
    expectStatus(await api("PATCH", `/api/admin/webhooks/${made.id}`, { url: "ftp://x" }), 422); // refused: not logged
    await api("DELETE", `/api/admin/webhooks/${made.id}`);

    const rows = (await ctx.db.select().from(auditLog).where(sql`${auditLog.id} > ${startId}`).orderBy(auditLog.id)).filter((r) => r.targetType === "webhooks");
    expect(rows.map((r) => [r.action, r.targetId])).toEqual([
      ["POST /api/admin/webhooks", ""],
      ["PATCH /api/admin/webhooks/{id}", String(made.id)],
      ["POST /api/admin/webhooks/{id}/secret", String(made.id)],
      ["POST /api/admin/webhooks/{id}/test", String(made.id)],
      ["POST /api/admin/webhooks/{id}/deliveries/{delivery_id}/resend", String(made.id)],
      ["DELETE /api/admin/webhooks/{id}", String(made.id)],
    ]);
    expect(rows.every((r) => r.actor === "ADMIN_TOKEN")).toBe(true);
    expect(rows[0]!.detail).toEqual({ url: HOOK, events: ["image.uploaded"], description: "audited" });
    expect(rows[1]!.detail).toEqual({ enabled: false });
    const everything = JSON.stringify(await ctx.db.select().from(auditLog));
    for (const s of [made.secret, rotated, made.secret.slice(6), rotated.slice(6)]) expect(everything).not.toContain(s);
    expect(everything).not.toContain("whsec_");
  });
});
