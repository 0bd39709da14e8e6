/** `bun run cli webhook ...`, a client of the admin API's site-wide webhook endpoints, against a real server. */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { main } from "../../src/cli/index.ts";
import { webhookDeliveries, webhookEndpoints } from "../../src/db/schema.ts";
import { createEndpoint } from "../../src/services/webhooks.ts";
import { parseAllowList } from "../../src/webhooks/address-guard.ts";
import { secretBox } from "../../src/webhooks/secret-box.ts";
import { makeImage } from "../support/images.ts";
import { ADMIN_TOKEN, createTestContext, type TestContext } from "../support/harness.ts";

setDefaultTimeout(60_000);

const box = secretBox(randomBytes(32));
let ctx: TestContext;
let server: ReturnType<typeof Bun.serve>;
let BASE_URL: string;
beforeAll(async () => {
  ctx = await createTestContext({ webhooks: { box, allow: parseAllowList("127.0.0.1") } });
  // WEBHOOK_ALLOW opens loopback to users' endpoints only by their group's grant
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { webhook_allow_internal: true });
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: ctx.app.fetch });
  BASE_URL = `http://127.0.0.1:${server.port}`;
});
afterAll(async () => {
  await server.stop(true);
  await ctx.close();
});

async function cli(args: string[], env: Record<string, string | undefined> = { BASE_URL, ADMIN_TOKEN }) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, env, { out: (s) => out.push(s), err: (s) => err.push(s) });
  return { code, out, err, stdout: out.join("\n"), stderr: err.join("\n") };
}
async function ok(...args: string[]) {
  const r = await cli(args);
  if (r.code !== 0) throw new Error(`cli ${args.join(" ")} → ${r.code}\n${r.stderr}`);
  expect(r.err).toEqual([]);
  return r.stdout;
}
const lines = (s: string) => s.trimEnd().split("\n");
const tableRows = (s: string) => lines(s).map((line) => line.split(/ {2,}/));
const HOOK = "http://127.0.0.1:9/cli-hook";
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const row = async (id: number) => (await ctx.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id)))[0]!;

describe("webhook commands", () => {
  test("help lists every webhook command", async () => {
    const r = await cli(["--help"], {});
    expect(r.code).toBe(0);
    for (const c of [
      "webhook list [--user <user>]",
      "webhook add <url> --events <e1,e2,...> [--description <text>]",
      "webhook show <id>",
      "webhook update <id>",
      "webhook remove <id>",
      "webhook rotate <id>",
      "webhook test <id>",
      "webhook deliveries <id> [--before <delivery-id>]",
      "webhook resend <id> <delivery-id>",
      "webhook resend-failed <id> --since <time>",
    ]) {
      expect(r.stdout).toContain(c);
    }
    const unknown = await cli(["webhook", "explode"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("webhook takes: list, add, show, update, remove, rotate, test, deliveries, resend, resend-failed");
  });

  test("add prints the endpoint and, last, the secret with a line saying it is shown once; it is what is sealed", async () => {
    const out = await ok("webhook", "add", HOOK, "--events", "image.uploaded, image.deleted", "--description", "CDN purge");
    const all = lines(out);
    const id = Number(/^Created webhook endpoint (\d+) for http:\/\/127\.0\.0\.1:9\/cli-hook\.$/.exec(all[0]!)![1]);
    expect(all.at(-2)).toBe("Signing secret (shown only once; it cannot be read back, only rotated):");
    const secret = all.at(-1)!;
    expect(secret).toMatch(SECRET);
    expect(out).toContain("events:          image.uploaded,image.deleted");
    expect(out).toContain("description:     CDN purge");
    expect(out).toContain("owner_id:        site-wide");
    const stored = await row(id);
    expect(stored).toMatchObject({ url: HOOK, description: "CDN purge", ownerId: null, events: ["image.uploaded", "image.deleted"] });
    expect(box.open(stored.secretSealed)).toBe(secret);

    // show and list never print it
    const shown = await ok("webhook", "show", String(id));
    expect(shown).toContain(`url:             ${HOOK}`);
    expect(shown).not.toContain("whsec_");
    const listed = await ok("webhook", "list");
    expect(listed).not.toContain("whsec_");
    const rows = tableRows(listed);
    expect(rows[0]).toEqual(["ID", "URL", "EVENTS", "ENABLED", "FAILING SINCE", "DESCRIPTION"]);
    expect(rows.find((r) => r[0] === String(id))).toEqual([String(id), HOOK, "image.uploaded,image.deleted", "yes", "-", "CDN purge"]);

    // --json: the API's data as is
    const json = JSON.parse(await ok("webhook", "add", HOOK, "--events", "user.disabled", "--json"));
    expect(json).toMatchObject({ url: HOOK, events: ["user.disabled"], enabled: true, owner_id: null });
    expect(json.secret).toMatch(SECRET);
  });

  test("refusals: missing --events, unknown event, loopback not allowed, bad id; exit 1 with the server's reason", async () => {
    const noEvents = await cli(["webhook", "add", HOOK]);
    expect([noEvents.code, noEvents.stderr]).toEqual([1, expect.stringContaining("webhook add needs --events <e1,e2,...>")]);
    const unknown = await cli(["webhook", "add", HOOK, "--events", "image.exploded"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("image.uploaded");
    const scheme = await cli(["webhook", "add", "ftp://example.com/x", "--events", "image.uploaded"]);
    expect(scheme.code).toBe(1);
    expect(scheme.stderr).toContain("ftp:");
    const badId = await cli(["webhook", "show", "abc"], {});
    expect([badId.code, badId.stderr]).toEqual([1, expect.stringContaining("endpoint id must be a positive integer id, got 'abc'")]);
    const missing = await cli(["webhook", "show", "99999999"]);
    expect([missing.code, missing.stderr]).toEqual([1, "error: Webhook endpoint not found."]);
    const noToken = await cli(["webhook", "list"], { BASE_URL, ADMIN_TOKEN: "wrong" });
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toContain("Check ADMIN_TOKEN");
    const nothing = await cli(["webhook", "update", "1"], {});
    expect([nothing.code, nothing.stderr]).toEqual([
      1,
      expect.stringContaining("webhook update needs at least one of --url, --events, --description, --enabled"),
    ]);
  });

  test("update, rotate, remove", async () => {
    const made = JSON.parse(await ok("webhook", "add", HOOK, "--events", "image.uploaded", "--json"));
    const off = await ok("webhook", "update", String(made.id), "--enabled", "false", "--events", "token.revoked", "--url", `${HOOK}/2`);
    expect(lines(off)[0]).toBe(`Updated webhook endpoint ${made.id}.`);
    expect(off).toContain("disabled_reason: switched off by its owner");
    expect(await row(made.id)).toMatchObject({ enabled: false, url: `${HOOK}/2`, events: ["token.revoked"] });
    expect(tableRows(await ok("webhook", "list")).find((r) => r[0] === String(made.id))![3]).toBe("no (switched off by its owner)");
    await ctx.db.update(webhookEndpoints).set({ failingSince: new Date() }).where(eq(webhookEndpoints.id, made.id));
    await ok("webhook", "update", String(made.id), "--enabled", "true");
    expect(await row(made.id)).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null, failingSince: null });
    const badBool = await cli(["webhook", "update", String(made.id), "--enabled", "maybe"]);
    expect([badBool.code, badBool.stderr]).toEqual([1, expect.stringContaining("--enabled must be true or false")]);

    const sealed = (await row(made.id)).secretSealed;
    const rotated = await ok("webhook", "rotate", String(made.id));
    expect(lines(rotated)[0]).toBe(`Rotated the signing secret of webhook endpoint ${made.id}; the old one no longer signs.`);
    expect(lines(rotated).at(-2)).toContain("shown only once");
    const secret = lines(rotated).at(-1)!;
    expect(secret).toMatch(SECRET);
    expect(secret).not.toBe(made.secret);
    const after = (await row(made.id)).secretSealed;
    expect(after).not.toBe(sealed);
    expect(box.open(after)).toBe(secret);

    expect(await ok("webhook", "remove", String(made.id))).toBe(`Deleted webhook endpoint ${made.id}.`);
    expect(await ctx.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.id, made.id))).toEqual([]);
    expect((await cli(["webhook", "remove", String(made.id)])).code).toBe(1);
  });

  test("test, deliveries, resend", async () => {
    const made = JSON.parse(await ok("webhook", "add", HOOK, "--events", "image.uploaded", "--json"));
    const tested = await ok("webhook", "test", String(made.id));
    const deliveryId = Number(/delivery (\d+) /.exec(tested)![1]);
    expect(tested).toBe(`Queued a test event for webhook endpoint ${made.id}: delivery ${deliveryId} (see: webhook deliveries ${made.id}).`);
    const [d] = await ctx.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId));
    expect(d).toMatchObject({ endpointId: made.id, eventType: "webhook.test", status: "pending" });

    const log = tableRows(await ok("webhook", "deliveries", String(made.id)));
    expect(log[0]).toEqual(["ID", "EVENT", "STATUS", "ATTEMPTS", "CODE", "LAST ATTEMPT", "NEXT ATTEMPT", "ERROR"]);
    expect(log).toHaveLength(2);
    expect(log[1]!.slice(0, 6)).toEqual([String(deliveryId), "webhook.test", "pending", "0", "-", "-"]);
    expect(log[1]![7]).toBe("-");
    expect(await ok("webhook", "deliveries", String(made.id), "--before", String(deliveryId))).toBe("(none)");

    const pending = await cli(["webhook", "resend", String(made.id), String(deliveryId)]);
    expect(pending.code).toBe(1);
    expect(pending.stderr).toContain("still pending");
    await ctx.db
      .update(webhookDeliveries)
      .set({ status: "failed", attempts: 8, lastStatusCode: 500, lastError: "answered 500" })
      .where(eq(webhookDeliveries.id, deliveryId));
    expect(await ok("webhook", "resend", String(made.id), String(deliveryId))).toBe(
      `Delivery ${deliveryId} of webhook endpoint ${made.id} will be sent again.`,
    );
    const [again] = await ctx.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId));
    expect(again!.status).toBe("pending");
    const json = JSON.parse(await ok("webhook", "deliveries", String(made.id), "--json"));
    expect(json.next_before).toBeNull();
    expect(json.deliveries[0]).toMatchObject({ id: deliveryId, status: "pending", event_type: "webhook.test" });
  });

  test("resend-failed: the failed deliveries since a time are sent again; refused while the endpoint is off", async () => {
    const made = JSON.parse(await ok("webhook", "add", `${HOOK}/again`, "--events", "image.uploaded", "--json"));
    await ok("webhook", "update", String(made.id), "--enabled", "false");
    const user = await ctx.createUser();
    const bytes = await makeImage("png", 20, 20);
    expect((await ctx.upload(user.token, { bytes, filename: "a.png", contentType: "image/png" })).status).toBe(200);
    const [missed] = await ctx.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, made.id));
    expect(missed).toMatchObject({ status: "failed", attempts: 0, lastError: "not sent: the endpoint was switched off" });
    const off = await cli(["webhook", "resend-failed", String(made.id), "--since", "2000-01-01 00:00:00"]);
    expect([off.code, off.stderr]).toEqual([1, expect.stringContaining("switch it on first")]);
    const noSince = await cli(["webhook", "resend-failed", String(made.id)]);
    expect([noSince.code, noSince.stderr]).toEqual([1, expect.stringContaining("--since")]);
    await ok("webhook", "update", String(made.id), "--enabled", "true");
    expect(await ok("webhook", "resend-failed", String(made.id), "--since", "2000-01-01 00:00:00")).toBe(
      `1 failed delivery of webhook endpoint ${made.id} will be sent again.`,
    );
    const [again] = await ctx.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, missed!.id));
    expect(again!.status).toBe("pending");
  });

  test("group set --webhook-allow-internal grants a group's members WEBHOOK_ALLOW", async () => {
    const made = JSON.parse(await ok("group", "create", `cli-grant-${Date.now()}`, "--json"));
    expect(made.webhook_allow_internal).toBe(false);
    const set = JSON.parse(await ok("group", "set", String(made.id), "--webhook-allow-internal", "true", "--json"));
    expect(set.webhook_allow_internal).toBe(true);
    expect(await ok("group", "list")).toContain("webhooks-internal");
  });

  test("list --user shows a user's own endpoints", async () => {
    const user = await ctx.createUser();
    const { endpoint } = await createEndpoint(ctx.deps, { ownerId: user.id }, { url: `${HOOK}/user`, events: ["token.revoked"] });
    const rows = tableRows(await ok("webhook", "list", "--user", user.username));
    expect(rows.slice(1)).toEqual([[String(endpoint.id), `${HOOK}/user`, "token.revoked", "yes", "-", "-"]]);
    expect(tableRows(await ok("webhook", "list", "--user", String(user.id))).slice(1)).toEqual(rows.slice(1));
    expect(tableRows(await ok("webhook", "list")).map((r) => r[0])).not.toContain(String(endpoint.id));
  });
});
