/**
 * The admin pages of the service's configuration: Groups (every field of GroupInput, ordered strategies),
 * Strategies (local and S3 forms, write-only secrets, the Test button and POST /api/admin/strategies/{id}/test) and
 * Settings (the three switches). Every change goes through the admin API (its validation, its messages, its audit
 * log naming the administrator); the authorization matrix of every page and form post.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { groups, strategies } from "../../src/db/schema.ts";
import { ADMIN_TOKEN, createTestContext, type TestContext } from "../support/harness.ts";
import { freePort } from "../support/processes.ts";
import { expectStatus } from "../support/status.ts";
import { visitorClass } from "../support/visitor.ts";

setDefaultTimeout(60_000);

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx?.close());

const PASSWORD = "correct horse battery";
let addressSeq = 0;
const Visitor = visitorClass(
  () => ctx,
  () => `198.51.100.${++addressSeq}`,
);
let seq = 0;
const uniqueName = (prefix = "cfg") => `${prefix}${++seq}_${Math.random().toString(36).slice(2, 6)}`;
const location = (res: Response) => res.headers.get("location");
const adminJson = (method: string, path: string, body?: unknown) =>
  ctx.json(path, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
const auditLog = async () => (await ctx.admin("GET", "/api/admin/audit-log?limit=200")).entries as any[];
const groupById = async (id: number) => ((await ctx.admin("GET", "/api/admin/groups?per_page=500")).groups as any[]).find((g) => g.id === id);
const groupByName = async (name: string) => ((await ctx.admin("GET", "/api/admin/groups?per_page=500")).groups as any[]).find((g) => g.name === name);
const strategyById = async (id: number) => ((await ctx.admin("GET", "/api/admin/strategies?per_page=500")).strategies as any[]).find((s) => s.id === id);
const storedConfig = async (id: number) => (await ctx.db.select().from(strategies).where(eq(strategies.id, id)))[0]!.config;
const unescape = (html: string) =>
  html
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

async function signedIn(role: "admin" | "user" = "admin") {
  const username = uniqueName(role === "admin" ? "adm" : "usr");
  const user = await ctx.createUser({ username, email: `${username}@example.com`, password: PASSWORD, role });
  const visitor = new Visitor();
  expect((await visitor.signIn(username)).status).toBe(303);
  return { user, username, visitor };
}

/** The last audit entry of this action, which must name this administrator. */
async function expectAudited(action: string, admin: { user: { id: number }; username: string }) {
  const entry = (await auditLog()).find((e) => e.action === action);
  expect(entry, `an audit entry for ${action}`).toBeDefined();
  expect(entry.actor).toBe(`${admin.username} (user ${admin.user.id})`);
  expect(entry.actor_user_id).toBe(admin.user.id);
  return entry;
}

/** The error message next to a field (its `<id>-error`), unescaped. */
const errorOf = (html: string, id: string) => {
  const m = new RegExp(`<small id="${id}-error" class="field-error">([^<]*)</small>`).exec(html);
  return m ? unescape(m[1]!) : undefined;
};

/** Every id of a page appears once. */
function expectUniqueIds(html: string) {
  const ids = [...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]);
  expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
}

/** Every control of a page has a label (for its id) or an aria-label, or is hidden. */
function expectLabelled(html: string) {
  const controls = [...html.matchAll(/<(input|select|textarea)\b([^>]*)>/g)].filter((m) => !/type="hidden"/.test(m[2]!));
  for (const [tag, , attrs] of controls) {
    const id = /\sid="([^"]+)"/.exec(attrs!)?.[1];
    const named = /aria-label="[^"]+"/.test(attrs!) || (id !== undefined && html.includes(`for="${id}"`));
    expect(named, `<${tag}${attrs}> has a label (for its id) or an aria-label`).toBe(true);
  }
}

/** A form of the group page with every field as the API has it (check boxes "1" when on). */
function groupForm(g: any, overrides: Record<string, string> = {}): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(g)) {
    if (typeof v === "boolean") {
      if (v) fields[k] = "1";
    } else if (typeof v === "number") fields[k] = String(v);
    else if (v === null) fields[k] = "";
    else if (typeof v === "string") fields[k] = v;
  }
  for (const e of g.allowed_extensions as string[]) fields[`ext_${e}`] = "1";
  (g.strategy_ids as number[]).forEach((id, i) => (fields[`position_${id}`] = String(i + 1)));
  delete fields.id;
  delete fields.is_guest;
  // the form's units: megapixels, and the retention as a choice (any stored value is one, so it saves back unchanged)
  fields.max_pixels = String(g.max_pixels / 1_000_000);
  fields.retention_max_seconds_preset = g.retention_max_seconds === null ? "" : String(g.retention_max_seconds);
  delete fields.retention_max_seconds;
  const result = { ...fields, ...overrides };
  for (const [k, v] of Object.entries(overrides)) if (v === "\0") delete result[k];
  return result;
}

describe("pages", () => {
  test("each page renders for an administrator, labelled, no duplicate ids; the guest group is marked", async () => {
    const { visitor } = await signedIn();
    const pages = [
      "/user/admin/groups",
      "/user/admin/groups/new",
      `/user/admin/groups/${ctx.defaultGroupId}`,
      `/user/admin/groups/${ctx.guestGroupId}`,
      "/user/admin/strategies",
      "/user/admin/strategies/new?driver=local",
      "/user/admin/strategies/new?driver=s3",
      `/user/admin/strategies/${ctx.localStrategyId}`,
      "/user/admin/settings",
    ];
    for (const page of pages) {
      const res = await visitor.get(page);
      expect(res.status, page).toBe(200);
      const html = await res.text();
      expect(html, page).toContain('class="admin-nav"');
      expect(html, page).not.toContain("<script>");
      expect(html, page).not.toMatch(/\sstyle="/);
      expectUniqueIds(html);
      expectLabelled(html);
    }
    const list = await (await visitor.get("/user/admin/groups")).text();
    expect(list).toMatch(/>Guests<\/a><span class="badge">guest<\/span>/);
    expect(await (await visitor.get(`/user/admin/groups/${ctx.guestGroupId}`)).text()).toContain("This is the <strong>guest group</strong>");
    expect(await (await visitor.get(`/user/admin/groups/${ctx.defaultGroupId}`)).text()).not.toContain("guest group</strong>");
    for (const legend of [
      "Access",
      "Size and capacity",
      "Upload frequency",
      "Allowed formats",
      "Storage strategies, in order",
      "Metadata and processing on upload",
      "Content review",
    ]) {
      expect(await (await visitor.get("/user/admin/groups/new")).text()).toContain(`<legend>${legend}</legend>`);
    }
    expect(await (await visitor.get("/user/admin/groups/999999")).status).toBe(404);
    expect(await (await visitor.get("/user/admin/groups/abc")).status).toBe(404);
    expect(await (await visitor.get("/user/admin/strategies/99999999999")).status).toBe(404);
  });
});

describe("groups", () => {
  test("create: every field through the form, as the API then shows it; the audit log names the administrator", async () => {
    const admin = await signedIn();
    const s2 = await ctx.admin("POST", "/api/admin/strategies", { name: uniqueName("st"), driver: "local", config: { root: join(ctx.dataDir, "s2") } });
    const name = uniqueName("grp");
    const res = await admin.visitor.post("/user/admin/groups", {
      name,
      enabled: "1",
      max_file_size_kb: "2048",
      max_pixels: "5",
      default_capacity_kb: "0",
      retention_max_seconds_preset: "86400",
      uploads_per_minute: "5",
      uploads_per_hour: "",
      uploads_per_day: "100",
      uploads_per_week: "",
      uploads_per_month: "",
      concurrent_uploads: "2",
      ext_png: "1",
      ext_webp: "1",
      [`position_${s2.id}`]: "1",
      [`position_${ctx.localStrategyId}`]: "2",
      metadata: "strip_all",
      convert_format: "webp",
      convert_quality: "70",
      max_width: "1920",
      max_height: "",
      jpeg_max_quality: "85",
      review_provider: "webhook",
      review_webhook_url: "https://review.example/hook",
      review_timeout_ms: "3000",
      review_fail_open: "1",
    });
    expect([res.status, location(res)]).toEqual([303, "/user/admin/groups?done=created"]);
    const g = await groupByName(name);
    expect(g).toMatchObject({
      enabled: true,
      allow_api: false,
      is_default: false,
      is_guest: false,
      max_file_size_kb: 2048,
      max_pixels: 5_000_000,
      default_capacity_kb: 0,
      retention_max_seconds: 86400,
      uploads_per_minute: 5,
      uploads_per_hour: null,
      uploads_per_day: 100,
      concurrent_uploads: 2,
      allowed_extensions: ["png", "webp"],
      strategy_ids: [s2.id, ctx.localStrategyId],
      metadata: "strip_all",
      convert_format: "webp",
      convert_quality: 70,
      max_width: 1920,
      max_height: null,
      jpeg_max_quality: 85,
      review_provider: "webhook",
      review_webhook_url: "https://review.example/hook",
      review_timeout_ms: 3000,
      review_fail_open: true,
    });
    const entry = await expectAudited("POST /api/admin/groups", admin);
    expect(entry.detail.name).toBe(name);
    const listed = await (await admin.visitor.get("/user/admin/groups?done=created")).text();
    expect(listed).toContain("Group created.");
    expect(listed).toContain(`href="/user/admin/groups/${g.id}"`);
    expect(listed).toContain(`${s2.name} → `);
    // the edit form shows what is stored, strategies in their order
    const edit = await (await admin.visitor.get(`/user/admin/groups/${g.id}`)).text();
    expect(edit).toContain(`name="position_${s2.id}" min="1" max="100" step="1" inputmode="numeric" class="position" value="1"`);
    expect(edit.indexOf(`position_${s2.id}"`)).toBeLessThan(edit.indexOf(`position_${ctx.localStrategyId}"`));
    expect(edit).toMatch(/name="ext_png" value="1" checked=""/);
    expect(edit).not.toMatch(/name="ext_gif" value="1" checked/);
    expect(edit).toMatch(/<option value="strip_all" selected="">/);
  });

  test("edit: PATCH of every field; limits emptied become none; reordered strategies; the guest group too", async () => {
    const admin = await signedIn();
    const created = await ctx.admin("POST", "/api/admin/groups", { name: uniqueName("grp"), uploads_per_hour: 10, max_height: 500 });
    const s3 = await ctx.admin("POST", "/api/admin/strategies", { name: uniqueName("st"), driver: "local", config: { root: join(ctx.dataDir, "s3") } });
    const form = groupForm(created, {
      uploads_per_hour: "",
      max_height: "",
      allow_api: "\0",
      concurrent_uploads: "3",
      [`position_${s3.id}`]: "2",
      [`position_${ctx.localStrategyId}`]: "1",
      metadata: "keep",
      ext_avif: "\0",
    });
    const res = await admin.visitor.post(`/user/admin/groups/${created.id}`, form);
    expect([res.status, location(res)]).toEqual([303, `/user/admin/groups/${created.id}?done=saved`]);
    const g = await groupById(created.id);
    expect(g).toMatchObject({
      uploads_per_hour: null,
      max_height: null,
      allow_api: false,
      concurrent_uploads: 3,
      metadata: "keep",
      strategy_ids: [ctx.localStrategyId, s3.id],
    });
    expect(g.allowed_extensions).not.toContain("avif");
    expect(g.allowed_extensions).toContain("png");
    expect({
      ...g,
      allow_api: true,
      uploads_per_hour: 10,
      max_height: 500,
      concurrent_uploads: null,
      metadata: created.metadata,
      strategy_ids: created.strategy_ids,
      allowed_extensions: created.allowed_extensions,
    }).toEqual(created);
    const entry = await expectAudited("PATCH /api/admin/groups/{id}", admin);
    expect(entry.target_id).toBe(String(created.id));
    expect(await (await admin.visitor.get(`/user/admin/groups/${created.id}?done=saved`)).text()).toContain("Group saved.");

    // the guest group's form saves like any other
    const guest = await groupById(ctx.guestGroupId);
    const saved = await admin.visitor.post(
      `/user/admin/groups/${ctx.guestGroupId}`,
      groupForm(guest, { max_file_size_kb: String(guest.max_file_size_kb + 1) }),
    );
    expect(saved.status).toBe(303);
    expect((await groupById(ctx.guestGroupId)).max_file_size_kb).toBe(guest.max_file_size_kb + 1);
    expect(await admin.visitor.post(`/user/admin/groups/${ctx.guestGroupId}`, groupForm(guest))).toHaveProperty("status", 303);
  });

  test("human units: sizes with a unit, pixels in megapixels, the retention as presets; a stored group saves back exactly", async () => {
    const admin = await signedIn();
    const created = await ctx.admin("POST", "/api/admin/groups", {
      name: uniqueName("grp"),
      max_file_size_kb: 20_480,
      default_capacity_kb: 1536,
      max_pixels: 5_000_001,
      retention_max_seconds: 90,
    });
    const edit = await (await admin.visitor.get(`/user/admin/groups/${created.id}`)).text();
    expect(edit).toMatch(/id="max-file-size-kb" name="max_file_size_kb" type="number"[^>]* value="20"/);
    expect(edit).toMatch(
      /<select name="max_file_size_kb_unit" aria-label="Unit of Largest file"><option value="KB">KB<\/option><option value="MB" selected="">MB/,
    );
    expect(edit).toMatch(/id="default-capacity-kb" name="default_capacity_kb" type="number"[^>]* value="1536"/);
    expect(edit).toMatch(/id="max-pixels" name="max_pixels" type="number"[^>]* value="5.000001"/);
    expect(edit).toContain('<option value="90" selected="">90 seconds</option>');
    expect(edit).toContain('<option value="86400">1 day</option>');
    // saved as shown: nothing changes
    expect((await admin.visitor.post(`/user/admin/groups/${created.id}`, groupForm(created))).status).toBe(303);
    expect(await groupById(created.id)).toEqual(created);
    // 2 MB, 1.5 MP and a custom 3 hours, as the API counts them
    const changed = groupForm(created, {
      max_file_size_kb: "2",
      max_file_size_kb_unit: "MB",
      max_pixels: "1.5",
      retention_max_seconds_preset: "custom",
      retention_max_seconds_custom: "3",
      retention_max_seconds_unit: "hours",
    });
    expect((await admin.visitor.post(`/user/admin/groups/${created.id}`, changed)).status).toBe(303);
    expect(await groupById(created.id)).toMatchObject({ max_file_size_kb: 2048, max_pixels: 1_500_000, retention_max_seconds: 10_800 });
    // a custom duration that is no whole number: the form's own message, nothing saved
    const bad = await admin.visitor.post(`/user/admin/groups/${created.id}`, { ...changed, retention_max_seconds_custom: "1.5" });
    expect(bad.status).toBe(422);
    expect(errorOf(await bad.text(), "retention-max-seconds")).toBe("Choose a duration, or give a whole number of minutes, hours or days.");
    expect((await groupById(created.id)).retention_max_seconds).toBe(10_800);
  });

  test("invalid input re-renders the form with the API's message next to the field, and changes nothing", async () => {
    const admin = await signedIn();
    const created = await ctx.admin("POST", "/api/admin/groups", { name: uniqueName("grp") });
    const auditBefore = (await auditLog()).length;
    const sizeError = "Give a size: a number of KB, MB or GB (1 KB – 1 GB).";
    const cases: [Record<string, string>, string, string, Record<string, unknown>, string?][] = [
      [{ max_file_size_kb: "0" }, "max_file_size_kb", "max-file-size-kb", { max_file_size_kb: 0 }, sizeError],
      [{ max_file_size_kb: "lots" }, "max_file_size_kb", "max-file-size-kb", { max_file_size_kb: "lots" }, sizeError],
      [{ max_file_size_kb: "2", max_file_size_kb_unit: "GB" }, "max_file_size_kb", "max-file-size-kb", { max_file_size_kb: 2 * 1024 * 1024 }, sizeError],
      [{ max_pixels: "2000" }, "max_pixels", "max-pixels", { max_pixels: 2_000_000_000 }, "Give a number of megapixels (0.000001 – 1000 MP)."],
      [{ uploads_per_minute: "-1" }, "uploads_per_minute", "group-uploads-per-minute", { uploads_per_minute: -1 }],
      [{ convert_quality: "101" }, "convert_quality", "group-convert-quality", { convert_quality: 101 }],
      [{ review_webhook_url: "not a url" }, "review_webhook_url", "group-review-webhook-url", { review_webhook_url: "not a url" }],
      [{ name: "" }, "name", "group-name", { name: "" }],
      [{ metadata: "shred" }, "metadata", "group-metadata", { metadata: "shred" }],
    ];
    for (const [override, field, id, apiBody, own] of cases) {
      const api = await adminJson("PATCH", `/api/admin/groups/${created.id}`, apiBody);
      expectStatus(api, 422);
      // a field in other units than the API's speaks in the form's words
      const message = own ?? api.body.errors[field][0];
      const res = await admin.visitor.post(`/user/admin/groups/${created.id}`, groupForm(created, override));
      expect(res.status, field).toBe(422);
      const html = await res.text();
      expect(errorOf(html, id), field).toBe(message);
      expect(html).toContain(`id="${id}" name="${field}"`);
      expect(html).toMatch(new RegExp(`id="${id}"[^>]*aria-invalid="true"[^>]*aria-describedby="[^"]*${id}-error`));
      expect(html).toContain("The group was not saved");
      if (field !== "name" && field !== "metadata") expect(html).toContain(`value="${override[field]!.replace(/ /g, " ")}"`); // kept as typed
    }
    // no format: the API's message for allowed_extensions
    const none = Object.fromEntries(Object.entries(groupForm(created)).filter(([k]) => !k.startsWith("ext_")));
    const api = await adminJson("PATCH", `/api/admin/groups/${created.id}`, { allowed_extensions: [] });
    const noneHtml = await (await admin.visitor.post(`/user/admin/groups/${created.id}`, none)).text();
    expect(errorOf(noneHtml, "group-extensions")).toBe(api.body.errors.allowed_extensions[0]);
    // two strategies at one position, a position that is no number: the page's own message
    const s = await ctx.admin("POST", "/api/admin/strategies", { name: uniqueName("st"), driver: "local", config: {} });
    const twin = await admin.visitor.post(
      `/user/admin/groups/${created.id}`,
      groupForm(created, { [`position_${s.id}`]: "1", [`position_${ctx.localStrategyId}`]: "1" }),
    );
    expect(twin.status).toBe(422);
    expect(errorOf(await twin.text(), "group-strategies")).toContain("share position 1");
    const nan = await admin.visitor.post(`/user/admin/groups/${created.id}`, groupForm(created, { [`position_${s.id}`]: "first" }));
    expect(errorOf(await nan.text(), "group-strategies")).toContain("must be a whole number from 1 to 100");
    // a new group with an error: the form keeps what was typed
    const newName = uniqueName("grp");
    const bad = await admin.visitor.post("/user/admin/groups", {
      name: newName,
      max_file_size_kb: "9999999",
      ext_png: "1",
      convert_quality: "80",
      max_pixels: "1",
      default_capacity_kb: "1",
      review_timeout_ms: "5000",
      metadata: "keep",
      review_provider: "none",
    });
    expect(bad.status).toBe(422);
    const badHtml = await bad.text();
    expect(badHtml).toContain(`value="${newName}"`);
    expect(errorOf(badHtml, "max-file-size-kb")).toBe("Give a size: a number of KB, MB or GB (1 KB – 1 GB).");
    expect(await groupByName(newName)).toBeUndefined();
    expect(await groupById(created.id)).toEqual(created);
    // what the API refused was not logged; the direct API calls above were refused too
    expect((await auditLog()).length).toBe(auditBefore + 1); // the strategy created by ADMIN_TOKEN
  });
});

describe("strategies", () => {
  const SECRET = "s3cr3t-Very-Long-Secret-Value-1234567890";
  const KEY_ID = "AKIAEXAMPLEKEYID0001";

  test("create local and S3 strategies through the forms; edit keeps, replaces and clears the secrets; no secret in any page", async () => {
    const admin = await signedIn();
    const pagesSeen: string[] = [];
    const see = async (path: string) => {
      const res = await admin.visitor.get(path);
      expect(res.status, path).toBe(200);
      const html = await res.text();
      pagesSeen.push(html);
      return html;
    };
    // local
    const localName = uniqueName("loc");
    const made = await admin.visitor.post("/user/admin/strategies", {
      driver: "local",
      name: localName,
      root: join(ctx.dataDir, "made"),
      url: "https://cdn.example/made",
      quota_kb: "2048",
      enabled: "1",
    });
    expect([made.status, location(made)]).toEqual([303, "/user/admin/strategies?done=created"]);
    const local = ((await ctx.admin("GET", "/api/admin/strategies?per_page=500")).strategies as any[]).find((s) => s.name === localName);
    expect(local).toMatchObject({
      driver: "local",
      config: { root: join(ctx.dataDir, "made"), url: "https://cdn.example/made" },
      quota_kb: 2048,
      enabled: true,
      used_kb: 0,
    });
    await expectAudited("POST /api/admin/strategies", admin);
    const list = await see("/user/admin/strategies?done=created");
    expect(list).toContain("Strategy created.");
    expect(list).toContain(`aria-label="Edit the strategy ${localName}"`);
    expect(list).toContain("2 MB (0% used)");
    expect(list).toContain(`aria-label="Test the storage of ${localName}"`);

    // S3, with both secrets
    const s3Name = uniqueName("s3");
    const s3Made = await admin.visitor.post("/user/admin/strategies", {
      driver: "s3",
      name: s3Name,
      bucket: "pictures",
      url: "https://pictures.example",
      endpoint: "http://127.0.0.1:9",
      region: "us-east-1",
      prefix: "img",
      access_key_id: KEY_ID,
      secret_access_key: SECRET,
      quota_kb: "",
    });
    expect(s3Made.status).toBe(303);
    const s3 = ((await ctx.admin("GET", "/api/admin/strategies?per_page=500")).strategies as any[]).find((s) => s.name === s3Name);
    expect(s3).toMatchObject({
      driver: "s3",
      quota_kb: null,
      enabled: false,
      config: {
        bucket: "pictures",
        url: "https://pictures.example",
        endpoint: "http://127.0.0.1:9",
        region: "us-east-1",
        prefix: "img",
        secret_access_key: "********",
      },
    });
    expect(await storedConfig(s3.id)).toMatchObject({ access_key_id: KEY_ID, secret_access_key: SECRET });
    const created = await expectAudited("POST /api/admin/strategies", admin);
    expect(created.detail.config).toMatchObject({ access_key_id: "(set)", secret_access_key: "(set)" });

    const edit = await see(`/user/admin/strategies/${s3.id}`);
    expect(edit).toContain('id="strategy-secret-access-key" name="secret_access_key" type="password" autocomplete="new-password"');
    expect(edit).toContain("Set. Never shown.");
    expect(edit).toContain('name="clear_secret_access_key"');
    expect(edit).toContain('value="pictures"');

    // an empty secret keeps the stored one
    const keep = await admin.visitor.post(`/user/admin/strategies/${s3.id}`, {
      name: s3Name,
      bucket: "pictures2",
      url: "https://pictures.example",
      endpoint: "http://127.0.0.1:9",
      region: "us-east-1",
      prefix: "img",
      access_key_id: "",
      secret_access_key: "",
      enabled: "1",
    });
    expect([keep.status, location(keep)]).toEqual([303, `/user/admin/strategies/${s3.id}?done=saved`]);
    expect(await storedConfig(s3.id)).toEqual({
      bucket: "pictures2",
      url: "https://pictures.example",
      endpoint: "http://127.0.0.1:9",
      region: "us-east-1",
      prefix: "img",
      access_key_id: KEY_ID,
      secret_access_key: SECRET,
    });
    expect((await strategyById(s3.id)).enabled).toBe(true);
    const patched = await expectAudited("PATCH /api/admin/strategies/{id}", admin);
    expect(JSON.stringify(patched.detail)).not.toContain(SECRET);
    expect(await see(`/user/admin/strategies/${s3.id}?done=saved`)).toContain("Strategy saved.");

    // a new secret replaces it
    const NEW_SECRET = "another-secret-value-0987654321";
    await admin.visitor.post(`/user/admin/strategies/${s3.id}`, {
      name: s3Name,
      bucket: "pictures2",
      url: "https://pictures.example",
      secret_access_key: NEW_SECRET,
      enabled: "1",
    });
    expect(await storedConfig(s3.id)).toEqual({ bucket: "pictures2", url: "https://pictures.example", access_key_id: KEY_ID, secret_access_key: NEW_SECRET });
    await see(`/user/admin/strategies/${s3.id}`);

    // the check boxes clear them
    await admin.visitor.post(`/user/admin/strategies/${s3.id}`, {
      name: s3Name,
      bucket: "pictures2",
      url: "https://pictures.example",
      clear_secret_access_key: "1",
      clear_access_key_id: "1",
      enabled: "1",
    });
    expect(await storedConfig(s3.id)).toEqual({ bucket: "pictures2", url: "https://pictures.example" });
    const cleared = await see(`/user/admin/strategies/${s3.id}`);
    expect(cleared).toContain("Not set. Never shown.");
    expect(cleared).not.toContain('name="clear_secret_access_key"');

    // a refused form with secrets typed: re-rendered without them
    const refused = await admin.visitor.post("/user/admin/strategies", {
      driver: "s3",
      name: uniqueName("s3"),
      bucket: "b",
      url: "not a url",
      access_key_id: KEY_ID,
      secret_access_key: SECRET,
    });
    expect(refused.status).toBe(422);
    const refusedHtml = await refused.text();
    pagesSeen.push(refusedHtml);
    expect(refusedHtml).toContain("Secrets are not kept after a refusal");
    // and the lists, the test result
    await admin.visitor.post(`/user/admin/strategies/${s3.id}`, {
      name: s3Name,
      bucket: "pictures2",
      url: "https://pictures.example",
      endpoint: "http://127.0.0.1:9",
      access_key_id: KEY_ID,
      secret_access_key: SECRET,
      enabled: "",
    });
    pagesSeen.push(await (await admin.visitor.post(`/user/admin/strategies/${s3.id}/test`)).text());
    for (const page of [
      "/user/admin/strategies",
      `/user/admin/strategies/${s3.id}`,
      "/user/admin/groups",
      "/user/admin/groups/new",
      `/user/admin/groups/${ctx.defaultGroupId}`,
      "/user/admin/settings",
    ])
      await see(page);
    for (const html of pagesSeen) {
      expect(html).not.toContain(SECRET);
      expect(html).not.toContain(NEW_SECRET);
      expect(html).not.toContain(KEY_ID);
      expect(html).not.toContain("********");
    }
  });

  test("invalid input: the API's message next to the field (config.* too), nothing changes", async () => {
    const admin = await signedIn();
    const s3 = await ctx.admin("POST", "/api/admin/strategies", {
      name: uniqueName("s3"),
      driver: "s3",
      config: { bucket: "b", url: "https://b.example", secret_access_key: SECRET },
    });
    const before = await storedConfig(s3.id);
    const cases: [Record<string, string>, string, string, Record<string, unknown>][] = [
      [{ url: "not a url" }, "url", "strategy-url", { config: { bucket: "b", url: "not a url" } }],
      [{ bucket: "" }, "bucket", "strategy-bucket", { config: { url: "https://b.example" } }],
      [{ endpoint: "nowhere" }, "endpoint", "strategy-endpoint", { config: { bucket: "b", url: "https://b.example", endpoint: "nowhere" } }],
      [{ name: "" }, "name", "strategy-name", { name: "" }],
      [{ quota_kb: "-5" }, "quota_kb", "quota-kb", { quota_kb: -5 }],
    ];
    for (const [override, field, id, apiBody] of cases) {
      const api = await adminJson("PATCH", `/api/admin/strategies/${s3.id}`, apiBody);
      expectStatus(api, 422);
      const key = Object.keys(api.body.errors)[0]!;
      expect(key.replace(/^config\./, ""), field).toBe(field);
      const res = await admin.visitor.post(`/user/admin/strategies/${s3.id}`, { name: s3.name, bucket: "b", url: "https://b.example", ...override });
      expect(res.status, field).toBe(422);
      const html = await res.text();
      expect(errorOf(html, id), field).toBe(field === "quota_kb" ? "Give a size: a number of KB, MB or GB (≥ 0 KB)." : api.body.errors[key][0]);
      expect(html).toMatch(new RegExp(`id="${id}"[^>]*aria-invalid="true"`));
      expect(html).not.toContain(SECRET);
    }
    expect(await storedConfig(s3.id)).toEqual(before);
    expect(await strategyById(s3.id)).toEqual(s3);
    // a new local strategy with a bad address
    const localRes = await admin.visitor.post("/user/admin/strategies", { driver: "local", name: uniqueName("loc"), url: "not a url" });
    expect(localRes.status).toBe(422);
    expect(errorOf(await localRes.text(), "strategy-url")).toMatch(/^The url field is invalid/);
    const noDriver = await admin.visitor.post("/user/admin/strategies", { driver: "ftp", name: uniqueName("x") });
    expect(noDriver.status).toBe(422);
    expect(await noDriver.text()).toContain("Choose the driver: local or s3.");
  });

  test("Test: the probe's result for a working local storage, a local root that is a file, an S3 endpoint that refuses; the API endpoint", async () => {
    const admin = await signedIn();
    const ok = await admin.visitor.post(`/user/admin/strategies/${ctx.localStrategyId}/test`);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain(`Test of strategy #${ctx.localStrategyId} `);
    const okHtml = await (await admin.visitor.post(`/user/admin/strategies/${ctx.localStrategyId}/test`)).text();
    expect(okHtml).toMatch(/<p class="notice success" role="status">Test of strategy #\d+ [^<]*its storage is writable/);
    await expectAudited("POST /api/admin/strategies/{id}/test", admin);

    const file = join(ctx.dataDir, "a-file");
    writeFileSync(file, "not a directory");
    const broken = await ctx.admin("POST", "/api/admin/strategies", { name: uniqueName("file"), driver: "local", config: { root: file }, enabled: false });
    const brokenHtml = await (await admin.visitor.post(`/user/admin/strategies/${broken.id}/test`)).text();
    expect(brokenHtml).toMatch(/<p class="notice error" role="alert">Test of strategy #\d+ [^<]*its storage is not writable: path is not a directory\./);

    // an S3 endpoint on a closed loopback port
    const port = await freePort();
    const s3 = await ctx.admin("POST", "/api/admin/strategies", {
      name: uniqueName("s3"),
      driver: "s3",
      enabled: false,
      config: {
        bucket: "b",
        url: "https://b.example",
        endpoint: `http://127.0.0.1:${port}`,
        region: "us-east-1",
        access_key_id: "AKIACLOSEDPORT000",
        secret_access_key: "closed-port-secret-value",
      },
    });
    const s3Html = await (await admin.visitor.post(`/user/admin/strategies/${s3.id}/test`)).text();
    expect(s3Html).toMatch(/<p class="notice error" role="alert">Test of strategy #\d+ [^<]*its storage is not writable: /);
    expect(s3Html).not.toContain("closed-port-secret-value");
    expect(s3Html).not.toContain("AKIACLOSEDPORT000");

    // the API: a refusal is a result, a missing strategy a 404
    expect(expectStatus(await adminJson("POST", `/api/admin/strategies/${ctx.localStrategyId}/test`), 200).data).toEqual({ writable: true });
    const refused = expectStatus(await adminJson("POST", `/api/admin/strategies/${broken.id}/test`), 200).data;
    expect(refused.writable).toBe(false);
    expect(refused.reason).toBe("path is not a directory");
    expect(expectStatus(await adminJson("POST", `/api/admin/strategies/${s3.id}/test`), 200).data).toEqual({ writable: false, reason: "endpoint unreachable" });
    expectStatus(await adminJson("POST", "/api/admin/strategies/999999/test"), 404);
    expectStatus(await adminJson("POST", "/api/admin/strategies/0x1/test"), 422);
    expectStatus(await ctx.json(`/api/admin/strategies/${ctx.localStrategyId}/test`, { method: "POST" }), 401);
    expect((await admin.visitor.post("/user/admin/strategies/999999/test")).status).toBe(404);
  });

  test("Test never echoes a remote endpoint: its message and error code give way to a fixed reason", async () => {
    // an "S3 endpoint" whose every answer is an error with words of its own
    const LEAK = "REMOTE-WORDS <script>alert(1)</script> visit evil.example";
    const codes: Record<string, [number, string]> = {
      denied: [403, "AccessDenied"],
      missing: [404, "NoSuchBucket"],
      keys: [403, "InvalidAccessKeyId"],
      odd: [500, LEAK.replace(/\W/g, "")],
    };
    const remote = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req) {
        const [status, code] = codes[new URL(req.url).pathname.split("/")[1]!] ?? [500, "InternalError"];
        return new Response(`<?xml version="1.0"?><Error><Code>${code}</Code><Message>${LEAK}</Message></Error>`, {
          status,
          headers: { "content-type": "application/xml" },
        });
      },
    });
    try {
      const expected: Record<string, string> = {
        denied: "access denied",
        missing: "bucket not found",
        keys: "credentials refused",
        odd: "endpoint refused the write",
      };
      for (const [bucket, reason] of Object.entries(expected)) {
        const s3 = await ctx.admin("POST", "/api/admin/strategies", {
          name: uniqueName("remote"),
          driver: "s3",
          enabled: false,
          config: {
            bucket,
            url: "https://b.example",
            endpoint: `http://127.0.0.1:${remote.port}`,
            region: "us-east-1",
            access_key_id: "AKIAREMOTE0000",
            secret_access_key: "remote-secret-value",
          },
        });
        const res = await adminJson("POST", `/api/admin/strategies/${s3.id}/test`);
        expect(expectStatus(res, 200).data, bucket).toEqual({ writable: false, reason });
        const html = await (await (await signedIn()).visitor.post(`/user/admin/strategies/${s3.id}/test`)).text();
        expect(html).toContain(`its storage is not writable: ${reason}.`);
        for (const text of [JSON.stringify(res.body), html]) {
          expect(text).not.toContain("REMOTE-WORDS");
          expect(text).not.toContain("evil.example");
          expect(text).not.toContain(codes.odd![1]);
        }
      }
    } finally {
      remote.stop(true);
    }
  });
});

describe("settings", () => {
  test("the three switches through the form, as the API then shows them; the audit log names the administrator", async () => {
    const admin = await signedIn();
    const before = await ctx.admin("GET", "/api/admin/settings");
    const res = await admin.visitor.post("/user/admin/settings", {
      api_enabled: "1",
      guest_upload_enabled: before.guest_upload_enabled ? "" : "1",
      registration_enabled: before.registration_enabled ? "" : "1",
      password_sign_in: "1",
    });
    expect([res.status, location(res)]).toEqual([303, "/user/admin/settings?done=saved"]);
    expect(await ctx.admin("GET", "/api/admin/settings")).toEqual({
      api_enabled: true,
      guest_upload_enabled: !before.guest_upload_enabled,
      registration_enabled: !before.registration_enabled,
      password_sign_in: true,
      // the second factor and the site's identity, untouched by a form that does not send them
      require_second_factor: before.require_second_factor,
      site_name: "",
      site_logo: null,
      site_favicon: null,
      accent_color: "",
      default_locale: "en",
    });
    const entry = await expectAudited("PATCH /api/admin/settings", admin);
    expect(entry.detail).toEqual({
      api_enabled: true,
      guest_upload_enabled: !before.guest_upload_enabled,
      registration_enabled: !before.registration_enabled,
      password_sign_in: true,
    });
    const page = await (await admin.visitor.get("/user/admin/settings?done=saved")).text();
    expect(page).toContain("Settings saved.");
    expect(page).toMatch(/name="api_enabled" value="1" checked=""/);
    await ctx.admin("PATCH", "/api/admin/settings", before);
  });

  test("with the site switch off the admin pages still work for an administrator, who can turn it back on", async () => {
    const admin = await signedIn();
    const plain = await signedIn("user");
    const before = await ctx.admin("GET", "/api/admin/settings");
    await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: false });
    try {
      expect((await admin.visitor.get("/user/dashboard")).status).toBe(403);
      expect((await plain.visitor.get("/user/admin/settings")).status).toBe(403);
      for (const page of [
        "/user/admin/groups",
        "/user/admin/groups/new",
        "/user/admin/strategies",
        `/user/admin/strategies/${ctx.localStrategyId}`,
        "/user/admin/settings",
      ]) {
        expect((await admin.visitor.get(page)).status, page).toBe(200);
      }
      expect(await (await admin.visitor.get("/user/admin/settings")).text()).toContain("The API and the user center are switched off");
      const tested = await admin.visitor.post(`/user/admin/strategies/${ctx.localStrategyId}/test`);
      expect(tested.status).toBe(200);
      const g = await groupById(ctx.defaultGroupId);
      expect((await admin.visitor.post(`/user/admin/groups/${ctx.defaultGroupId}`, groupForm(g))).status).toBe(303);
      const on = await admin.visitor.post("/user/admin/settings", { api_enabled: "1" });
      expect(on.status).toBe(303);
      expect((await ctx.admin("GET", "/api/admin/settings")).api_enabled).toBe(true);
      expect((await admin.visitor.get("/user/dashboard")).status).toBe(200);
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { ...before, api_enabled: true });
    }
  });
});

describe("authorization", () => {
  test("every page and form post: anonymous → sign-in, a user → 403, an administrator → served, a disabled administrator → sign-in, cross-site → 403 and nothing changes", async () => {
    const g = await ctx.admin("POST", "/api/admin/groups", { name: uniqueName("grp") });
    const s = await ctx.admin("POST", "/api/admin/strategies", { name: uniqueName("st"), driver: "local", config: {} });
    const settings = await ctx.admin("GET", "/api/admin/settings");
    const pages = [
      "/user/admin/groups",
      "/user/admin/groups/new",
      `/user/admin/groups/${g.id}`,
      "/user/admin/strategies",
      "/user/admin/strategies/new?driver=s3",
      `/user/admin/strategies/${s.id}`,
      "/user/admin/settings",
    ];
    const renamed = uniqueName("changed");
    const posts: [string, Record<string, string>][] = [
      ["/user/admin/groups", { ...groupForm(g, { name: renamed }) }],
      [`/user/admin/groups/${g.id}`, groupForm(g, { name: renamed })],
      ["/user/admin/strategies", { driver: "local", name: renamed }],
      [`/user/admin/strategies/${s.id}`, { name: renamed }],
      [`/user/admin/strategies/${s.id}/test`, {}],
      [
        "/user/admin/settings",
        { api_enabled: "1", guest_upload_enabled: settings.guest_upload_enabled ? "" : "1", registration_enabled: settings.registration_enabled ? "" : "1" },
      ],
    ];
    const state = async () => ({
      groups: await ctx.db.select().from(groups),
      strategies: await ctx.db.select().from(strategies),
      settings: await ctx.admin("GET", "/api/admin/settings"),
      audit: (await auditLog()).length,
    });
    const anonymous = new Visitor();
    const plain = await signedIn("user");
    const admin = await signedIn();
    const disabled = await signedIn();
    const initial = await state();

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
      expect((await admin.visitor.post(path, fields, { origin: null })).status, `${path} with no Origin`).toBe(403);
    }
    expect(await state()).toEqual(initial);

    // the administrator's own posts go through (one each)
    const served = [];
    for (const [path, fields] of posts) served.push((await admin.visitor.post(path, fields)).status);
    expect(served).toEqual([303, 303, 303, 303, 200, 303]);
    expect((await state()).audit).toBe(initial.audit + posts.length);

    // disabled administrators: their sessions have ended (a page and a post each, since the first answer forgets the cookie)
    await ctx.admin("PATCH", `/api/admin/users/${admin.user.id}`, { enabled: false });
    await ctx.admin("PATCH", `/api/admin/users/${disabled.user.id}`, { enabled: false });
    const afterDisabling = await state();
    for (const page of pages) {
      const again = new Visitor();
      again.cookie = admin.visitor.cookie;
      const res = await again.get(page);
      expect([res.status, location(res)], page).toEqual([303, `/user/login?next=${encodeURIComponent(page)}`]);
    }
    for (const [path, fields] of posts) {
      const again = new Visitor();
      again.cookie = disabled.visitor.cookie;
      again.formToken = disabled.visitor.formToken;
      const res = await again.post(path, fields);
      expect([res.status, location(res)], path).toEqual([303, "/user/login"]);
    }
    expect(await state()).toEqual(afterDisabling);
    await ctx.admin("PATCH", "/api/admin/settings", settings);
  });
});
