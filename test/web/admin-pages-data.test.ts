/**
 * The admin pages of the site's data: GET /api/admin/images (every image, users' and guests', with its
 * filters) and DELETE /api/admin/images/{key} (the API delete's guarantees, for a user's and a guest's image); the
 * Images page (filters, thumbnails, pages, delete one, delete a selection, each audited under the administrator), the
 * Maintenance page (the reconciler's dry run and its application), the Audit log page (newest first, keyset pages);
 * and the authorization matrix of every page and form post, with the site-wide API switch off too.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { eq, sql } from "drizzle-orm";
import { adminImageListQuery, type AdminImageFilter } from "../../src/db/repositories/admin-images.ts";
import { auditLog as auditTable, images } from "../../src/db/schema.ts";
import { quarantinePath, RECONCILE_GRACE_SECONDS } from "../../src/services/reconcile/index.ts";
import { ADMIN_TOKEN, BASE_URL, createTestContext, type TestContext } from "../support/harness.ts";
import { makeImage, makeNoisyJpeg } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";
import { visitorClass } from "../support/visitor.ts";

setDefaultTimeout(60_000);

let ctx: TestContext;
let png: Uint8Array;
let jpeg: Uint8Array;
let root: string;
beforeAll(async () => {
  ctx = await createTestContext();
  root = join(ctx.dataDir, "uploads");
  png = await makeImage("png", 32, 24);
  jpeg = await makeNoisyJpeg(480, 360); // wider than the thumbnail box: it gets a thumbnail
});
afterAll(() => ctx?.close());

const PASSWORD = "correct horse battery";
let addressSeq = 0;
const Visitor = visitorClass(
  () => ctx,
  () => `198.51.100.${++addressSeq}`,
);
let seq = 0;
const uniqueName = (prefix = "dat") => `${prefix}${++seq}_${Math.random().toString(36).slice(2, 6)}`;
const location = (res: Response) => res.headers.get("location");
const adminGet = (path: string) => ctx.json(path, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
const adminDelete = (key: string) =>
  ctx.json(`/api/admin/images/${encodeURIComponent(key)}`, { method: "DELETE", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
const list = async (query: string) => expectStatus(await adminGet(`/api/admin/images?${query}`), 200).data;
const keysOf = (page: { images: { key: string }[] }) => page.images.map((i) => i.key);
const auditEntries = async () => (await ctx.admin("GET", "/api/admin/audit-log?limit=200")).entries as any[];
const rowOf = async (key: string) => (await ctx.db.select().from(images).where(eq(images.key, key)))[0];
const utcDay = (d: Date) => d.toISOString().slice(0, 10);
const unescape = (html: string) =>
  html
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** A user with a token; createUser's own `username` is its generated one, not the one given. */
async function makeUser(prefix: string) {
  const username = uniqueName(prefix);
  const user = await ctx.createUser({ username, email: `${username}@example.com` });
  return { ...user, username };
}

async function signedIn(role: "admin" | "user" = "admin") {
  const username = uniqueName(role === "admin" ? "adm" : "usr");
  const user = await ctx.createUser({ username, email: `${username}@example.com`, password: PASSWORD, role });
  const visitor = new Visitor();
  expect((await visitor.signIn(username)).status).toBe(303);
  return { user, username, visitor };
}

async function upload(token: string | null, bytes = png, fields: Record<string, string> = {}, filename = "a.png") {
  const type = bytes === png ? "image/png" : "image/jpeg";
  return expectStatus(await ctx.upload(token, { bytes, filename, contentType: type }, fields), 200).data;
}

async function guestUpload(filename = "guest.png") {
  await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
  try {
    return await upload(null, png, {}, filename);
  } finally {
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: false });
  }
}

const usedKb = async (token: string) => expectStatus(await ctx.json("/api/v1/profile", { headers: ctx.bearer(token) }), 200).data;
const strategyUsedKb = async (id: number) =>
  ((await ctx.admin("GET", "/api/admin/strategies?per_page=500")).strategies as any[]).find((s) => s.id === id).used_kb as number;
const ownList = async (token: string) =>
  (expectStatus(await ctx.json("/api/v1/images?per_page=100", { headers: ctx.bearer(token) }), 200).data.data as any[]).map((i) => i.key);

/** Every id of a page appears once; every visible control has a label. */
function expectAccessible(html: string) {
  const ids = [...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]);
  expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  const controls = [...html.matchAll(/<(input|select|textarea)\b([^>]*)>/g)].filter((m) => !/type="hidden"/.test(m[2]!));
  for (const [tag, , attrs] of controls) {
    const id = /\sid="([^"]+)"/.exec(attrs!)?.[1];
    const named = /aria-label="[^"]+"/.test(attrs!) || (id !== undefined && html.includes(`for="${id}"`));
    expect(named, `<${tag}${attrs}> has a label (for its id) or an aria-label`).toBe(true);
  }
}

describe("GET /api/admin/images", () => {
  test("every image, users' and guests', with owner and strategy; each filter; pages; newest first", async () => {
    const alice = await makeUser("alice");
    const bob = await makeUser("bob");
    const s2 = await ctx.admin("POST", "/api/admin/strategies", { name: uniqueName("st"), driver: "local", config: { root: join(ctx.dataDir, "s2") } });
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { strategy_ids: [ctx.localStrategyId, s2.id] });

    const day0 = ctx.now();
    const a1 = await upload(alice.token, png, {}, "small.png");
    ctx.advance(3 * 86_400_000);
    const day3 = ctx.now();
    const a2 = await upload(alice.token, jpeg, { permission: "0" }, "large.jpg");
    const b1 = await upload(bob.token, png, { strategy_id: String(s2.id) }, "bob.png");
    const g1 = await guestUpload();

    const all = await list("per_page=100");
    expect(keysOf(all).slice(0, 4)).toEqual([g1.key, b1.key, a2.key, a1.key]);
    expect(all.total).toBeGreaterThanOrEqual(4);
    const first = all.images.find((i: any) => i.key === a2.key);
    expect(first).toMatchObject({
      key: a2.key,
      pathname: a2.pathname,
      origin_name: "large.jpg",
      size: a2.size,
      mimetype: "image/jpeg",
      width: 480,
      height: 360,
      is_public: false,
      created_at: a2.created_at ?? first.created_at,
      expired_at: null,
      user_id: alice.id,
      username: alice.username,
      strategy_id: ctx.localStrategyId,
      url: a2.url,
      thumbnail_url: a2.thumbnail_url,
    });
    expect(first.strategy_name).toBeString();
    expect(all.images.find((i: any) => i.key === g1.key)).toMatchObject({ user_id: null, username: null, strategy_id: ctx.localStrategyId });
    expect(all.images.find((i: any) => i.key === b1.key)).toMatchObject({
      user_id: bob.id,
      username: bob.username,
      strategy_id: s2.id,
      strategy_name: s2.name,
    });

    // the owner's images, newest first, pages of one
    expect(keysOf(await list(`user_id=${alice.id}`))).toEqual([a2.key, a1.key]);
    const page2 = await list(`user_id=${alice.id}&per_page=1&page=2`);
    expect([keysOf(page2), page2.total, page2.last_page, page2.current_page, page2.per_page]).toEqual([[a1.key], 2, 2, 2, 1]);
    // guests only
    const guests = await list("guests=true");
    expect(keysOf(guests)).toEqual([g1.key]);
    expect(guests.total).toBe(1);
    // strategy, visibility, size, dates
    expect(keysOf(await list(`strategy_id=${s2.id}`))).toEqual([b1.key]);
    expect(keysOf(await list(`user_id=${alice.id}&visibility=private`))).toEqual([a2.key]);
    expect(keysOf(await list(`user_id=${alice.id}&visibility=public`))).toEqual([a1.key]);
    expect(keysOf(await list(`user_id=${alice.id}&min_kb=5`))).toEqual([a2.key]);
    expect(keysOf(await list(`user_id=${alice.id}&max_kb=1`))).toEqual([a1.key]);
    expect(keysOf(await list(`user_id=${alice.id}&to=${utcDay(day0)}`))).toEqual([a1.key]);
    expect(keysOf(await list(`user_id=${alice.id}&from=${utcDay(day3)}`))).toEqual([a2.key]);
    expect(keysOf(await list(`user_id=${alice.id}&from=${utcDay(day0)}&to=${utcDay(day3)}`))).toEqual([a2.key, a1.key]);
    expect(keysOf(await list(`from=${utcDay(day3)}&to=${utcDay(day3)}&guests=true&visibility=public&max_kb=1`))).toEqual([g1.key]);
    expect((await list(`user_id=${alice.id}&strategy_id=${s2.id}`)).total).toBe(0);
  });

  test("bad filters are 422 with the field named; no credential is 401", async () => {
    const cases: [string, string][] = [
      ["per_page=101", "per_page"],
      ["page=0", "page"],
      ["user_id=abc", "user_id"],
      ["user_id=99999999999", "user_id"],
      ["guests=yes", "guests"],
      ["strategy_id=-1", "strategy_id"],
      ["from=2026-02-30", "from"],
      ["to=26-01-01", "to"],
      ["from=2026-03-02&to=2026-03-01", "to"],
      ["min_kb=-1", "min_kb"],
      ["min_kb=10&max_kb=5", "max_kb"],
      ["max_kb=1.5", "max_kb"],
      ["user_id=1&guests=true", "guests"],
      ["visibility=secret", "visibility"],
    ];
    for (const [query, field] of cases) {
      const res = await adminGet(`/api/admin/images?${query}`);
      expect(res.status, query).toBe(422);
      expect(Object.keys(res.body.errors), query).toContain(field);
    }
    expect((await ctx.json("/api/admin/images")).status).toBe(401);
  });
});

describe("DELETE /api/admin/images/{key}", () => {
  test("a user's image: files gone, capacity and quota released, gone from the owner's list, audited; again 404", async () => {
    const carol = await makeUser("carol");
    const kept = await upload(carol.token, png, {}, "kept.png");
    const doomed = await upload(carol.token, jpeg, {}, "doomed.jpg");
    const row = (await rowOf(doomed.key))!;
    expect(row.thumbnailPath).not.toBeNull();
    for (const path of [row.path, row.thumbnailPath!]) expect(existsSync(join(root, path))).toBe(true);
    const before = await usedKb(carol.token);
    const quotaBefore = await strategyUsedKb(ctx.localStrategyId);

    expectStatus(await adminDelete(doomed.key), 200);
    for (const path of [row.path, row.thumbnailPath!]) expect(existsSync(join(root, path)), path).toBe(false);
    expect(await rowOf(doomed.key)).toBeUndefined();
    const after = await usedKb(carol.token);
    expect(after.image_num).toBe(before.image_num - 1);
    expect(after.size).toBeCloseTo(before.size - doomed.size, 5);
    expect(await strategyUsedKb(ctx.localStrategyId)).toBeCloseTo(quotaBefore - doomed.size, 5);
    expect(await ownList(carol.token)).toEqual([kept.key]);
    expect((await ctx.request(new URL(doomed.url).pathname)).status).toBe(404);

    const [entry] = await auditEntries();
    expect(entry).toMatchObject({ actor: "ADMIN_TOKEN", action: "DELETE /api/admin/images/{key}", target_type: "images", target_id: doomed.key });
    // the entry names what went, which the key alone no longer can
    expect(entry.detail).toEqual({ origin_name: "doomed.jpg", owner: carol.username });
    expect((await adminDelete(doomed.key)).status).toBe(404);
    expect((await adminDelete("no-such-key")).status).toBe(404);
    expect((await adminDelete("a\u0001b")).status).toBe(422);
  });

  test("a guest's image: files gone, the strategy's quota released, gone from the list", async () => {
    const guest = await guestUpload("g2.png");
    const row = (await rowOf(guest.key))!;
    expect(row.userId).toBeNull();
    const quotaBefore = await strategyUsedKb(ctx.localStrategyId);
    expectStatus(await adminDelete(guest.key), 200);
    for (const path of [row.path, row.thumbnailPath].filter((p): p is string => !!p)) expect(existsSync(join(root, path)), path).toBe(false);
    expect(await rowOf(guest.key)).toBeUndefined();
    expect(await strategyUsedKb(ctx.localStrategyId)).toBeCloseTo(quotaBefore - guest.size, 5);
    expect(keysOf(await list("guests=true&per_page=100"))).not.toContain(guest.key);
    const [entry] = await auditEntries();
    expect(entry).toMatchObject({ action: "DELETE /api/admin/images/{key}", target_id: guest.key, detail: { origin_name: "g2.png", owner: null } });
    expect((await adminDelete(guest.key)).status).toBe(404);
  });
});

describe("the Images page", () => {
  test("renders the filters, thumbnails and pages; a username or an id picks the user; bad filters are marked (422)", async () => {
    const admin = await signedIn();
    const dave = await makeUser("dave");
    const d1 = await upload(dave.token, png, {}, "d <1>.png");
    const d2 = await upload(dave.token, png, {}, "d2.png");
    const res = await admin.visitor.get(`/user/admin/images?user=${dave.username}&per_page=1`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expectAccessible(html);
    expect(html).toContain("<legend>Owner</legend>");
    expect(html).toContain('<label for="strategy">Strategy</label>');
    expect(html).toContain('<input id="from" name="from" type="date"');
    // sizes with a unit; every choice's text whole (no select is narrower than its text: a grid of fieldsets)
    expect(html).toContain('<select name="min_kb_unit" aria-label="Unit of');
    expect(html).toContain('<option value="" selected="">All strategies</option>');
    expect(html).toContain(`<img src="${d2.thumbnail_url}"`);
    expect(html).not.toContain(d1.thumbnail_url);
    expect(html).toContain("2 images, newest first, filtered");
    expect(html).toContain("Page 1 of 2");
    expect(unescape(html)).toContain(`href="/user/admin/images?user=${dave.username}&per_page=1&page=2"`);
    const second = await (await admin.visitor.get(`/user/admin/images?user=${dave.username}&per_page=1&page=2`)).text();
    expect(second).toContain("d &lt;1&gt;.png");
    expect(second).toContain(`name="image_${d1.key}"`);
    // by id, and #id
    expect(await (await admin.visitor.get(`/user/admin/images?user=${dave.id}`)).text()).toContain(`name="image_${d2.key}"`);
    expect(await (await admin.visitor.get(`/user/admin/images?user=%23${dave.id}`)).text()).toContain(`name="image_${d1.key}"`);

    const unknown = await admin.visitor.get("/user/admin/images?user=nobody_here");
    expect(unknown.status).toBe(422);
    const unknownHtml = await unknown.text();
    expect(unknownHtml).toContain('id="user-error"');
    expect(unknownHtml).toContain('aria-invalid="true"');
    expect(unknownHtml).toContain("Nothing was listed");
    const both = await admin.visitor.get(`/user/admin/images?user=${dave.username}&owner=guests`);
    expect(both.status).toBe(422);
    const badDate = await admin.visitor.get("/user/admin/images?from=2026-02-30");
    expect(badDate.status).toBe(422);
    expect(await badDate.text()).toContain('id="from-error"');
    const badRange = await admin.visitor.get("/user/admin/images?min_kb=9&max_kb=2");
    expect(badRange.status).toBe(422);
    expect(await badRange.text()).toContain('id="max-kb-error"');
    // a size in MB is sent to the API in KB: 1 MB and more excludes the 1 KB images
    const bigOnly = await admin.visitor.get(`/user/admin/images?user=${dave.username}&min_kb=1&min_kb_unit=MB`);
    expect(bigOnly.status).toBe(200);
    const bigHtml = await bigOnly.text();
    expect(bigHtml).toContain("0 images, newest first, filtered");
    expect(bigHtml).toMatch(/<input id="min-kb" name="min_kb" type="number"[^>]* value="1"/);
    expect(bigHtml).toContain('<option value="MB" selected="">MB</option>');
    expect((await admin.visitor.get("/user/admin/images?owner=guests")).status).toBe(200);
  });

  test("delete one (asked first without script), then a selection; each through the admin API, audited under the administrator", async () => {
    const admin = await signedIn();
    const erin = await makeUser("erin");
    const one = await upload(erin.token, png, {}, "one.png");
    const two = await upload(erin.token, png, {}, "two.png");
    const three = await upload(erin.token, png, {}, "three.png");
    const guest = await guestUpload("g3.png");
    const back = `/user/admin/images?user=${erin.username}&page=1`;
    const page = await (await admin.visitor.get(back)).text();
    expect(page).toContain(`action="/user/admin/images/${one.key}/delete"`);
    expect(page).toContain('data-confirm="Delete one.png of');

    // one image: unconfirmed, the confirmation page
    const ask = await admin.visitor.post(`/user/admin/images/${one.key}/delete`, { confirmed: "0", back });
    expect(ask.status).toBe(200);
    const askHtml = await ask.text();
    expect(askHtml).toContain("Delete this image?");
    expect(askHtml).toContain('name="confirmed" value="1"');
    expect(await rowOf(one.key)).toBeDefined();
    const done = await admin.visitor.post(`/user/admin/images/${one.key}/delete`, { confirmed: "1", back });
    expect([done.status, location(done)]).toEqual([303, `${back}&deleted=1`]);
    expect(await rowOf(one.key)).toBeUndefined();
    expect(await (await admin.visitor.get(location(done)!)).text()).toContain("1 image deleted.");
    const [entry] = await auditEntries();
    expect(entry).toMatchObject({ actor: `${admin.username} (user ${admin.user.id})`, actor_user_id: admin.user.id, action: "DELETE /api/admin/images/{key}" });
    // deleted meanwhile: said so, no error
    const again = await admin.visitor.post(`/user/admin/images/${one.key}/delete`, { confirmed: "1", back });
    expect([again.status, location(again)]).toEqual([303, `${back}&missing=1`]);
    // a back address elsewhere is not followed
    const elsewhere = await admin.visitor.post(`/user/admin/images/${one.key}/delete`, { confirmed: "0", back: "https://evil.example/" });
    expect(location(elsewhere)).toBe("/user/admin/images?page=1&missing=1");

    // a selection, a user's and a guest's image: unconfirmed, listed; confirmed, deleted
    const auditBefore = (await auditEntries()).length;
    const selection = { [`image_${two.key}`]: "1", [`image_${guest.key}`]: "1", back };
    const confirm = await admin.visitor.post("/user/admin/images/delete", { ...selection, confirmed: "0" });
    expect(confirm.status).toBe(200);
    const confirmHtml = await confirm.text();
    expect(confirmHtml).toContain("Delete these 2 images?");
    expect(confirmHtml).toContain("g3.png");
    expect(confirmHtml).toContain("of a guest");
    expect(await rowOf(two.key)).toBeDefined();
    const bulk = await admin.visitor.post("/user/admin/images/delete", { ...selection, confirmed: "1" });
    expect([bulk.status, location(bulk)]).toEqual([303, `${back}&deleted=2`]);
    expect(await rowOf(two.key)).toBeUndefined();
    expect(await rowOf(guest.key)).toBeUndefined();
    expect(await rowOf(three.key)).toBeDefined();
    expect(await ownList(erin.token)).toEqual([three.key]);
    const entries = await auditEntries();
    expect(entries.length).toBe(auditBefore + 2);
    for (const e of entries.slice(0, 2))
      expect(e).toMatchObject({ actor: `${admin.username} (user ${admin.user.id})`, action: "DELETE /api/admin/images/{key}" });

    // nothing selected, or too many: 400, nothing deleted
    // the bulk form's buttons wait for a selection (app.js); without script, nothing selected is a page that leads back
    expect(page).toMatch(/<form id="bulk" class="card bulk" method="post" action="\/user\/admin\/images\/delete" data-bulk="true">/);
    const none = await admin.visitor.post("/user/admin/images/delete", { back, confirmed: "1" }, { headers: { referer: `${BASE_URL}${back}` } });
    expect(none.status).toBe(400);
    const noneHtml = unescape(await none.text());
    expect(noneHtml).toContain("Select the images to delete first.");
    expect(noneHtml).toContain(`<a class="button" href="${back}">← Back to where you were</a>`);
    const tooMany: Record<string, string> = { back, confirmed: "1", [`image_${three.key}`]: "1" };
    for (let i = 0; i < 100; i++) tooMany[`image_missing${i}`] = "1";
    expect((await admin.visitor.post("/user/admin/images/delete", tooMany)).status).toBe(400);
    expect(await rowOf(three.key)).toBeDefined();
  });
});

describe("the Maintenance page", () => {
  test("a dry run reports an orphan and keeps it; Apply quarantines it", async () => {
    const orphan = `2026/01/02/${"Q".repeat(20)}.png`;
    mkdirSync(dirname(join(root, orphan)), { recursive: true });
    writeFileSync(join(root, orphan), "leftover");
    ctx.advance(2 * RECONCILE_GRACE_SECONDS * 1000);
    const old = new Date(ctx.now().getTime() - 2 * RECONCILE_GRACE_SECONDS * 1000);
    utimesSync(join(root, orphan), old, old);
    const admin = await signedIn(); // after the clock moved: an administrator's session idles out in 30 minutes

    const page = await admin.visitor.get("/user/admin/maintenance");
    expect(page.status).toBe(200);
    const pageHtml = await page.text();
    expectAccessible(pageHtml);
    expect(pageHtml).toContain("kept 7 days");
    expect(pageHtml).toContain('action="/user/admin/maintenance/dry-run"');

    const dry = await admin.visitor.post("/user/admin/maintenance/dry-run");
    expect(dry.status).toBe(200);
    const dryHtml = await dry.text();
    expectAccessible(dryHtml);
    expect(dryHtml).toContain("Dry run report");
    expect(dryHtml).toContain(`<code>${orphan}</code>`);
    expect(dryHtml).toMatch(/<th scope="row">Orphans found<\/th><td>1<\/td>/);
    expect(dryHtml).toContain('action="/user/admin/maintenance/apply"');
    expect(dryHtml).toContain("Objects scanned");
    expect(dryHtml).toContain("Records missing an object");
    expect(existsSync(join(root, orphan))).toBe(true);
    expect((await auditEntries())[0]).toMatchObject({
      actor: `${admin.username} (user ${admin.user.id})`,
      action: "POST /api/admin/storage/reconcile",
      detail: { dry_run: true },
    });

    const applied = await admin.visitor.post("/user/admin/maintenance/apply");
    expect(applied.status).toBe(200);
    const appliedHtml = await applied.text();
    expect(appliedHtml).toContain("Report of the applied run");
    expect(appliedHtml).toMatch(/<th scope="row">Orphans moved to the quarantine<\/th><td>1<\/td>/);
    expect(appliedHtml).not.toContain('action="/user/admin/maintenance/apply"');
    expect(existsSync(join(root, orphan))).toBe(false);
    expect(existsSync(join(root, quarantinePath(orphan, ctx.now())))).toBe(true);
    expect((await auditEntries())[0]).toMatchObject({ actor: `${admin.username} (user ${admin.user.id})`, detail: { dry_run: false } });
  });
});

describe("the Audit log page", () => {
  test("entries newest first with time, actor, action, target, address and detail; Older pages by the last id", async () => {
    for (let i = 0; i < 55; i++) await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: i % 2 === 0 });
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: false });
    const admin = await signedIn();
    const newest = (await ctx.db.select().from(auditTable).orderBy(auditTable.id)).reverse();
    const res = await admin.visitor.get("/user/admin/audit");
    expect(res.status).toBe(200);
    const html = await res.text();
    expectAccessible(html);
    expect(html).toContain('<th scope="col">What happened</th>');
    // a sentence, the raw entry behind its Details toggle
    expect(html).toContain('<p class="sentence">ADMIN_TOKEN changed the site settings (guest_upload_enabled)</p>');
    const shown = [...html.matchAll(/<tr id="entry-(\d+)">/g)].map((m) => Number(m[1]));
    expect(shown).toEqual(newest.slice(0, 50).map((e) => e.id));
    const top = newest[0]!;
    expect(html).toContain(`<time datetime="${top.createdAt.toISOString()}">`);
    expect(html).toMatch(/<time datetime="[^"]+">\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC<\/time>/);
    expect(html).toContain("<details><summary>Details</summary><code>ADMIN_TOKEN PATCH /api/admin/settings → settings</code>");
    expect(unescape(html)).toContain('<code>{"guest_upload_enabled":false}</code>');
    expect(html).toContain(`${newest.length} entries in all`);
    const older = `/user/admin/audit?before=${shown.at(-1)}`;
    expect(html).toContain(`href="${older}"`);
    const next = await (await admin.visitor.get(older)).text();
    const shownNext = [...next.matchAll(/<tr id="entry-(\d+)">/g)].map((m) => Number(m[1]));
    expect(shownNext).toEqual(newest.slice(50, 100).map((e) => e.id));
    expect(next).toContain('href="/user/admin/audit" rel="prev">← Newest');
    expect(await (await admin.visitor.get("/user/admin/audit?before=1")).text()).toContain("No older entries.");
    expect((await admin.visitor.get("/user/admin/audit?before=abc")).status).toBe(422);
    expect((await admin.visitor.get("/user/admin/audit?before=0")).status).toBe(422);
    expect((await admin.visitor.get("/user/admin/audit?before=99999999999999999999")).status).toBe(422);
  });
});

describe("the Audit log's sentences", () => {
  test("known actions read as sentences in the page's language; the raw entry sits behind Details", async () => {
    const bob = await makeUser("bob");
    await ctx.admin("PATCH", `/api/admin/users/${bob.id}`, { enabled: false });
    await ctx.admin("POST", "/api/admin/storage/reconcile", { dry_run: true });
    const carol = await makeUser("carol");
    const photo = await upload(carol.token, png, {}, "photo.jpg.png");
    const guest = await guestUpload("guest-photo.png");
    const admin = await signedIn();
    // through the admin page, as an administrator does it: the sentence names the image and its owner
    for (const key of [photo.key, guest.key])
      expect((await admin.visitor.post(`/user/admin/images/${key}/delete`, { confirmed: "1", back: "/user/admin/images?page=1" })).status).toBe(303);
    const html = unescape(await (await admin.visitor.get("/user/admin/audit")).text());
    expect(html).toContain(`<p class="sentence">${admin.username} deleted image photo.jpg.png of ${carol.username}</p>`);
    expect(html).toContain(`<p class="sentence">${admin.username} deleted image guest-photo.png of a guest</p>`);
    expect(html).toContain('<p class="sentence">ADMIN_TOKEN ran a dry run of the storage reconciler</p>');
    expect(html).toContain(`<p class="sentence">ADMIN_TOKEN disabled ${bob.username}'s account</p><details><summary>Details</summary>`);
    expect(html).toContain('<code>{"enabled":false}</code>');
    expect(html).toContain(`<code>ADMIN_TOKEN PATCH /api/admin/users/{id} → users ${bob.id}</code><code>{"enabled":false}</code>`);
    const zh = await ctx.request("/user/admin/audit", {
      headers: { cookie: admin.visitor.cookie!, "x-forwarded-for": admin.visitor.address, "accept-language": "zh-CN" },
    });
    const zhHtml = await zh.text();
    expect(zhHtml).toContain('<html lang="zh-CN"');
    expect(zhHtml).toContain(`<p class="sentence">ADMIN_TOKEN 停用了 ${bob.username} 的账户</p>`);
    expect(zhHtml).toContain("<summary>详情</summary>");
  });

  test("single sign-on, invitations and second factors read as sentences too", async () => {
    const bob = await makeUser("bob");
    const provider = await ctx.admin("POST", "/api/admin/oidc-providers", {
      slug: "corp",
      label: "Corp SSO",
      issuer: "http://127.0.0.1:9/",
      client_id: "pictures",
      client_secret: "s3cret-of-the-provider",
    });
    await ctx.admin("PATCH", `/api/admin/oidc-providers/${provider.id}`, { enabled: false });
    await ctx.admin("DELETE", `/api/admin/oidc-providers/${provider.id}`);
    const invitation = await ctx.admin("POST", "/api/admin/invitations", { max_uses: 1 });
    await ctx.admin("DELETE", `/api/admin/invitations/${invitation.id}`);
    await ctx.admin("DELETE", `/api/admin/users/${bob.id}/second-factors`);
    const admin = await signedIn();
    const html = unescape(await (await admin.visitor.get("/user/admin/audit")).text());
    for (const said of [
      "ADMIN_TOKEN added the identity provider Corp SSO",
      `ADMIN_TOKEN changed identity provider #${provider.id} (enabled)`,
      `ADMIN_TOKEN removed identity provider #${provider.id}`,
      "ADMIN_TOKEN made an invitation",
      `ADMIN_TOKEN withdrew invitation #${invitation.id}`,
      `ADMIN_TOKEN removed ${bob.username}'s second factors`,
    ])
      expect(html).toContain(`<p class="sentence">${said}</p>`);
    expect(html).not.toContain("s3cret-of-the-provider");
  });
});

describe("authorization", () => {
  test("every page and form post: anonymous → sign-in, a user → 403, an administrator → 200, cross-site → 403 and nothing changes", async () => {
    const owner = await makeUser("own");
    const image = await upload(owner.token, png, {}, "kept.png");
    const admin = await signedIn();
    const plain = await signedIn("user");
    const pages = ["/user/admin/images", "/user/admin/maintenance", "/user/admin/audit"];
    const posts: [string, Record<string, string>][] = [
      [`/user/admin/images/${image.key}/delete`, { confirmed: "1" }],
      ["/user/admin/images/delete", { confirmed: "1", [`image_${image.key}`]: "1" }],
      ["/user/admin/maintenance/dry-run", {}],
      ["/user/admin/maintenance/apply", {}],
    ];
    const auditCount = async () => (await ctx.db.select().from(auditTable)).length;
    const entriesBefore = await auditCount();

    const anonymous = new Visitor();
    for (const page of pages) {
      const res = await anonymous.get(page);
      expect([res.status, location(res)], page).toEqual([303, `/user/login?next=${encodeURIComponent(page)}`]);
    }
    for (const [path, fields] of posts) {
      const res = await anonymous.post(path, fields, { formToken: null });
      expect([res.status, location(res)], path).toEqual([303, "/user/login"]);
    }
    for (const page of pages) expect((await plain.visitor.get(page)).status, page).toBe(403);
    for (const [path, fields] of posts) expect((await plain.visitor.post(path, fields)).status, path).toBe(403);
    for (const page of pages) expect((await admin.visitor.get(page)).status, page).toBe(200);
    for (const [path, fields] of posts) {
      expect((await admin.visitor.post(path, fields, { origin: "https://evil.example" })).status, `${path} from another site`).toBe(403);
      expect((await admin.visitor.post(path, fields, { formToken: null })).status, `${path} without a form token`).toBe(403);
      expect((await admin.visitor.post(path, fields, { formToken: "forged" })).status, `${path} with another token`).toBe(403);
    }
    expect(await rowOf(image.key)).toBeDefined();
    expect(await auditCount()).toBe(entriesBefore);
  });

  test("the pages keep working with the site-wide API switch off", async () => {
    const owner = await makeUser("off");
    const image = await upload(owner.token, png, {}, "off.png");
    const admin = await signedIn();
    await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: false });
    try {
      expect((await ctx.json("/api/v1/profile", { headers: ctx.bearer(owner.token) })).status).toBe(403);
      for (const page of ["/user/admin/images", "/user/admin/maintenance", "/user/admin/audit"]) expect((await admin.visitor.get(page)).status, page).toBe(200);
      expect(await (await admin.visitor.get(`/user/admin/images?user=${owner.id}`)).text()).toContain(`name="image_${image.key}"`);
      expect((await admin.visitor.post("/user/admin/maintenance/dry-run")).status).toBe(200);
      const done = await admin.visitor.post(`/user/admin/images/${image.key}/delete`, { confirmed: "1", back: "/user/admin/images?page=1" });
      expect([done.status, location(done)]).toEqual([303, "/user/admin/images?page=1&deleted=1"]);
      expect(await rowOf(image.key)).toBeUndefined();
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: true });
    }
  });
});

describe("100,000 images", () => {
  test("an owner's (or the guests') page is read from an index in the list's order (images_owner_created_idx, or the visibility index), no sort; every page answers with its count", async () => {
    const owners = await Promise.all([makeUser("big"), makeUser("big")]);
    const N = 100_000;
    // a third each: the two users and the guests, a minute apart from 2025-01-01
    await ctx.db.execute(sql`
      insert into images (key, user_id, strategy_id, path, name, origin_name, size, mimetype, extension, width, height, md5, sha1, is_public, created_at)
      select 'many' || i, case i % 3 when 0 then ${owners[0]!.id}::int when 1 then ${owners[1]!.id}::int end, 1, 'many/' || i || '.png',
             'many' || i || '.png', 'photo-' || i || '.png', 1000 + (i * 7919) % 100000, 'image/png', 'png', 32, 24,
             md5(i::text), md5(i::text) || 'abcdefgh', i % 4 <> 0, timestamptz '2025-01-01' + i * interval '1 minute'
      from generate_series(1, ${N}) as i`);
    await ctx.db.execute(sql`analyze images`);

    type PlanNode = { "Node Type": string; "Relation Name"?: string; "Index Name"?: string; Plans?: PlanNode[] };
    const plan = async (filter: AdminImageFilter) => {
      const result = await ctx.db.execute(sql`explain (format json) ${adminImageListQuery(ctx.db, filter, 30, 0)}`);
      const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<string, unknown>[];
      let explained = Object.values(rows[0]!)[0];
      if (typeof explained === "string") explained = JSON.parse(explained);
      const nodes: PlanNode[] = [];
      const walk = (node: PlanNode) => {
        nodes.push(node);
        for (const child of node.Plans ?? []) walk(child);
      };
      walk((explained as { Plan: PlanNode }[])[0]!.Plan);
      return {
        text: JSON.stringify(explained),
        indexes: nodes.flatMap((n) => (n["Index Name"] ? [n["Index Name"]] : [])),
        sorts: nodes.some((n) => /Sort/.test(n["Node Type"])),
      };
    };
    const day = (d: string) => new Date(`${d}T00:00:00Z`);
    for (const filter of [
      { owner: owners[0]!.id },
      { owner: null },
      { owner: owners[1]!.id, visibility: "private" },
      { owner: owners[0]!.id, from: day("2025-01-20"), before: day("2025-01-25") },
      { owner: null, minBytes: 50 * 1024 },
    ] satisfies AdminImageFilter[]) {
      const p = await plan(filter);
      const what = `${JSON.stringify(filter)}: ${p.text}`;
      expect(
        p.indexes.some((i) => i === "images_owner_created_idx" || i === "images_owner_visibility_created_idx"),
        what,
      ).toBe(true);
      expect(p.sorts, what).toBe(false);
    }

    const admin = await signedIn();
    // speed is the bench's to measure (bun run bench --only pages), not a test's to assert
    for (const query of [
      "",
      `user_id=${owners[0]!.id}`,
      "guests=true",
      "visibility=private&min_kb=50",
      `strategy_id=1&from=2025-02-01&to=2025-02-10`,
      "page=3000&per_page=30",
    ]) {
      const res = await adminGet(`/api/admin/images?${query}`);
      expect(res.status, query).toBe(200);
    }
    const page = await admin.visitor.get(`/user/admin/images?user=${owners[1]!.username}&per_page=100&page=50`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("33,334 images, newest first, filtered");
  }, 180_000);
});
