import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createTestContext, quietly, type TestContext, type TestUser } from "./support/harness.ts";
import { makeImage, multipart } from "./support/images.ts";

let ctx: TestContext;
let alice: TestUser;
let png: Uint8Array;

beforeAll(async () => {
  ctx = await createTestContext();
  alice = await ctx.createUser();
  png = await makeImage("png", 20, 20);
});
afterAll(() => ctx.close());

type Call = (headers: Record<string, string>) => Promise<Response>;

/** Every /api/v1 route, called with a valid request body so that only the credential decides. */
const routes: Record<string, { call: Call; temporaryAllowed: boolean; guestCapable: boolean }> = {
  "GET /profile": { call: (h) => ctx.request("/api/v1/profile", { headers: h }), temporaryAllowed: false, guestCapable: false },
  "GET /strategies": { call: (h) => ctx.request("/api/v1/strategies", { headers: h }), temporaryAllowed: false, guestCapable: true },
  "POST /upload": {
    call: (h) => {
      const m = multipart([{ name: "file", value: png, filename: "a.png", contentType: "image/png" }]);
      return ctx.request("/api/v1/upload", { method: "POST", headers: { ...h, "content-type": m.contentType }, body: m.body });
    },
    temporaryAllowed: true,
    guestCapable: true,
  },
  "GET /images": { call: (h) => ctx.request("/api/v1/images", { headers: h }), temporaryAllowed: false, guestCapable: false },
  "DELETE /images/{key}": {
    call: (h) => ctx.request("/api/v1/images/doesnotexist", { method: "DELETE", headers: h }),
    temporaryAllowed: false,
    guestCapable: false,
  },
  "POST /images/tokens": {
    call: (h) =>
      ctx.request("/api/v1/images/tokens", {
        method: "POST",
        headers: { ...h, "content-type": "application/json" },
        body: JSON.stringify({ num: 1, seconds: 60 }),
      }),
    temporaryAllowed: false,
    guestCapable: false,
  },
};

/** What a valid permanent credential gets: 200, except the delete of a missing key (404). */
const successStatus = (name: string) => (name === "DELETE /images/{key}" ? 404 : 200);

async function expectEnvelope(res: Response, status: number) {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { status: boolean; message: string; data: unknown };
  expect(body.status).toBe(status === 200);
  expect(typeof body.message).toBe("string");
  if (status !== 200) {
    expect(body.data).toBeNull();
    expect(body.message.length).toBeGreaterThan(0);
  }
  return body;
}

async function temporaryToken(seconds = 60) {
  const { body } = await ctx.json("/api/v1/images/tokens", {
    method: "POST",
    headers: { ...ctx.bearer(alice.token), "content-type": "application/json" },
    body: JSON.stringify({ num: 1, seconds }),
  });
  return body.data.tokens[0].token as string;
}

beforeEach(async () => {
  await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: true, guest_upload_enabled: false });
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { enabled: true, allow_api: true });
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.guestGroupId}`, { enabled: true, allow_api: true, strategy_ids: [ctx.localStrategyId] });
  await ctx.admin("PATCH", `/api/admin/users/${alice.id}`, { enabled: true });
});

for (const [name, route] of Object.entries(routes)) {
  describe(name, () => {
    test("a valid permanent token is accepted as id|raw and as the raw part alone", async () => {
      await expectEnvelope(await route.call(ctx.bearer(alice.token)), successStatus(name));
      const raw = alice.token.split("|")[1]!;
      await expectEnvelope(await route.call(ctx.bearer(raw)), successStatus(name));
      // the scheme is case-insensitive
      await expectEnvelope(await route.call({ authorization: `bearer ${alice.token}` }), successStatus(name));
    });

    test("no token → 401 (guest upload disabled)", async () => {
      await expectEnvelope(await route.call({}), 401);
    });

    test("malformed Authorization header → 401", async () => {
      for (const header of [alice.token, `Token ${alice.token}`, "Bearer", "Bearer ", `Bearer ${alice.token} extra`, `Basic ${btoa("a:b")}`]) {
        await expectEnvelope(await route.call({ authorization: header }), 401);
      }
    });

    test("wrong, forged and revoked tokens → 401", async () => {
      const [id] = alice.token.split("|");
      for (const token of ["nope", `${id}|wrongsecretwrongsecretwrongsecretwrong00`, `999|${alice.token.split("|")[1]}`, "0|x", "|"]) {
        await expectEnvelope(await route.call(ctx.bearer(token)), 401);
      }
      const victim = await ctx.createUser();
      await ctx.admin("DELETE", `/api/admin/tokens/${victim.token.split("|")[0]}`);
      await expectEnvelope(await route.call(ctx.bearer(victim.token)), 401);
      await expectEnvelope(await route.call(ctx.bearer(victim.token.split("|")[1]!)), 401);
    });

    test("an invalid credential is never downgraded to a guest", async () => {
      await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
      await expectEnvelope(await route.call(ctx.bearer("nope")), 401);
      await expectEnvelope(await route.call({ authorization: "Basic x" }), 401);
    });

    test("an expired temporary token → 401", async () => {
      const token = await temporaryToken(5);
      ctx.advance(6_000);
      await expectEnvelope(await route.call(ctx.bearer(token)), 401);
    });

    test(`a temporary token → ${route.temporaryAllowed ? "accepted" : "403"}`, async () => {
      const token = await temporaryToken();
      await expectEnvelope(await route.call(ctx.bearer(token)), route.temporaryAllowed ? 200 : 403);
    });

    test("site-wide API switch off → 403, before any credential check", async () => {
      await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: false });
      await expectEnvelope(await route.call(ctx.bearer(alice.token)), 403);
      await expectEnvelope(await route.call({}), 403);
      await expectEnvelope(await route.call(ctx.bearer("nope")), 403);
    });

    test("account disabled → 403", async () => {
      await ctx.admin("PATCH", `/api/admin/users/${alice.id}`, { enabled: false });
      const body = await expectEnvelope(await route.call(ctx.bearer(alice.token)), 403);
      expect(body.message).toContain("account");
    });

    test("user group disabled → 403", async () => {
      await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { enabled: false });
      const body = await expectEnvelope(await route.call(ctx.bearer(alice.token)), 403);
      expect(body.message).toContain("group");
    });

    test("user group's allow-API off → 403", async () => {
      await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { allow_api: false });
      const body = await expectEnvelope(await route.call(ctx.bearer(alice.token)), 403);
      expect(body.message).toContain("API");
    });

    if (route.guestCapable) {
      test("no token with guest upload enabled → guest; guest group's flags apply", async () => {
        await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
        await expectEnvelope(await route.call({ "x-forwarded-for": "198.51.100.1" }), 200);
        await ctx.admin("PATCH", `/api/admin/groups/${ctx.guestGroupId}`, { allow_api: false });
        await expectEnvelope(await route.call({}), 403);
        await ctx.admin("PATCH", `/api/admin/groups/${ctx.guestGroupId}`, { allow_api: true, enabled: false });
        await expectEnvelope(await route.call({}), 403);
      });

      test("guest upload enabled but the guest group has no usable strategy → 401", async () => {
        await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
        await ctx.admin("PATCH", `/api/admin/groups/${ctx.guestGroupId}`, { strategy_ids: [] });
        await expectEnvelope(await route.call({}), 401);
      });
    } else {
      test("no token stays 401 even with guest upload enabled", async () => {
        await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
        await expectEnvelope(await route.call({}), 401);
      });
    }
  });
}

describe("envelope for everything else", () => {
  test("unknown routes answer 404 in the envelope", async () => {
    const res = await ctx.request("/api/v1/nothing-here");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ status: false, message: "Not found.", data: null });
  });

  test("administration needs the admin token", async () => {
    expect((await ctx.request("/api/admin/settings")).status).toBe(401);
    expect((await ctx.request("/api/admin/settings", { headers: ctx.bearer(alice.token) })).status).toBe(401);
  });

  test("an unexpected failure is a 500 with a request id and no internals", async () => {
    const broken = await createTestContext();
    const user = await broken.createUser();
    // drop a table behind the service's back: the query fails inside the handler
    await broken.db.execute("drop table upload_log cascade" as never);
    await broken.admin("PATCH", `/api/admin/groups/${broken.defaultGroupId}`, { uploads_per_minute: 5 });
    const m = multipart([{ name: "file", value: png, filename: "a.png", contentType: "image/png" }]);
    try {
      const { result: res, logged } = await quietly(() =>
        broken.request("/api/v1/upload", {
          method: "POST",
          headers: { ...broken.bearer(user.token), "content-type": m.contentType },
          body: m.body,
        }),
      );
      expect(res.status).toBe(500);
      const body = (await res.json()) as Record<string, unknown>;
      expect(body.status).toBe(false);
      expect(body.message).toBe("Internal server error.");
      expect(body.data).toBeNull();
      expect(typeof body.request_id).toBe("string");
      expect(JSON.stringify(body)).not.toContain("upload_log");
      expect(res.headers.get("x-request-id")).toBe(body.request_id as string);
      expect(JSON.stringify(logged)).toContain(body.request_id as string);
    } finally {
      await broken.close();
    }
  });
});
