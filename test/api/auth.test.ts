import { afterAll, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createTestContext, quietly, type TestUser } from "../support/harness.ts";
import { makeImage, multipart } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

// created at load time: the list of routes under test comes from the spec this app serves
const ctx = await createTestContext();
let alice: TestUser;
let png: Uint8Array;

beforeAll(async () => {
  alice = await ctx.createUser();
  png = await makeImage("png", 20, 20);
});
afterAll(() => ctx.close());

/** How to call one operation so that only the credential decides, and what the credential may be. */
interface Entry {
  /** values for the path template's parameters */
  params?: Record<string, string>;
  /** a valid request body */
  body?: () => { contentType: string; body: BodyInit };
  /** the spec lists the `temporaryToken` scheme */
  temporaryAllowed: boolean;
  /** the spec lists the empty requirement `{}`: a caller without a token may be a guest */
  guestCapable: boolean;
  /** what a valid credential gets (200 unless said) */
  success?: number;
}

const json = (value: unknown) => () => ({ contentType: "application/json", body: JSON.stringify(value) });

/** Every /api/v1 operation of the spec, by operationId. A new operation fails the matrix until it is added here. */
const table: Record<string, Entry> = {
  getProfile: { temporaryAllowed: false, guestCapable: false },
  listStrategies: { temporaryAllowed: false, guestCapable: true },
  uploadImage: {
    body: () => multipart([{ name: "file", value: png, filename: "a.png", contentType: "image/png" }]),
    temporaryAllowed: true,
    guestCapable: true,
  },
  listImages: { temporaryAllowed: false, guestCapable: false },
  // a missing key: the credential is accepted, then the image is not found
  deleteImage: { params: { key: "doesnotexist" }, temporaryAllowed: false, guestCapable: false, success: 404 },
  createTemporaryTokens: { body: json({ num: 1, seconds: 60 }), temporaryAllowed: false, guestCapable: false },
};

interface Operation {
  method: string;
  path: string;
  operationId?: string;
  security: Record<string, string[]>[];
}

const SPEC_PATH = "/api/v1/openapi.json";
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** The served spec's operations under /api/v1/ (the spec document itself is no operation). */
async function apiOperations(): Promise<Operation[]> {
  const spec = await expectStatus(await ctx.request(SPEC_PATH), 200);
  return Object.entries(spec.paths as Record<string, Record<string, any>>)
    .filter(([path]) => path.startsWith("/api/v1/") && path !== SPEC_PATH)
    .flatMap(([path, item]) =>
      METHODS.filter((method) => item[method]).map((method) => ({
        method: method.toUpperCase(),
        path,
        operationId: item[method].operationId,
        security: item[method].security ?? spec.security ?? [],
      })),
    );
}
const operations = await apiOperations();

/** What the spec's security list says about an operation. */
const fromSpec = (op: Operation) => ({
  temporaryAllowed: op.security.some((requirement) => "temporaryToken" in requirement),
  guestCapable: op.security.some((requirement) => Object.keys(requirement).length === 0),
});

function call(op: Operation, entry: Entry, headers: Record<string, string>): Promise<Response> {
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = entry.params?.[name];
    if (value === undefined) throw new Error(`the auth matrix gives no value for {${name}} of ${op.operationId}`);
    return encodeURIComponent(value);
  });
  const body = entry.body?.();
  return ctx.request(path, {
    method: op.method,
    headers: body ? { ...headers, "content-type": body.contentType } : headers,
    body: body?.body,
  });
}

async function expectEnvelope(res: Response, status: number) {
  const body = (await expectStatus(res, status)) as { status: boolean; message: string; data: unknown };
  expect(body.status).toBe(status === 200);
  expect(typeof body.message).toBe("string");
  if (status !== 200) {
    expect(body.data).toBeNull();
    expect(body.message.length).toBeGreaterThan(0);
  }
  return body;
}

async function temporaryToken(seconds = 60) {
  const res = await ctx.json("/api/v1/images/tokens", {
    method: "POST",
    headers: { ...ctx.bearer(alice.token), "content-type": "application/json" },
    body: JSON.stringify({ num: 1, seconds }),
  });
  return expectStatus(res, 200).data.tokens[0].token as string;
}

describe("the matrix and the spec", () => {
  test("the spec lists /api/v1 operations, and every one has an operationId", () => {
    expect(operations.length).toBeGreaterThan(0);
    const anonymous = operations.filter((op) => !op.operationId).map((op) => `${op.method} ${op.path}`);
    expect(anonymous, `operations without an operationId: ${anonymous.join(", ")}`).toEqual([]);
  });

  test("the table names no operation that the spec lacks", () => {
    const known = new Set(operations.map((op) => op.operationId));
    const stale = Object.keys(table).filter((id) => !known.has(id));
    expect(stale, `in the auth matrix but not among the spec's /api/v1 operations: ${stale.join(", ")}`).toEqual([]);
  });
});

beforeEach(async () => {
  await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: true, guest_upload_enabled: false });
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { enabled: true, allow_api: true });
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.guestGroupId}`, { enabled: true, allow_api: true, strategy_ids: [ctx.localStrategyId] });
  await ctx.admin("PATCH", `/api/admin/users/${alice.id}`, { enabled: true });
});

for (const op of operations) {
  const name = `${op.method} ${op.path} (${op.operationId})`;
  const entry = op.operationId === undefined ? undefined : table[op.operationId];
  if (!entry) {
    describe(name, () => {
      test("is in the auth matrix", () => {
        throw new Error(`the spec has ${name}, which the auth matrix in test/api/auth.test.ts does not know: add it to \`table\``);
      });
    });
    continue;
  }
  const route = { ...entry, call: (headers: Record<string, string>) => call(op, entry, headers) };
  const success = entry.success ?? 200;

  describe(name, () => {
    test("the table agrees with the spec's security list (temporaryToken → temporary allowed, {} → guest capable)", () => {
      const said = { temporaryAllowed: entry.temporaryAllowed, guestCapable: entry.guestCapable };
      expect(said, `the auth matrix's entry for ${op.operationId} disagrees with its security ${JSON.stringify(op.security)}`).toEqual(fromSpec(op));
    });

    test("a valid permanent token is accepted as id|raw and as the raw part alone", async () => {
      await expectEnvelope(await route.call(ctx.bearer(alice.token)), success);
      const raw = alice.token.split("|")[1]!;
      await expectEnvelope(await route.call(ctx.bearer(raw)), success);
      // the scheme is case-insensitive
      await expectEnvelope(await route.call({ authorization: `bearer ${alice.token}` }), success);
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
      await expectEnvelope(await route.call(ctx.bearer(token)), route.temporaryAllowed ? success : 403);
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
        await expectEnvelope(await route.call({ "x-forwarded-for": "198.51.100.1" }), success);
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
    const body = await expectStatus(await ctx.request("/api/v1/nothing-here"), 404);
    expect(body).toEqual({ status: false, message: "Not found.", data: null });
  });

  test("administration needs the admin token", async () => {
    await expectStatus(await ctx.request("/api/admin/settings"), 401);
    await expectStatus(await ctx.request("/api/admin/settings", { headers: ctx.bearer(alice.token) }), 401);
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
      const body = (await expectStatus(res, 500)) as Record<string, unknown>;
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
