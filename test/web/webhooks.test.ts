/**
 * The webhook pages, in-process — the user center's /user/webhooks (the account's own endpoints) and the
 * admin page /user/admin/webhooks (the site-wide ones). The secret shown once; the service's refusals as field errors;
 * the cap; edit, switch off and on, rotate, test event, the delivery log with its pages and "Send again", delete; another
 * account's endpoint is a 404; cross-site posts and signed-out visitors refused; the admin page for administrators
 * only, reading and changing through the admin API in-process, so its changes are in the audit log as the API's. No
 * delivery is attempted here (no queue worker runs): the rows are checked.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { and, desc, eq, gt, isNull, sql } from "drizzle-orm";
import { auditLog, webhookDeliveries, webhookEndpoints } from "../../src/db/schema.ts";
import { ENDPOINTS_PER_ACCOUNT } from "../../src/services/webhooks.ts";
import { parseAllowList } from "../../src/webhooks/address-guard.ts";
import { secretBox } from "../../src/webhooks/secret-box.ts";
import { createTestContext, type TestContext } from "../support/harness.ts";
import { visitorClass } from "../support/visitor.ts";

setDefaultTimeout(60_000);

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ webhooks: { box: secretBox(randomBytes(32)), allow: parseAllowList("127.0.0.1") } });
  // WEBHOOK_ALLOW opens loopback to users' endpoints only by their group's grant
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { webhook_allow_internal: true });
});
afterAll(() => ctx?.close());

const PASSWORD = "correct horse battery";
const RECEIVER = "http://127.0.0.1:9/hook";
let seq = 0;
let addressSeq = 0;
const Visitor = visitorClass(
  () => ctx,
  () => `198.51.100.${++addressSeq}`,
);
const location = (res: Response) => res.headers.get("location");
const secretIn = (html: string) =>
  /data-testid="webhook-secret"|id="webhook-secret"/.test(html) ? /id="webhook-secret" type="text" readonly="" value="([^"]+)"/.exec(html)?.[1] : undefined;

async function signedIn(role: "admin" | "user" = "user") {
  const username = `wh${++seq}_${Math.random().toString(36).slice(2, 6)}`;
  const user = await ctx.createUser({ username, email: `${username}@example.com`, password: PASSWORD, role });
  const visitor = new Visitor();
  expect((await visitor.signIn(username)).status).toBe(303);
  return { user: { ...user, username }, visitor };
}

const endpointsOf = (ownerId: number) => ctx.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.ownerId, ownerId)).orderBy(webhookEndpoints.id);
const events = (...names: string[]) => Object.fromEntries(names.map((n) => [`event_${n}`, "1"]));

async function addEndpoint(visitor: InstanceType<typeof Visitor>, fields: Record<string, string> = {}, base = "/user/webhooks") {
  const res = await visitor.post(base, { url: RECEIVER, description: "my receiver", ...events("image.uploaded", "image.deleted"), ...fields });
  return { res, html: await res.text() };
}

async function insertDeliveries(endpointId: number, n: number, status: "pending" | "delivered" | "failed" = "delivered") {
  const rows = Array.from({ length: n }, (_, i) => ({
    endpointId,
    messageId: `msg_test_${endpointId}_${i}_${Math.random().toString(36).slice(2)}`,
    seq: i + 1,
    eventType: "image.uploaded",
    subject: `image:${i}`,
    body: "{}",
    status,
    attempts: status === "pending" ? 0 : 1,
    lastStatusCode: status === "delivered" ? 200 : status === "failed" ? 500 : null,
    lastLatencyMs: status === "pending" ? null : 12 + i,
    lastError: status === "failed" ? `answered 500: ${"x".repeat(300)}` : null,
    lastAttemptAt: status === "pending" ? null : new Date(),
  }));
  return ctx.db.insert(webhookDeliveries).values(rows).returning({ id: webhookDeliveries.id });
}

describe("user center: /user/webhooks", () => {
  test("signed out: redirected to sign in; the nav links the page", async () => {
    const anonymous = new Visitor();
    const res = await anonymous.get("/user/webhooks");
    expect([res.status, location(res)]).toEqual([303, "/user/login?next=%2Fuser%2Fwebhooks"]);
    const post = await anonymous.post("/user/webhooks", { url: RECEIVER, ...events("image.uploaded") }, { formToken: null });
    expect(post.status).toBe(303);
    expect(location(post)).toBe("/user/login");

    const { visitor } = await signedIn();
    const page = await visitor.get("/user/webhooks");
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<a href="/user/webhooks" aria-current="page">Webhooks</a>');
    expect(html).toContain("No endpoints yet.");
    // the user's page offers the events about their own images and tokens, never user.disabled
    for (const e of ["image.uploaded", "image.deleted", "image.expired", "token.revoked"]) expect(html).toContain(`name="event_${e}"`);
    expect(html).not.toContain("event_user.disabled");
    expect(html).toContain("<legend>Events</legend>");
  });

  test("create shows the secret once, the list afterwards never; the endpoint stored with its events", async () => {
    const { user, visitor } = await signedIn();
    const { res, html } = await addEndpoint(visitor);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const secret = secretIn(html);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    expect(html).toContain("it will not be shown again");
    expect(html).toContain("docs/webhooks.md shows how, and what each event holds");
    const [row] = await endpointsOf(user.id);
    expect(row).toMatchObject({ url: RECEIVER, description: "my receiver", events: ["image.uploaded", "image.deleted"], enabled: true });
    expect(row!.secretSealed).not.toContain(secret!.slice(6));

    const list = await (await visitor.get("/user/webhooks")).text();
    expect(list).not.toContain(secret!);
    expect(list).not.toContain("webhook-secret");
    expect(list).toContain(`<a href="/user/webhooks/${row!.id}">${RECEIVER}</a>`);
    expect(list).toContain("my receiver");
    expect(list).toContain("image.uploaded, image.deleted");
    expect(list).toContain(">Enabled<");
    const detail = await (await visitor.get(`/user/webhooks/${row!.id}`)).text();
    expect(detail).not.toContain(secret!);
  });

  test("the service's refusals are field errors on the page (422), nothing made", async () => {
    const { user, visitor } = await signedIn();
    const cases: [Record<string, string>, string, string][] = [
      [{ url: "not a url" }, "url", "The URL must not contain"],
      [{ url: "ftp://example.com/x" }, "url", "The scheme ftp: is not allowed"],
      [{ url: "http://10.0.0.1/hook" }, "url", "This address is private or internal; webhooks can only be sent to public addresses."],
      [{ description: "d".repeat(201) }, "description", "at most 200"],
    ];
    for (const [fields, field, message] of cases) {
      const { res, html } = await addEndpoint(visitor, fields);
      expect(res.status, JSON.stringify(fields)).toBe(422);
      expect(html).toContain(`id="new-${field}-error"`);
      expect(html).toContain(message);
      expect(html).toMatch(new RegExp(`id="new-${field}"[^>]*aria-invalid="true"`));
    }
    // no events
    const none = await visitor.post("/user/webhooks", { url: RECEIVER });
    expect(none.status).toBe(422);
    const noneHtml = await none.text();
    expect(noneHtml).toContain("Choose at least one event.");
    expect(noneHtml).toContain('id="new-events-error"');
    // the value typed is kept
    expect(noneHtml).toContain(`value="${RECEIVER}"`);
    // a user cannot ask for user.disabled: the box is not there, and a forged field is ignored (so: no events)
    expect((await visitor.post("/user/webhooks", { url: RECEIVER, ...events("user.disabled") })).status).toBe(422);
    expect(await endpointsOf(user.id)).toEqual([]);
  });

  test("loopback is refused without an allow list", async () => {
    const other = await createTestContext();
    try {
      const OtherVisitor = visitorClass(
        () => other,
        () => `198.51.100.${++addressSeq}`,
      );
      const username = `whl_${Math.random().toString(36).slice(2, 8)}`;
      await other.createUser({ username, email: `${username}@example.com`, password: PASSWORD });
      const visitor = new OtherVisitor();
      await visitor.signIn(username);
      const res = await visitor.post("/user/webhooks", { url: "http://127.0.0.1:8080/hook", ...events("image.uploaded") });
      expect(res.status).toBe(422);
      const html = await res.text();
      expect(html).toContain('id="new-url-error"');
      expect(html).toContain("This address is private or internal; webhooks can only be sent to public addresses.");
      expect(html).not.toContain("loopback");
    } finally {
      await other.close();
    }
  });

  test(`at most ${ENDPOINTS_PER_ACCOUNT} endpoints an account`, async () => {
    const { user, visitor } = await signedIn();
    for (let i = 0; i < ENDPOINTS_PER_ACCOUNT; i++) expect((await addEndpoint(visitor, { description: `n${i}` })).res.status).toBe(200);
    const { res, html } = await addEndpoint(visitor, { description: "one too many" });
    expect(res.status).toBe(400);
    expect(html).toContain(`at most ${ENDPOINTS_PER_ACCOUNT} webhook endpoints`);
    expect((await endpointsOf(user.id)).length).toBe(ENDPOINTS_PER_ACCOUNT);
    // the page says the list is full instead of offering the form
    const list = await (await visitor.get("/user/webhooks")).text();
    expect(list).toContain(`There are ${ENDPOINTS_PER_ACCOUNT} endpoints, the most allowed`);
    expect(list).not.toContain('name="url"');
  });

  test("edit; switch off and on; the status says why it is disabled or since when it fails", async () => {
    const { user, visitor } = await signedIn();
    await addEndpoint(visitor);
    const [row] = await endpointsOf(user.id);
    const page = `/user/webhooks/${row!.id}`;

    const saved = await visitor.post(page, { url: "http://127.0.0.1:10/other", description: "renamed", ...events("token.revoked", "image.expired") });
    expect([saved.status, location(saved)]).toEqual([303, `${page}?done=saved`]);
    expect((await endpointsOf(user.id))[0]).toMatchObject({
      url: "http://127.0.0.1:10/other",
      description: "renamed",
      events: ["image.expired", "token.revoked"],
    });
    expect(await (await visitor.get(`${page}?done=saved`)).text()).toContain("Changes saved.");

    const bad = await visitor.post(page, { url: "http://10.1.2.3/", description: "x" });
    expect(bad.status).toBe(422);
    const badHtml = await bad.text();
    expect(badHtml).toContain('id="edit-url-error"');
    expect((await endpointsOf(user.id))[0]!.url).toBe("http://127.0.0.1:10/other");

    const off = await visitor.post(`${page}/disable`);
    expect([off.status, location(off)]).toEqual([303, `${page}?done=disabled`]);
    expect((await endpointsOf(user.id))[0]).toMatchObject({ enabled: false, disabledReason: "switched off by its owner" });
    const offHtml = await (await visitor.get(page)).text();
    expect(offHtml).toContain("Disabled: switched off by its owner");
    expect(offHtml).toContain(">Switch on<");

    const on = await visitor.post(`${page}/enable`);
    expect([on.status, location(on)]).toEqual([303, `${page}?done=enabled`]);
    expect((await endpointsOf(user.id))[0]).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });

    // as the sender leaves it: answered 410, or failing
    const since = new Date("2026-01-02T03:04:00Z");
    await ctx.db
      .update(webhookEndpoints)
      .set({ enabled: false, disabledReason: "answered 410 Gone", disabledAt: since })
      .where(eq(webhookEndpoints.id, row!.id));
    const list = await (await visitor.get("/user/webhooks")).text();
    expect(list).toContain("Disabled: answered 410 Gone");
    expect(list).toContain("2026-01-02 03:04 UTC");
    await ctx.db
      .update(webhookEndpoints)
      .set({ enabled: true, disabledReason: null, disabledAt: null, failingSince: since })
      .where(eq(webhookEndpoints.id, row!.id));
    expect(await (await visitor.get(page)).text()).toMatch(/failing since <time datetime="2026-01-02T03:04:00.000Z">2026-01-02 03:04 UTC<\/time>/);
  });

  test("rotate shows a new secret once, different from the first", async () => {
    const { user, visitor } = await signedIn();
    const first = secretIn((await addEndpoint(visitor)).html)!;
    const [row] = await endpointsOf(user.id);
    const res = await visitor.post(`/user/webhooks/${row!.id}/rotate`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const html = await res.text();
    const second = secretIn(html)!;
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(first);
    expect(html).toContain("The old secret no longer signs anything.");
    expect((await endpointsOf(user.id))[0]!.secretSealed).not.toBe(row!.secretSealed);
    const again = await (await visitor.get(`/user/webhooks/${row!.id}`)).text();
    expect(again).not.toContain(second);
  });

  test("a test event makes a pending delivery; the log pages by 50; Send again; delete", async () => {
    const { user, visitor } = await signedIn();
    await addEndpoint(visitor);
    const [row] = await endpointsOf(user.id);
    const page = `/user/webhooks/${row!.id}`;
    expect(await (await visitor.get(page)).text()).toContain("Nothing sent yet.");

    const sent = await visitor.post(`${page}/test`);
    expect([sent.status, location(sent)]).toEqual([303, `${page}?done=test`]);
    const [testRow] = await ctx.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, row!.id));
    expect(testRow).toMatchObject({ eventType: "webhook.test", status: "pending", attempts: 0 });
    const jobs = (await ctx.db.execute(
      `select count(*)::int as n from graphile_worker.jobs where key = 'webhook-delivery:${testRow!.id}'` as never,
    )) as unknown as { n: number }[];
    expect(jobs[0]!.n).toBe(1);

    const failed = await insertDeliveries(row!.id, 60, "failed");
    const html = await (await visitor.get(page)).text();
    const shown = [...html.matchAll(/data-delivery="(\d+)"/g)].map((m) => Number(m[1]));
    expect(shown.length).toBe(50);
    expect(shown).toEqual([...shown].sort((a, b) => b - a)); // newest first
    expect(shown[0]).toBe(failed.at(-1)!.id);
    expect(html).toContain('<th scope="col">Latency (ms)</th>');
    expect(html).toContain(">failed<");
    expect(html).toContain("answered 500: xxx");
    // the error truncated on the page (the whole of it in the title)
    expect(/>answered 500: x+…<\/span>/.test(html)).toBe(true);
    expect(/>answered 500: x{200}/.test(html)).toBe(false);
    expect(html).toContain(">Send again<");
    const olderHref = /href="(\/user\/webhooks\/\d+\?before=\d+)" rel="next"/.exec(html)?.[1];
    expect(olderHref).toBe(`${page}?before=${shown.at(-1)}`);
    const older = await (await visitor.get(olderHref!)).text();
    const olderShown = [...older.matchAll(/data-delivery="(\d+)"/g)].map((m) => Number(m[1]));
    expect(olderShown.length).toBe(11); // 10 failed + the test event
    expect(olderShown.at(-1)).toBe(testRow!.id);
    expect(older).not.toContain('rel="next"');
    // a pending delivery has no "Send again"
    expect(older).not.toMatch(new RegExp(`deliveries/${testRow!.id}/resend`));

    const target = failed[0]!.id;
    const again = await visitor.post(`${page}/deliveries/${target}/resend`);
    expect([again.status, location(again)]).toEqual([303, `${page}?done=resent`]);
    const [resent] = await ctx.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, target));
    expect(resent!.status).toBe("pending");
    // pending already: nothing to send again
    expect((await visitor.post(`${page}/deliveries/${target}/resend`)).status).toBe(404);

    // without the page's script a delete asks first
    const ask = await visitor.post(`${page}/delete`, { confirmed: "0" });
    expect(ask.status).toBe(200);
    expect(await ask.text()).toContain("and its delivery log?");
    expect((await endpointsOf(user.id)).length).toBe(1);
    const deleted = await visitor.post(`${page}/delete`, { confirmed: "1" });
    expect([deleted.status, location(deleted)]).toEqual([303, "/user/webhooks?done=deleted"]);
    expect(await endpointsOf(user.id)).toEqual([]);
    expect(await ctx.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, row!.id))).toEqual([]);
    expect((await visitor.get(page)).status).toBe(404);
  });

  test("another account's endpoint is 404 for every page and post, and stays as it was", async () => {
    const owner = await signedIn();
    await addEndpoint(owner.visitor, { description: "owner's secret description" });
    const [row] = await endpointsOf(owner.user.id);
    const [delivery] = await insertDeliveries(row!.id, 1, "failed");
    const page = `/user/webhooks/${row!.id}`;
    const { visitor } = await signedIn();
    const get = await visitor.get(page);
    expect(get.status).toBe(404);
    const body = await get.text();
    expect(body).not.toContain("owner's secret description");
    expect(body).not.toContain(RECEIVER);
    for (const [path, fields] of [
      [page, { url: "http://127.0.0.1:11/x", ...events("image.uploaded") }],
      [`${page}/disable`, {}],
      [`${page}/enable`, {}],
      [`${page}/rotate`, {}],
      [`${page}/test`, {}],
      [`${page}/deliveries/${delivery!.id}/resend`, {}],
      [`${page}/delete`, { confirmed: "0" }],
      [`${page}/delete`, { confirmed: "1" }],
    ] as const) {
      const res = await visitor.post(path, fields);
      expect(res.status, path).toBe(404);
      expect(await res.text()).not.toContain(RECEIVER);
    }
    // a site-wide endpoint is not the user's either
    const [site] = await ctx.db
      .insert(webhookEndpoints)
      .values({ ownerId: null, url: RECEIVER, events: ["image.uploaded"], secretSealed: "x" })
      .returning();
    expect((await visitor.get(`/user/webhooks/${site!.id}`)).status).toBe(404);
    expect((await visitor.get("/user/webhooks/abc")).status).toBe(404);
    expect((await visitor.get("/user/webhooks/99999999999")).status).toBe(404);
    const [after] = await endpointsOf(owner.user.id);
    expect(after).toEqual(row!);
    const [d] = await ctx.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, delivery!.id));
    expect(d!.status).toBe("failed");
    expect(
      await ctx.db
        .select()
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.endpointId, row!.id), eq(webhookDeliveries.eventType, "webhook.test"))),
    ).toEqual([]);
    await ctx.db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, site!.id));
  });

  test("a cross-site post, or one without the form token, is refused", async () => {
    const { user, visitor } = await signedIn();
    const foreign = await visitor.post("/user/webhooks", { url: RECEIVER, ...events("image.uploaded") }, { origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    const tokenless = await visitor.post("/user/webhooks", { url: RECEIVER, ...events("image.uploaded") }, { formToken: null });
    expect(tokenless.status).toBe(403);
    expect(await endpointsOf(user.id)).toEqual([]);
    await addEndpoint(visitor);
    const [row] = await endpointsOf(user.id);
    expect((await visitor.post(`/user/webhooks/${row!.id}/delete`, { confirmed: "1" }, { origin: "https://evil.example" })).status).toBe(403);
    expect((await visitor.post(`/user/webhooks/${row!.id}/rotate`, {}, { origin: null })).status).toBe(403);
    expect((await endpointsOf(user.id)).length).toBe(1);
  });
});

describe("admin: /user/admin/webhooks", () => {
  const siteEndpoints = () => ctx.db.select().from(webhookEndpoints).where(isNull(webhookEndpoints.ownerId)).orderBy(webhookEndpoints.id);
  const auditRows = async (n: number) => ctx.db.select().from(auditLog).orderBy(desc(auditLog.id)).limit(n);

  test("administrators only; a plain user is refused, a signed-out visitor sent to sign in", async () => {
    const { visitor } = await signedIn("user");
    expect((await visitor.get("/user/admin/webhooks")).status).toBe(403);
    const post = await visitor.post("/user/admin/webhooks", { url: RECEIVER, ...events("user.disabled") });
    expect(post.status).toBe(403);
    expect(await siteEndpoints()).toEqual([]);
    const anonymous = new Visitor();
    expect(location(await anonymous.get("/user/admin/webhooks"))).toBe("/user/login?next=%2Fuser%2Fadmin%2Fwebhooks");
  });

  test("site-wide endpoints: user.disabled offered; create, edit, rotate, test, resend, delete, each through the admin API and in its audit log", async () => {
    const { user, visitor } = await signedIn("admin");
    const [{ startId }] = (await ctx.db.select({ startId: sql<number>`coalesce(max(${auditLog.id}), 0)::int` }).from(auditLog)) as [{ startId: number }];
    const page0 = await (await visitor.get("/user/admin/webhooks")).text();
    expect(page0).toContain('name="event_user.disabled"');
    expect(page0).toContain('<a href="/user/admin/webhooks" aria-current="page">Webhooks</a>');
    const actor = `${user.username} (user ${user.id})`;
    const secrets: string[] = [];

    const { res, html } = await addEndpoint(visitor, { ...events("user.disabled"), description: "site hook" }, "/user/admin/webhooks");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const secret = secretIn(html)!;
    expect(secret).toMatch(/^whsec_/);
    secrets.push(secret);
    const [row] = await siteEndpoints();
    expect(row).toMatchObject({ ownerId: null, description: "site hook", events: ["image.uploaded", "image.deleted", "user.disabled"] });
    expect(html).toContain(`<a href="/user/admin/webhooks/${row!.id}">Go to the endpoint</a>`);
    let [entry] = await auditRows(1);
    expect(entry).toMatchObject({
      actor,
      actorUserId: user.id,
      action: "POST /api/admin/webhooks",
      targetType: "webhooks",
      targetId: "",
      detail: { url: RECEIVER, description: "site hook", events: ["image.uploaded", "image.deleted", "user.disabled"] },
    });
    // a user never sees it
    const plain = await signedIn("user");
    expect((await plain.visitor.get(`/user/webhooks/${row!.id}`)).status).toBe(404);
    expect(await (await plain.visitor.get("/user/webhooks")).text()).not.toContain("site hook");
    // the list reads it back from the API: link, events, status, date
    const list = await (await visitor.get("/user/admin/webhooks")).text();
    expect(list).toContain(`<a href="/user/admin/webhooks/${row!.id}">${RECEIVER}</a>`);
    expect(list).toContain("image.uploaded, image.deleted, user.disabled");
    expect(list).toContain(">Enabled<");
    expect(list).toContain(`<time datetime="${new Date(Math.floor(row!.createdAt.getTime() / 1000) * 1000).toISOString()}">`);
    expect(list).not.toContain(secret);

    const page = `/user/admin/webhooks/${row!.id}`;
    const saved = await visitor.post(page, { url: RECEIVER, description: "renamed", ...events("user.disabled") });
    expect([saved.status, location(saved)]).toEqual([303, `${page}?done=saved`]);
    [entry] = await auditRows(1);
    expect(entry).toMatchObject({
      actor,
      action: "PATCH /api/admin/webhooks/{id}",
      targetId: String(row!.id),
      detail: { url: RECEIVER, description: "renamed", events: ["user.disabled"] },
    });
    expect((await siteEndpoints())[0]).toMatchObject({ description: "renamed", events: ["user.disabled"] });

    const rotated = await visitor.post(`${page}/rotate`);
    expect(rotated.status).toBe(200);
    const rotatedHtml = await rotated.text();
    const second = secretIn(rotatedHtml)!;
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(secret);
    expect(rotatedHtml).toContain("The old secret no longer signs anything.");
    secrets.push(second);
    [entry] = await auditRows(1);
    expect(entry).toMatchObject({ actor, action: "POST /api/admin/webhooks/{id}/secret", targetId: String(row!.id) });

    const off = await visitor.post(`${page}/disable`);
    expect([off.status, location(off)]).toEqual([303, `${page}?done=disabled`]);
    expect((await auditRows(1))[0]).toMatchObject({ actor, action: "PATCH /api/admin/webhooks/{id}", detail: { enabled: false } });
    const offHtml = await (await visitor.get(page)).text();
    expect(offHtml).toContain("Disabled: switched off by its owner");
    expect(offHtml).toContain(">Switch on<");
    // switched off: no test event (the page says so; the API is not called)
    const offRows = (await auditRows(1))[0]!.id;
    expect((await visitor.post(`${page}/test`)).status).toBe(400);
    expect((await auditRows(1))[0]!.id).toBe(offRows);
    expect((await visitor.post(`${page}/enable`)).status).toBe(303);
    expect((await auditRows(1))[0]).toMatchObject({ actor, action: "PATCH /api/admin/webhooks/{id}", detail: { enabled: true } });
    const sent = await visitor.post(`${page}/test`);
    expect([sent.status, location(sent)]).toEqual([303, `${page}?done=test`]);
    expect((await auditRows(1))[0]).toMatchObject({ actor, action: "POST /api/admin/webhooks/{id}/test", targetId: String(row!.id) });
    const [d] = await insertDeliveries(row!.id, 1, "delivered");
    const again = await visitor.post(`${page}/deliveries/${d!.id}/resend`);
    expect([again.status, location(again)]).toEqual([303, `${page}?done=resent`]);
    expect((await auditRows(1))[0]).toMatchObject({
      actor,
      action: "POST /api/admin/webhooks/{id}/deliveries/{delivery_id}/resend",
      targetId: String(row!.id),
    });
    // pending now: the API's 404
    expect((await visitor.post(`${page}/deliveries/${d!.id}/resend`)).status).toBe(404);
    const log = await (await visitor.get(page)).text();
    expect(log).toContain("webhook.test");
    expect(log).toContain(`data-delivery="${d!.id}"`);

    // a refused change writes nothing, and shows the API's field error
    const before = (await auditRows(1))[0]!.id;
    const bad = await visitor.post(page, { url: "http://10.9.9.9/", ...events("user.disabled") });
    expect(bad.status).toBe(422);
    const badHtml = await bad.text();
    expect(badHtml).toContain('id="edit-url-error"');
    expect(badHtml).toContain("This address is private or internal; webhooks can only be sent to public addresses.");
    expect((await auditRows(1))[0]!.id).toBe(before);

    const ask = await visitor.post(`${page}/delete`, { confirmed: "0" });
    expect(ask.status).toBe(200);
    expect(await ask.text()).toContain("and its delivery log?");
    const deleted = await visitor.post(`${page}/delete`, { confirmed: "1" });
    expect([deleted.status, location(deleted)]).toEqual([303, "/user/admin/webhooks?done=deleted"]);
    expect((await auditRows(1))[0]).toMatchObject({ actor, action: "DELETE /api/admin/webhooks/{id}", targetId: String(row!.id) });
    expect(await siteEndpoints()).toEqual([]);
    expect((await visitor.get(page)).status).toBe(404);
    // the audit page lists it
    expect(await (await visitor.get("/user/admin/audit")).text()).toContain("DELETE /api/admin/webhooks/{id}");

    // every row of these changes is the API's, by the administrator, without a secret
    const rows = await ctx.db
      .select()
      .from(auditLog)
      .where(and(gt(auditLog.id, startId), eq(auditLog.actorUserId, user.id)))
      .orderBy(auditLog.id);
    expect(rows.map((r) => r.action)).toEqual([
      "POST /api/admin/webhooks",
      "PATCH /api/admin/webhooks/{id}",
      "POST /api/admin/webhooks/{id}/secret",
      "PATCH /api/admin/webhooks/{id}",
      "PATCH /api/admin/webhooks/{id}",
      "POST /api/admin/webhooks/{id}/test",
      "POST /api/admin/webhooks/{id}/deliveries/{delivery_id}/resend",
      "DELETE /api/admin/webhooks/{id}",
    ]);
    expect(rows.every((r) => r.actor === actor && r.targetType === "webhooks")).toBe(true);
    const details = JSON.stringify(rows.map((r) => r.detail));
    for (const s of [...secrets, ...secrets.map((x) => x.slice(6))]) expect(details).not.toContain(s);
    expect(details).not.toContain("whsec_");
  });

  test("the API's refusals on the admin page: field errors, the events it needs, a user's endpoint is not found", async () => {
    const { user, visitor } = await signedIn("admin");
    const { res, html } = await addEndpoint(visitor, { url: "ftp://example.com/x" }, "/user/admin/webhooks");
    expect(res.status).toBe(422);
    expect(html).toContain('id="new-url-error"');
    expect(html).toContain("The scheme ftp: is not allowed");
    expect(html).toMatch(/id="new-url"[^>]*aria-invalid="true"/);
    expect(html).toContain('value="ftp://example.com/x"');
    const none = await visitor.post("/user/admin/webhooks", { url: RECEIVER });
    expect(none.status).toBe(422);
    expect(await none.text()).toContain('id="new-events-error"');
    expect(await siteEndpoints()).toEqual([]);
    expect(await ctx.db.select().from(auditLog).where(eq(auditLog.actorUserId, user.id))).toEqual([]);

    // a user's own endpoint is not one of the site's
    const owner = await signedIn();
    await addEndpoint(owner.visitor);
    const [own] = await endpointsOf(owner.user.id);
    expect((await visitor.get(`/user/admin/webhooks/${own!.id}`)).status).toBe(404);
    expect((await visitor.post(`/user/admin/webhooks/${own!.id}/rotate`)).status).toBe(404);
    expect((await visitor.post(`/user/admin/webhooks/${own!.id}/delete`, { confirmed: "1" })).status).toBe(404);
    expect((await visitor.get("/user/admin/webhooks/abc")).status).toBe(404);
    expect((await endpointsOf(owner.user.id)).length).toBe(1);
  });

  test("the delivery log through the API: 50 a page, Older only when there are older ones", async () => {
    const { visitor } = await signedIn("admin");
    await addEndpoint(visitor, {}, "/user/admin/webhooks");
    const [row] = await siteEndpoints();
    const page = `/user/admin/webhooks/${row!.id}`;
    expect(await (await visitor.get(page)).text()).toContain("Nothing sent yet.");
    const made = await insertDeliveries(row!.id, 50, "failed");
    const full = await (await visitor.get(page)).text();
    const shown = [...full.matchAll(/data-delivery="(\d+)"/g)].map((m) => Number(m[1]));
    expect(shown).toEqual(made.map((d) => d.id).reverse());
    expect(full).not.toContain('rel="next"'); // exactly one page: nothing older
    expect(full).toContain(">Send again<");
    const [newest] = await insertDeliveries(row!.id, 1, "delivered");
    // the newest is the one just made: the oldest of the 50 moves to the second page
    const first = await (await visitor.get(page)).text();
    expect(first).toContain(`data-delivery="${newest!.id}"`);
    const next = /href="(\/user\/admin\/webhooks\/\d+\?before=\d+)" rel="next"/.exec(first)?.[1];
    expect(next).toBe(`${page}?before=${made[1]!.id}`);
    const second = await (await visitor.get(next!)).text();
    expect([...second.matchAll(/data-delivery="(\d+)"/g)].map((m) => Number(m[1]))).toEqual([made[0]!.id]);
    expect(second).not.toContain('rel="next"');
    expect(second).toContain("← Newest");
    await ctx.db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, row!.id));
  });
});
