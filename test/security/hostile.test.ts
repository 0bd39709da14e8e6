import { afterAll, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { tokens } from "../../src/db/schema.ts";
import { sha256Hex } from "../../src/services/secrets.ts";
import { applyMetadataPolicy } from "../../src/images/metadata/policy.ts";
import { ADMIN_TOKEN, createTestContext, type TestContext, type TestUser } from "../support/harness.ts";
import { makeImage, makeNoisyJpeg, pngHeaderClaiming } from "../support/images.ts";
import { describeAnswer, expectStatus, type ReadAnswer } from "../support/status.ts";

/**
 * Hostile input: every bad input is a clear 4xx in the envelope (never a 500), and a refused request leaves
 * no trace — no object under the data directory, no record, no charge. Every input is generated here.
 */

// the preload's setDefaultTimeout reaches only the first file of a multi-file run (Bun 1.4): set it here too
setDefaultTimeout(60_000);

let ctx: TestContext;
let alice: TestUser;
let bob: TestUser;
let bobAlbumId: number;
let aliceKey: string;
let png: Uint8Array;
let jpeg: Uint8Array;
let gif: Uint8Array;

beforeAll(async () => {
  ctx = await createTestContext();
  alice = await ctx.createUser();
  bob = await ctx.createUser();
  bobAlbumId = (await ctx.admin("POST", `/api/admin/users/${bob.id}/albums`, { name: "bob's" })).id;
  png = await makeImage("png", 16, 16);
  jpeg = await makeImage("jpeg", 16, 16);
  gif = await makeImage("gif", 16, 16);
  // one image already there: a listing total and used space that must not move
  aliceKey = expectStatus(await ctx.upload(alice.token, { bytes: png, filename: "first.png", contentType: "image/png" }), 200).data.key;
});
afterAll(() => ctx.close());

beforeEach(async () => {
  await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: true, guest_upload_enabled: false });
});

const auth = (token = alice.token) => ({ authorization: `Bearer ${token}` });
const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };

/** Every file under the test's data directory (the local strategy's root is inside it). */
function dataFiles(): string[] {
  if (!existsSync(ctx.dataDir)) return [];
  return readdirSync(ctx.dataDir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name).slice(ctx.dataDir.length + 1))
    .sort();
}

interface Snapshot {
  size: number;
  imageNum: number;
  albumNum: number;
  total: number;
  files: string[];
  users: number;
  groups: number;
  strategies: number;
}

/** What a request could have stored or charged: alice's profile and listing, the files, the admin records. */
async function snapshot(user: TestUser = alice): Promise<Snapshot> {
  const profile = expectStatus(await ctx.json("/api/v1/profile", { headers: auth(user.token) }), 200).data;
  const page = expectStatus(await ctx.json("/api/v1/images?per_page=1", { headers: auth(user.token) }), 200).data;
  return {
    size: profile.size,
    imageNum: profile.image_num,
    albumNum: profile.album_num,
    total: page.total,
    files: dataFiles(),
    users: (await ctx.admin("GET", "/api/admin/users")).users.length,
    groups: (await ctx.admin("GET", "/api/admin/groups")).groups.length,
    strategies: (await ctx.admin("GET", "/api/admin/strategies")).strategies.length,
  };
}

async function expectUnchanged(before: Snapshot, user: TestUser = alice) {
  expect(await snapshot(user)).toEqual(before);
}

/** The failure envelope: status false, data null, the message, and `errors` exactly on 422. */
function expectFailure(res: ReadAnswer, status: number, message: string | RegExp) {
  const body = expectStatus(res, status);
  const what = describeAnswer(res);
  expect(body.status, what).toBe(false);
  expect(body.data, what).toBeNull();
  expect(typeof body.message, what).toBe("string");
  if (typeof message === "string") expect(body.message, what).toBe(message);
  else expect(body.message, what).toMatch(message);
  if (status === 422) {
    expect(Object.keys(body).sort(), what).toEqual(["data", "errors", "message", "status"]);
    const errors = Object.values(body.errors as Record<string, unknown>);
    expect(errors.length, what).toBeGreaterThan(0);
    for (const list of errors) {
      expect(Array.isArray(list) && list.length > 0 && list.every((m) => typeof m === "string"), what).toBe(true);
    }
    expect((errors[0] as string[])[0], what).toBe(body.message);
  } else {
    expect(Object.keys(body).sort(), what).toEqual(["data", "message", "status"]);
  }
  return body;
}

/** A refused request: the failure envelope, and nothing stored or charged. */
async function refused(send: () => Promise<ReadAnswer>, status: number, message: string | RegExp, user: TestUser = alice) {
  const before = await snapshot(user);
  const body = expectFailure(await send(), status, message);
  await expectUnchanged(before, user);
  return body;
}

const get =
  (path: string, headers: Record<string, string> = auth()) =>
  () =>
    ctx.json(path, { headers });
const del =
  (path: string, headers: Record<string, string> = auth()) =>
  () =>
    ctx.json(path, { method: "DELETE", headers });
const sendJson =
  (method: string, path: string, body: unknown, headers: Record<string, string> = adminHeaders) =>
  () =>
    ctx.json(path, { method, headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
const issueTokens = (body: unknown) => sendJson("POST", "/api/v1/images/tokens", body, auth());
const uploadPng =
  (fields: Record<string, string> = {}, query = "", token: string | null = alice.token) =>
  () =>
    ctx.upload(token, { bytes: png, filename: "a.png", contentType: "image/png" }, fields, { query });

/** A multipart body written byte for byte. */
function rawUpload(body: string | Uint8Array, contentType: string | null, headers: Record<string, string> = auth()) {
  return () =>
    ctx.json("/api/v1/upload", {
      method: "POST",
      headers: { ...headers, ...(contentType === null ? {} : { "content-type": contentType }) },
      body: typeof body === "string" ? Buffer.from(body, "latin1") : new Uint8Array(body),
    });
}
const filePart = (bytes: Uint8Array, disposition = 'name="file"; filename="a.png"', extra = "Content-Type: image/png\r\n") =>
  Buffer.concat([Buffer.from(`Content-Disposition: form-data; ${disposition}\r\n${extra}\r\n`, "latin1"), Buffer.from(bytes)]);
function body(boundary: string, parts: (string | Buffer)[], closing = `\r\n--${boundary}--\r\n`) {
  const chunks: Buffer[] = [];
  parts.forEach((p, i) => chunks.push(Buffer.from(`${i === 0 ? "" : "\r\n"}--${boundary}\r\n`), typeof p === "string" ? Buffer.from(p, "latin1") : p));
  chunks.push(Buffer.from(closing, "latin1"));
  return new Uint8Array(Buffer.concat(chunks));
}
const field = (name: string, value: string) => `Content-Disposition: form-data; name="${name}"\r\n\r\n${value}`;

/** The control characters tried in every string input: NUL, other C0 controls, DEL, a C1 control. */
const controls: [string, string][] = [
  ["NUL", "\u0000"],
  ["SOH", "\u0001"],
  ["LF", "\n"],
  ["ESC", "\u001b"],
  ["DEL", "\u007f"],
  ["C1 NEL", "\u0085"],
];
const noControls = (field: string) => `The ${field} field must not contain control characters.`;
/** Whitespace around a number is trimmed (intField): "1\n" is 1. Only the other controls make a number invalid. */
const isSpace = (ch: string) => /\s/.test(ch);

describe("control characters in every string input", () => {
  for (const [label, ch] of controls) {
    const enc = encodeURIComponent(ch);
    test(`${label} in the query: q, per_page, page, admin username`, async () => {
      await refused(get(`/api/v1/strategies?q=a${enc}b`), 422, noControls("q"));
      await refused(get(`/api/v1/images?per_page=1${enc}0`), 422, "The per_page field is invalid: must be an integer.");
      await refused(get(`/api/v1/images?page=${enc}`), 422, "The page field is invalid: must be an integer.");
      await refused(get(`/api/admin/users?username=alice${enc}`, adminHeaders), 422, noControls("username"));
    });

    test(`${label} in the path: an image key, an admin id`, async () => {
      await refused(del(`/api/v1/images/a${enc}b`), 422, noControls("key"));
      // the real key with a control character appended is not the real key: nothing is deleted
      await refused(del(`/api/v1/images/${aliceKey}${enc}`), 422, noControls("key"));
      await refused(get(`/api/admin/users/1${enc}0`, adminHeaders), 422, "The id field is invalid: must be an integer.");
      await refused(del(`/api/admin/tokens/${enc}`, adminHeaders), 422, "The id field is invalid: must be an integer.");
    });

    test(`${label} in multipart field values`, async () => {
      await refused(uploadPng({ permission: `1${ch}0` }), 422, "The permission field is invalid: must be an integer.");
      await refused(uploadPng({ album_id: `${ch}1${ch}1` }), 422, "The album_id field is invalid: must be an integer.");
      await refused(uploadPng({ strategy_id: `1${ch}1` }), 422, "The strategy_id field is invalid: must be an integer.");
      await refused(uploadPng({}, `?strategy_id=1${enc}1`), 422, /strategy_id field/);
      await refused(
        uploadPng({ expired_at: `2030-01-01${ch}00:00:00` }),
        422,
        "The expired_at field is invalid: use ISO 8601 with an offset, or YYYY-MM-DD HH:MM:SS.",
      );
      // a temporary token in the form field: a control character makes it no token at all
      await refused(uploadPng({ token: `abc${ch}` }, "", null), 401, "Invalid token.");
    });

    test(`${label} in the JSON fields of POST /images/tokens`, async () => {
      await refused(issueTokens({ num: `1${ch}1`, seconds: 60 }), 422, "The num field is invalid: must be an integer.");
      await refused(issueTokens({ num: 1, seconds: `6${ch}0` }), 422, "The seconds field is invalid: must be an integer.");
      await refused(
        () =>
          ctx.json("/api/v1/images/tokens", {
            method: "POST",
            headers: { ...auth(), "content-type": "application/x-www-form-urlencoded" },
            body: `num=1${enc}1&seconds=60`,
          }),
        422,
        "The num field is invalid: must be an integer.",
      );
    });

    test(`${label} in admin bodies: usernames, names, group and strategy names, URLs, configs`, async () => {
      const u = () => `u${Math.random().toString(36).slice(2, 9)}`;
      await refused(sendJson("POST", "/api/admin/users", { username: `a${ch}b`, email: `${u()}@example.com` }), 422, /^The username field is invalid/);
      await refused(sendJson("POST", "/api/admin/users", { username: u(), email: `${u()}@example.com`, name: `Al${ch}ice` }), 422, noControls("name"));
      await refused(
        sendJson("POST", "/api/admin/users", { username: u(), email: `${u()}@example.com`, registered_ip: `1.2.3.4${ch}` }),
        422,
        noControls("registered_ip"),
      );
      await refused(
        sendJson("POST", "/api/admin/users", { username: u(), email: `${u()}@example.com`, password: `secret${ch}secret` }),
        422,
        noControls("password"),
      );
      await refused(sendJson("PATCH", `/api/admin/users/${alice.id}`, { name: `x${ch}` }), 422, noControls("name"));
      await refused(sendJson("POST", `/api/admin/users/${alice.id}/albums`, { name: `album${ch}` }), 422, noControls("name"));
      await refused(sendJson("POST", "/api/admin/groups", { name: `group${ch}` }), 422, noControls("name"));
      await refused(sendJson("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { name: `group${ch}` }), 422, noControls("name"));
      if (!isSpace(ch)) {
        // a URL parser drops tabs and newlines: those come out of z.url() already stripped
        await refused(
          sendJson("POST", "/api/admin/groups", { name: "g", review_provider: "webhook", review_webhook_url: `http://127.0.0.1/${ch}` }),
          422,
          /review_webhook_url field/,
        );
      }
      await refused(sendJson("POST", "/api/admin/strategies", { name: `s${ch}`, driver: "local" }), 422, noControls("name"));
      await refused(sendJson("PATCH", `/api/admin/strategies/${ctx.localStrategyId}`, { name: `s${ch}` }), 422, noControls("name"));
      await refused(sendJson("POST", "/api/admin/strategies", { name: "s", driver: "local", config: { root: `/tmp/x${ch}` } }), 422, noControls("config.root"));
      // a key of the free-form config: the field named is the config itself
      await refused(sendJson("POST", "/api/admin/strategies", { name: "s", driver: "local", config: { [`ro${ch}ot`]: "/tmp/x" } }), 422, noControls("config"));
      await refused(
        sendJson("POST", "/api/admin/strategies", { name: "s", driver: "s3", config: { bucket: "b", url: "http://127.0.0.1/b", secret_access_key: `k${ch}` } }),
        422,
        noControls("config.secret_access_key"),
      );
    });
  }

  test("control characters in the Authorization header: malformed, 401", async () => {
    for (const ch of ["\u0001", "\u001b", "\u007f", "\u0085"]) {
      await refused(get("/api/v1/profile", { authorization: `Bearer ${alice.token}${ch}` }), 401, /^Malformed Authorization header/);
      await refused(get("/api/admin/users", { authorization: `Bearer ${ADMIN_TOKEN}${ch}` }), 401, /^Malformed Authorization header/);
    }
    // NUL, CR and LF cannot even be put in a header value (the Fetch API refuses them; see the socket test below)
    expect(() => new Headers({ authorization: "Bearer a\u0000b" })).toThrow();
  });

  test("a deeply nested free-form value is walked without recursion (no stack overflow, no 500)", async () => {
    let nested: unknown = "x\u0000";
    for (let i = 0; i < 20_000; i++) nested = [nested];
    await refused(sendJson("POST", "/api/admin/strategies", { name: "s", driver: "local", config: { root: "/tmp/x", deep: nested } }), 422, /config/);
  });

  test("whitespace controls around a number are trimmed, like spaces", async () => {
    const page = expectStatus(await ctx.json("/api/v1/images?per_page=2%0A&page=%091", { headers: auth() }), 200);
    expect([page.data.per_page, page.data.current_page]).toEqual([2, 1]);
  });

  test("unknown query parameters are ignored, whatever they hold", async () => {
    const before = await snapshot();
    expectStatus(await ctx.json("/api/v1/profile?x=%00%01", { headers: auth() }), 200);
    expectStatus(await ctx.json("/api/v1/images?debug=%00", { headers: auth() }), 200);
    await expectUnchanged(before);
  });

  describe("file names: controls are harmless there, so they are stripped (line breaks and tabs become spaces)", () => {
    for (const [label, ch] of controls) {
      test(`${label} in a file name → stored without it`, async () => {
        const res = await ctx.upload(alice.token, { bytes: png, filename: `a${ch}b.png`, contentType: "image/png" });
        expect(expectStatus(res, 200).data.origin_name).toBe(isSpace(ch) ? "a b.png" : "ab.png");
      });
    }
    test("NUL in an RFC 5987 filename* → stored without it", async () => {
      const b = "nulname";
      const res = await rawUpload(body(b, [filePart(png, `name="file"; filename*=UTF-8''a%00b.png`)]), `multipart/form-data; boundary=${b}`)();
      expect(expectStatus(res, 200).data.origin_name).toBe("ab.png");
    });
  });

  test("over a real socket, control characters in a header never reach the app (Bun answers 400)", async () => {
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req, s) => ctx.app.fetch(req, s) });
    try {
      const raw = (text: string) =>
        new Promise<string>((resolve) => {
          let out = "";
          const timer = setTimeout(() => resolve(out), 3000);
          Bun.connect({
            hostname: "127.0.0.1",
            port: server.port!,
            socket: {
              open: (s) => void s.write(text),
              data: (_s, d) => void (out += Buffer.from(d).toString("latin1")),
              close: () => (clearTimeout(timer), resolve(out)),
              error: () => (clearTimeout(timer), resolve(out)),
            },
          });
        });
      const before = await snapshot();
      for (const ch of ["\u0000", "\u0001", "\u000b"]) {
        const answer = await raw(`GET /api/v1/profile HTTP/1.1\r\nHost: img.test\r\nAuthorization: Bearer ${alice.token}${ch}\r\nConnection: close\r\n\r\n`);
        expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 400 Bad Request");
      }
      await expectUnchanged(before);
    } finally {
      server.stop(true);
    }
  });
});

describe("integers beyond PostgreSQL's range", () => {
  test("admin path ids: 422, never 500; the largest int4 is simply not found", async () => {
    const tooBig = "The id field is invalid: must be at most 2147483647.";
    const notInt = "The id field is invalid: must be an integer.";
    await refused(get("/api/admin/users/99999999999", adminHeaders), 422, tooBig);
    await refused(get("/api/admin/users/2147483648", adminHeaders), 422, tooBig);
    expectFailure(await ctx.json("/api/admin/users/2147483647", { headers: adminHeaders }), 404, "User not found.");
    await refused(get("/api/admin/users/1e30", adminHeaders), 422, notInt);
    await refused(get("/api/admin/users/0x10", adminHeaders), 422, notInt);
    await refused(get("/api/admin/users/1.5", adminHeaders), 422, notInt);
    await refused(get("/api/admin/users/-1", adminHeaders), 422, "The id field is invalid: must be at least 1.");
    await refused(get("/api/admin/users/0", adminHeaders), 422, "The id field is invalid: must be at least 1.");
    await refused(get("/api/admin/users/99999999999999999999999", adminHeaders), 422, /^The id field is invalid/);
    await refused(del("/api/admin/tokens/1e30", adminHeaders), 422, notInt);
    await refused(del("/api/admin/tokens/99999999999", adminHeaders), 422, tooBig);
    await refused(get("/api/admin/users/99999999999/tokens", adminHeaders), 422, tooBig);
    await refused(sendJson("POST", "/api/admin/users/99999999999/tokens", undefined, { authorization: adminHeaders.authorization }), 422, tooBig);
    await refused(sendJson("POST", "/api/admin/users/99999999999/albums", { name: "a" }), 422, tooBig);
    await refused(sendJson("PATCH", "/api/admin/users/99999999999", { enabled: true }), 422, tooBig);
    await refused(sendJson("PATCH", "/api/admin/groups/99999999999", { enabled: true }), 422, tooBig);
    await refused(sendJson("PATCH", "/api/admin/strategies/99999999999", { enabled: true }), 422, tooBig);
  });

  test("tokens in id|raw form with an id that names no token: 401, never 500", async () => {
    const raw = alice.token.slice(alice.token.indexOf("|") + 1);
    const id = Number(alice.token.slice(0, alice.token.indexOf("|")));
    for (const token of ["99999999999|x", "2147483648|x", "-1|x", "1.5|x", "0x10|x", "1e3|x", "0|x", `99999999999999999999|${raw}`]) {
      await refused(get("/api/v1/profile", auth(token)), 401, "Invalid token.");
    }
    // the right secret behind an id written any other way than decimal digits is no token either
    for (const written of [`0x${id.toString(16)}`, `${id}e0`, `${id}.0`, `+${id}`]) {
      await refused(get("/api/v1/profile", auth(`${written}|${raw}`)), 401, "Invalid token.");
    }
    expectStatus(await ctx.json("/api/v1/profile", { headers: auth(`${id}|${raw}`) }), 200);
  });

  test("queries: page and per_page", async () => {
    await refused(get("/api/v1/images?page=1e400"), 422, "The page field is invalid: must be an integer.");
    await refused(get("/api/v1/images?per_page=99999999999999999999"), 422, /^The per_page field is invalid: must be an integer\./);
    await refused(get("/api/v1/images?page=99999999999999999999"), 422, /^The page field is invalid/);
    await refused(get("/api/v1/images?page=1000001"), 422, "The page field is invalid: must be at most 1000000.");
    await refused(get("/api/v1/images?per_page=Infinity"), 422, "The per_page field is invalid: must be an integer.");
    await refused(get("/api/v1/images?per_page=NaN"), 422, "The per_page field is invalid: must be an integer.");
    // the last page there can be is an empty page, not an error
    const last = expectStatus(await ctx.json("/api/v1/images?page=1000000&per_page=100", { headers: auth() }), 200);
    expect(last.data.data).toEqual([]);
  });

  test("bodies: num, seconds, strategy_id, album_id", async () => {
    await refused(issueTokens({ num: 1e30, seconds: 60 }), 422, /^The num field is invalid/);
    await refused(issueTokens({ num: "99999999999999999999", seconds: 60 }), 422, /^The num field is invalid/);
    await refused(issueTokens({ num: 1, seconds: 99999999999 }), 422, "The seconds field is invalid: must be at most 2626560.");
    await refused(issueTokens('{"num": 1e400, "seconds": 60}'), 422, /^The num field is invalid/);
    await refused(uploadPng({ strategy_id: "99999999999" }), 422, "The strategy_id field is invalid: must be at most 2147483647.");
    await refused(uploadPng({}, "?strategy_id=99999999999"), 422, "The strategy_id field is invalid: must be at most 2147483647.");
    await refused(uploadPng({ album_id: "99999999999" }), 422, "The album_id field is invalid: must be at most 2147483647.");
    await refused(uploadPng({ album_id: "1e30" }), 422, "The album_id field is invalid: must be an integer.");
  });

  test("admin numeric fields", async () => {
    const big = 99_999_999_999;
    for (const name of [
      "uploads_per_minute",
      "uploads_per_hour",
      "uploads_per_day",
      "uploads_per_week",
      "uploads_per_month",
      "concurrent_uploads",
      "retention_max_seconds",
    ]) {
      await refused(
        sendJson("POST", "/api/admin/groups", { name: "g", [name]: big }),
        422,
        `The ${name} field is invalid: Too big: expected number to be <=2147483647.`,
      );
      await refused(sendJson("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { [name]: big }), 422, /Too big/);
    }
    await refused(sendJson("POST", "/api/admin/groups", { name: "g", max_file_size_kb: big }), 422, /^The max_file_size_kb field is invalid: Too big/);
    await refused(sendJson("POST", "/api/admin/groups", { name: "g", max_pixels: 1e30 }), 422, /^The max_pixels field is invalid/);
    await refused(sendJson("POST", "/api/admin/groups", { name: "g", default_capacity_kb: 1e30 }), 422, /^The default_capacity_kb field is invalid/);
    await refused(sendJson("POST", "/api/admin/groups", { name: "g", review_timeout_ms: big }), 422, /^The review_timeout_ms field is invalid/);
    await refused(
      sendJson("POST", "/api/admin/groups", { name: "g", strategy_ids: [big] }),
      422,
      "The strategy_ids.0 field is invalid: Too big: expected number to be <=2147483647.",
    );
    await refused(sendJson("POST", "/api/admin/groups", { name: "g", strategy_ids: [2147483647] }), 422, "Every strategy id must exist.");
    await refused(
      sendJson("POST", "/api/admin/users", { username: "bigg", email: "bigg@example.com", group_id: big }),
      422,
      /^The group_id field is invalid: Too big/,
    );
    await refused(
      sendJson("POST", "/api/admin/users", { username: "bigg", email: "bigg@example.com", capacity_kb: 1e30 }),
      422,
      /^The capacity_kb field is invalid/,
    );
    await refused(sendJson("PATCH", `/api/admin/users/${alice.id}`, { group_id: big }), 422, /^The group_id field is invalid: Too big/);
    await refused(sendJson("PATCH", `/api/admin/users/${alice.id}`, { group_id: 2147483647 }), 422, "The group_id must be an existing, non-guest group.");
    await refused(sendJson("PATCH", `/api/admin/users/${alice.id}`, { capacity_kb: 1e30 }), 422, /^The capacity_kb field is invalid/);
    await refused(sendJson("POST", "/api/admin/strategies", { name: "s", driver: "local", quota_kb: 1e30 }), 422, /^The quota_kb field is invalid/);
    await refused(sendJson("PATCH", `/api/admin/strategies/${ctx.localStrategyId}`, { quota_kb: -1 }), 422, /^The quota_kb field is invalid/);
  });
});

describe("impossible dates in expired_at: 422 end to end", () => {
  const message = "The expired_at field is invalid: use ISO 8601 with an offset, or YYYY-MM-DD HH:MM:SS.";
  for (const value of [
    "2026-02-30T10:00:00Z",
    "2026-13-01 00:00:00",
    "2026-01-01T10:00:00+25:00",
    "2027-02-29 00:00:00",
    "2030-04-31T00:00:00Z",
    "2030-01-01T24:00:00Z",
    "2030-01-01 10:60:00",
    "2030-01-01T10:00:60Z",
    "2030-01-01T10:00:00+23:60",
    "2030-00-10 00:00:00",
    "9999999999-01-01T00:00:00Z",
    "tomorrow",
  ]) {
    test(value, async () => {
      const body = await refused(uploadPng({ expired_at: value }), 422, message);
      expect(Object.keys(body.errors)).toEqual(["expired_at"]);
    });
  }
});

describe("tokens in every malformed form", () => {
  const malformed = /^Malformed Authorization header/;
  test("on GET /profile", async () => {
    const cases: [string, number, string | RegExp][] = [
      ["", 401, malformed],
      ["Bearer", 401, malformed],
      ["Bearer ", 401, malformed], // trailing whitespace is trimmed off a header value: "Bearer"
      [`Bearer\t${alice.token}`, 401, malformed],
      [`Basic ${btoa(`alice:${alice.token}`)}`, 401, malformed],
      [`Token ${alice.token}`, 401, malformed],
      [`Bearer ${alice.token} extra`, 401, malformed],
      [`Bearer t\u00f6k\u00e9n`, 401, malformed], // a latin-1 header value: not a token character
      [`Bearer ${"a".repeat(10 * 1024)}`, 401, "Invalid token."],
      ["Bearer |raw", 401, "Invalid token."],
      ["Bearer 1|", 401, "Invalid token."],
      ["Bearer ||", 401, "Invalid token."],
      ["Bearer |", 401, "Invalid token."],
      [`Bearer ${alice.token}|`, 401, "Invalid token."],
    ];
    for (const [header, status, message] of cases) {
      await refused(get("/api/v1/profile", { authorization: header }), status, message);
    }
  });

  test("RFC 7235 forms that are well formed: scheme in any case, several spaces", async () => {
    for (const header of [`bearer ${alice.token}`, `BEARER ${alice.token}`, `Bearer   ${alice.token}`]) {
      expectStatus(await ctx.json("/api/v1/profile", { headers: { authorization: header } }), 200);
    }
  });

  test("unicode cannot be sent in a header; over the admin API the same forms are 401", async () => {
    expect(() => new Headers({ authorization: "Bearer ключ" })).toThrow();
    for (const header of ["", "Bearer", `Bearer\t${ADMIN_TOKEN}`, `Basic ${btoa(`admin:${ADMIN_TOKEN}`)}`, `Bearer ${"a".repeat(10 * 1024)}`]) {
      await refused(get("/api/admin/users", { authorization: header }), 401, /^(Malformed Authorization header|Invalid admin token\.)/);
    }
  });

  test("a temporary token: in id|raw form it is no token; raw, it is upload-only", async () => {
    const issued = expectStatus(await issueTokens({ num: 1, seconds: 600 })(), 200);
    const temporary: string = issued.data.tokens[0].token;
    const [row] = await ctx.db
      .select()
      .from(tokens)
      .where(eq(tokens.secretHash, sha256Hex(temporary)));
    expect(row?.kind).toBe("temporary");
    await refused(() => ctx.upload(`${row!.id}|${temporary}`, { bytes: png, filename: "a.png", contentType: "image/png" }), 401, "Invalid token.");
    await refused(uploadPng({ token: `${row!.id}|${temporary}` }, "", null), 401, "Invalid token.");
    await refused(get("/api/v1/profile", auth(temporary)), 403, "A temporary upload token can only be used for POST /upload.");
    await refused(get("/api/v1/images", auth(temporary)), 403, "A temporary upload token can only be used for POST /upload.");
  });
});

describe("files", () => {
  /** An accepted upload adds exactly one image and its objects, charged once. */
  async function acceptedOnce(res: ReadAnswer, before: Snapshot, bytes: Uint8Array) {
    const d = expectStatus(res, 200).data;
    const after = await snapshot();
    expect(after.imageNum).toBe(before.imageNum + 1);
    expect(after.total).toBe(before.total + 1);
    expect(after.size).toBeCloseTo(before.size + bytes.byteLength / 1024, 6);
    expect(after.files.length).toBe(before.files.length + (d.thumbnail_url === d.url ? 1 : 2));
    return d;
  }

  /** Served as the image type it was accepted as, never sniffed, sandboxed. */
  async function expectServedAsImage(url: string, mime: string, bytes: Uint8Array) {
    const res = await ctx.request(url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(mime);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-security-policy")).toContain("sandbox");
    expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
  }

  test("polyglots are accepted as the image they decode as and served as that image type with nosniff", async () => {
    const zip = Buffer.from(`PK\u0003\u0004${"x".repeat(64)}PK\u0005\u0006${"\u0000".repeat(18)}`, "latin1");
    const html = Buffer.from("<!doctype html><html><script>alert(document.cookie)</script></html>");
    const comment = Buffer.from("<script>alert(1)</script>");
    const com = Buffer.concat([Buffer.from([0xff, 0xfe, 0, comment.length + 2]), comment]);
    const cases: [string, Uint8Array, string][] = [
      ["png+zip.png", new Uint8Array(Buffer.concat([Buffer.from(png), zip])), "image/png"],
      ["png+html.png", new Uint8Array(Buffer.concat([Buffer.from(png), html])), "image/png"],
      ["script-comment.jpg", new Uint8Array(Buffer.concat([Buffer.from(jpeg.subarray(0, 2)), com, Buffer.from(jpeg.subarray(2))])), "image/jpeg"],
    ];
    for (const [filename, bytes, mime] of cases) {
      const before = await snapshot();
      // the default group's metadata policy (strip_location) drops what follows a PNG's IEND: the appended
      // archive or page is not stored; a JPEG's comment stays (only strip_all removes comments)
      const stored = applyMetadataPolicy(bytes, mime, "strip_location").bytes;
      const d = await acceptedOnce(await ctx.upload(alice.token, { bytes, filename, contentType: mime }), before, stored);
      expect([d.mimetype, d.width, d.height]).toEqual([mime, 16, 16]);
      await expectServedAsImage(d.url, mime, stored);
      if (mime === "image/png") expect(Buffer.from(stored).equals(Buffer.from(png))).toBe(true);
    }
  });

  test("SVG in disguise is refused", async () => {
    const svg = new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><script>alert(1)</script></svg>');
    const svgWithXml = new TextEncoder().encode('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"/>');
    const cases: [Uint8Array, string, string | undefined, string][] = [
      [svg, "a.png", "image/png", "The file content is not a valid PNG image."],
      [svg, "a.png", "application/octet-stream", "The file content is not a valid PNG image."],
      [svg, "a.png", undefined, "The file content is not a valid PNG image."],
      [svgWithXml, "a.jpg", "image/jpeg", "The file is named .jpg but its content is an XML document: rename it, or send another file."],
      [svg, "a.png", "image/svg+xml", "The declared type image/svg+xml does not match the .png extension."],
      [svg, "a.svg", "image/png", "Unsupported format .svg: allowed are .jpg, .jpeg, .png, .gif, .webp, .avif."],
      [svg, "a.svg", "image/svg+xml", "Unsupported format .svg: allowed are .jpg, .jpeg, .png, .gif, .webp, .avif."],
    ];
    for (const [bytes, filename, contentType, message] of cases) {
      await refused(() => ctx.upload(alice.token, { bytes, filename, contentType }), 400, message);
    }
  });

  test("decompression bombs are refused from the header, before decoding", async () => {
    const handMade = pngHeaderClaiming(50_000, 50_000);
    // a real one: 20000×20000 zero pixels, deflated (400 MB of pixels in well under a megabyte)
    const width = 20_000;
    const height = 20_000;
    const raw = Buffer.alloc((width + 1) * height);
    const chunk = (type: string, data: Buffer) => {
      const len = Buffer.alloc(4);
      len.writeUInt32BE(data.length);
      const b = Buffer.concat([Buffer.from(type, "latin1"), data]);
      const crc = Buffer.alloc(4);
      crc.writeUInt32BE(Bun.hash.crc32(b) >>> 0);
      return Buffer.concat([len, b, crc]);
    };
    const ihdr = Buffer.alloc(13);
    ihdr.writeUInt32BE(width, 0);
    ihdr.writeUInt32BE(height, 4);
    ihdr.set([8, 0, 0, 0, 0], 8);
    const real = new Uint8Array(
      Buffer.concat([
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
        chunk("IHDR", ihdr),
        chunk("IDAT", Buffer.from(Bun.deflateSync(raw, { level: 9 }))),
        chunk("IEND", Buffer.alloc(0)),
      ]),
    );
    expect(real.byteLength).toBeLessThan(1024 * 1024);
    for (const [bytes, w, h] of [
      [handMade, 50_000, 50_000],
      [real, width, height],
    ] as const) {
      const started = performance.now();
      await refused(
        () => ctx.upload(alice.token, { bytes, filename: "bomb.png", contentType: "image/png" }),
        400,
        `The image has ${w}×${h} pixels; the limit is 100000000 pixels.`,
      );
      expect(performance.now() - started).toBeLessThan(5000);
    }
  });

  test("a GIF whose logical screen claims 65535×65535 is refused from its header (the stated pixel rule)", async () => {
    const huge = Buffer.from(gif);
    huge.writeUInt16LE(65535, 6);
    huge.writeUInt16LE(65535, 8);
    await refused(() => ctx.upload(alice.token, { bytes: new Uint8Array(huge), filename: "screen.gif", contentType: "image/gif" }), 400, /pixels/);
  });

  test("truncated files are refused", async () => {
    const photo = await makeNoisyJpeg(300, 200);
    const cases: [Uint8Array, string, string][] = [
      [jpeg.subarray(0, jpeg.byteLength >> 1), "half.jpg", "The file content is not a valid JPG image."],
      [photo.subarray(0, photo.byteLength >> 1), "half-photo.jpg", "The file content is not a valid JPG image."],
      [png.subarray(0, png.byteLength >> 1), "half.png", "The file content is not a valid PNG image."],
      [png.subarray(0, 8), "signature.png", "The file content is not a valid PNG image."],
      [gif.subarray(0, gif.byteLength >> 1), "half.gif", "The file content is not a valid GIF image."],
    ];
    for (const [bytes, filename, message] of cases) {
      const type = filename.endsWith(".png") ? "image/png" : filename.endsWith(".gif") ? "image/gif" : "image/jpeg";
      await refused(() => ctx.upload(alice.token, { bytes: new Uint8Array(bytes), filename, contentType: type }), 400, message);
    }
  });

  test("a zero-length file is 422", async () => {
    const body = await refused(
      () => ctx.upload(alice.token, { bytes: new Uint8Array(0), filename: "empty.png", contentType: "image/png" }),
      422,
      "The file is empty.",
    );
    expect(body.errors).toEqual({ file: ["The file is empty."] });
  });

  test("extension, declared type and content in every combination: only agreement is accepted", async () => {
    const kinds = { png: ["image/png", png], jpg: ["image/jpeg", jpeg], gif: ["image/gif", gif] } as const;
    const declaredTypes = [undefined, "application/octet-stream", "image/png", "image/jpeg", "image/gif"];
    let accepted = 0;
    const start = await snapshot();
    for (const [ext, [extMime]] of Object.entries(kinds)) {
      for (const [content, [, bytes]] of Object.entries(kinds)) {
        for (const declared of declaredTypes) {
          const send = () => ctx.upload(alice.token, { bytes, filename: `x.${ext}`, contentType: declared });
          const what = `.${ext} declared ${declared ?? "(none)"} holding ${content}`;
          if (declared && declared !== "application/octet-stream" && declared !== extMime) {
            await refused(send, 400, `The declared type ${declared} does not match the .${ext} extension.`);
          } else if (content !== ext) {
            const named = { png: "a PNG image (.png)", jpg: "a JPEG image (.jpg or .jpeg)", gif: "a GIF image (.gif)" }[content];
            await refused(send, 400, `The file is named .${ext} but its content is ${named}: rename it, or send another file.`);
          } else {
            const d = expectStatus(await send(), 200).data;
            expect([d.mimetype, d.extension], what).toEqual([extMime, ext]);
            accepted++;
          }
        }
      }
    }
    expect(accepted).toBe(9); // 3 formats × (none, octet-stream, the matching type)
    const end = await snapshot();
    expect(end.imageNum - start.imageNum).toBe(accepted);
    expect(end.total - start.total).toBe(accepted);
    expect(end.files.length - start.files.length).toBe(accepted); // 16×16: each is its own thumbnail
  });
});

describe("multipart edge cases", () => {
  const b = "edge-boundary";
  const type = `multipart/form-data; boundary=${b}`;
  const malformed = "Malformed multipart/form-data body.";

  test("missing boundary, boundary mismatch, no closing boundary, LF-only line endings, empty body", async () => {
    const good = body(b, [filePart(png)]);
    await refused(rawUpload(good, "multipart/form-data"), 422, "The file field is required: send multipart/form-data.");
    await refused(rawUpload(good, "multipart/form-data; boundary="), 422, "The file field is required: send multipart/form-data.");
    await refused(rawUpload(good, "multipart/form-data; boundary=other"), 400, malformed);
    await refused(rawUpload(body(b, [filePart(png)], ""), type), 400, malformed);
    await refused(rawUpload(body(b, [filePart(png)], `\r\n--${b}\r\n`), type), 400, malformed);
    const lf = Buffer.concat([
      Buffer.from(`--${b}\nContent-Disposition: form-data; name="file"; filename="a.png"\nContent-Type: image/png\n\n`),
      Buffer.from(png),
      Buffer.from(`\n--${b}--\n`),
    ]);
    await refused(rawUpload(new Uint8Array(lf), type), 400, malformed);
    await refused(rawUpload("", type), 400, malformed);
    await refused(rawUpload(`--${b}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n`, type), 400, malformed);
    await refused(rawUpload(body(b, [`Content-Type: image/png\r\n\r\nno disposition`]), type), 400, malformed);
    await refused(rawUpload(good, null), 422, "The file field is required: send multipart/form-data.");
    await refused(rawUpload(good, "text/plain"), 422, "The file field is required: send multipart/form-data.");
  });

  test("a file part without a filename is a field, and the file is missing", async () => {
    const res = await refused(rawUpload(body(b, [filePart(png, 'name="file"')]), type), 422, "The file field is required.");
    expect(Object.keys(res.errors)).toEqual(["file"]);
  });

  test("two file parts: the first is the file, stored and charged once", async () => {
    const other = await makeImage("png", 20, 10);
    const before = await snapshot();
    const res = await rawUpload(body(b, [filePart(png, 'name="file"; filename="first.png"'), filePart(other, 'name="file"; filename="second.png"')]), type)();
    const d = expectStatus(res, 200).data;
    expect([d.origin_name, d.width, d.height]).toEqual(["first.png", 16, 16]);
    const after = await snapshot();
    expect([after.imageNum, after.total, after.files.length]).toEqual([before.imageNum + 1, before.total + 1, before.files.length + 1]);
    expect(after.size).toBeCloseTo(before.size + png.byteLength / 1024, 6);
  });

  test("duplicated fields: the first of each is the one that counts", async () => {
    const res = await rawUpload(body(b, [field("permission", "0"), field("permission", "1"), field("permission", "7"), filePart(png)]), type)();
    expect(expectStatus(res, 200).data.is_public).toBe(false);
    await refused(
      rawUpload(body(b, [field("permission", "7"), field("permission", "1"), filePart(png)]), type),
      422,
      "The permission field is invalid: must be at most 1.",
    );
  });

  test("a filename* only, RFC 5987, is decoded", async () => {
    const res = await rawUpload(body(b, [filePart(png, `name="file"; filename*=UTF-8''%E5%9B%BE.png`)]), type)();
    expect(expectStatus(res, 200).data.origin_name).toBe("图.png");
  });

  test("a filename* that cannot be decoded names no file", async () => {
    await refused(rawUpload(body(b, [filePart(png, `name="file"; filename*=UTF-8''a%ZZ%C0.png`)]), type), 422, "The file field is required.");
  });

  test("an enormous part header line: within the body limit it is only bytes; never a 500", async () => {
    const before = await snapshot();
    const res = await rawUpload(
      body(b, [filePart(png, 'name="file"; filename="a.png"', `Content-Type: image/png\r\nX-Junk: ${"j".repeat(256 * 1024)}\r\n`)]),
      type,
    )();
    // accepted (the header is ignored) or refused as malformed/too large: either way a clear answer and honest accounting
    if (res.status === 200) {
      const after = await snapshot();
      expect([after.imageNum, after.files.length]).toEqual([before.imageNum + 1, before.files.length + 1]);
    } else {
      expectFailure(res, 400, /malformed|large|header/i);
      await expectUnchanged(before);
    }
  });

  test("a part name holding a NUL is some other field; the file is missing", async () => {
    await refused(rawUpload(body(b, [filePart(png, 'name="fi\u0000le"; filename="a.png"')]), type), 422, "The file field is required.");
  });
});

describe("every field out of range", () => {
  test("upload fields", async () => {
    await refused(uploadPng({ permission: "2" }), 422, "The permission field is invalid: must be at most 1.");
    await refused(uploadPng({ permission: "-1" }), 422, "The permission field is invalid: must be at least 0.");
    await refused(uploadPng({ permission: "public" }), 422, "The permission field is invalid: must be an integer.");
    await refused(uploadPng({ strategy_id: "0" }), 422, "The strategy_id field is invalid: must be at least 1.");
    await refused(uploadPng({ strategy_id: "-1" }), 422, "The strategy_id field is invalid: must be at least 1.");
    await refused(uploadPng({ strategy_id: "abc" }), 422, "The strategy_id field is invalid: must be an integer.");
    await refused(uploadPng({}, "?strategy_id=abc"), 422, "The strategy_id field is invalid: must be an integer.");
    await refused(uploadPng({ strategy_id: "1.5" }), 422, "The strategy_id field is invalid: must be an integer.");
    await refused(uploadPng({ strategy_id: "9999" }), 400, "The storage strategy is not available to your user group.");
    await refused(uploadPng({ album_id: "0" }), 422, "The album_id field is invalid: must be at least 1.");
    await refused(uploadPng({ album_id: String(bobAlbumId) }), 400, "The album does not exist or is not yours.");
    await refused(uploadPng({ album_id: String(bobAlbumId) }), 400, "The album does not exist or is not yours.", bob);
  });

  test("listing", async () => {
    for (const [query, message] of [
      ["per_page=0", "The per_page field is invalid: must be at least 1."],
      ["per_page=101", "The per_page field is invalid: must be at most 100."],
      ["per_page=-5", "The per_page field is invalid: must be at least 1."],
      ["per_page=1.5", "The per_page field is invalid: must be an integer."],
      ["page=0", "The page field is invalid: must be at least 1."],
      ["page=abc", "The page field is invalid: must be an integer."],
    ]) {
      await refused(get(`/api/v1/images?${query}`), 422, message!);
    }
    await refused(get(`/api/v1/strategies?q=${"x".repeat(101)}`), 422, /^The q field is invalid/);
  });

  test("temporary tokens: num and seconds", async () => {
    for (const [input, message] of [
      [{ num: 0, seconds: 60 }, "The num field is invalid: must be at least 1."],
      [{ num: 101, seconds: 60 }, "The num field is invalid: must be at most 100."],
      [{ num: 1, seconds: 0 }, "The seconds field is invalid: must be at least 1."],
      [{ num: 1, seconds: 2626561 }, "The seconds field is invalid: must be at most 2626560."],
      [{ num: 1.5, seconds: 60 }, "The num field is invalid: must be an integer."],
      [{ num: true, seconds: 60 }, "The num field is invalid: must be an integer."],
      [{ seconds: 60 }, "The num field is required."],
      [[1, 60], "The body must be a JSON object."],
      ["{not json", "The body is not valid JSON."],
    ] as const) {
      const issued = async () => (await ctx.db.select().from(tokens).where(eq(tokens.userId, alice.id))).length;
      const before = [await snapshot(), await issued()] as const;
      const res = await issueTokens(input)();
      expectFailure(res, 422, message);
      await expectUnchanged(before[0]);
      expect(await issued()).toBe(before[1]); // no token issued
    }
  });
});
