import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import fc from "fast-check";
import { applyMetadataPolicy } from "../../src/images/metadata/policy.ts";
import { ADMIN_TOKEN, createTestContext, type TestContext, type TestUser } from "../support/harness.ts";
import { makeAnimatedGif, makeImage, makeNoisyJpeg } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

/**
 * Property-based: random paths, queries, headers and bodies (JSON, forms, hand-written multipart) thrown at
 * every endpoint, with and without valid credentials. Whatever comes in, the answer
 * - arrives (no hang: each request has a time limit),
 * - is never a 5xx, and is a JSON envelope of a status the spec documents (the harness checks every /api answer
 *   against the committed spec),
 * - is a 200 only for a request that is legitimately valid (the right credential for the operation; an upload's
 *   stored bytes are bytes that were sent as a file), and
 * - leaves the account's accounting (profile size and image_num, listing total, files on disk) as it was,
 *   except for an accepted upload or a legitimate delete, whose effect is exactly one image.
 *
 * Bounded for a 2-core machine. The seed is fixed (FC_SEED overrides it, FC_RUNS scales the runs); a failure
 * prints the seed and the counterexample's path, which replay it exactly.
 */

const SEED = Number(process.env.FC_SEED ?? 20261122);
const RUNS = Number(process.env.FC_RUNS ?? 1);
const REQUEST_TIME_LIMIT_MS = 10_000;

// the preload's setDefaultTimeout reaches only the first file of a multi-file run (Bun 1.4): set it here too
setDefaultTimeout(60_000);

let ctx: TestContext;
let alice: TestUser;
let aliceRaw: string;
let temporary: string;
const scratch = { userId: 0, tokenId: 0, groupId: 0, strategyId: 0 };
let files: Record<"png" | "jpeg" | "gif" | "webp" | "anim" | "photo", Uint8Array>;

/** Alice's images: key → what deleting it gives back. */
const images = new Map<string, { name: string; path: string; size: number; objects: number }>();
/** An image of alice's that is never deleted (the delete pool excludes it): served objects have something to serve. */
const keeper = { key: "", path: "", thumbnailPath: "" };
const deletable = () => [...images.entries()].filter(([k]) => k !== keeper.key);
/** What the accounting must read now. */
const expected = { imageNum: 0, sizeBytes: 0, files: 0 };

function dataFileCount(): number {
  if (!existsSync(ctx.dataDir)) return 0;
  return readdirSync(ctx.dataDir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).length;
}

async function accounting() {
  const headers = { authorization: `Bearer ${alice.token}` };
  const profile = expectStatus(await ctx.json("/api/v1/profile", { headers }), 200).data;
  const page = expectStatus(await ctx.json("/api/v1/images?per_page=1", { headers }), 200).data;
  return { imageNum: profile.image_num as number, size: profile.size as number, total: page.total as number, files: dataFileCount() };
}

async function expectAccounting(what: string) {
  const now = await accounting();
  expect(now.imageNum, what).toBe(expected.imageNum);
  expect(now.total, what).toBe(expected.imageNum);
  expect(now.size, what).toBeCloseTo(expected.sizeBytes / 1024, 6);
  expect(now.files, what).toBe(expected.files);
}

beforeAll(async () => {
  ctx = await createTestContext();
  alice = await ctx.createUser();
  aliceRaw = alice.token.slice(alice.token.indexOf("|") + 1);
  files = {
    png: await makeImage("png", 16, 16),
    jpeg: await makeImage("jpeg", 16, 16),
    gif: await makeImage("gif", 16, 16),
    webp: await makeImage("webp", 16, 16),
    anim: await makeAnimatedGif(24, 12),
    photo: await makeNoisyJpeg(480, 320), // larger than the thumbnail box: two objects
  };
  for (const [name, bytes] of [
    ["keeper.jpg", files.photo],
    ["first.png", files.png],
    ["second.jpg", files.jpeg],
  ] as const) {
    const d = expectStatus(await ctx.upload(alice.token, { bytes, filename: name }), 200).data;
    images.set(d.key, { name: d.name, path: d.pathname, size: bytes.byteLength, objects: d.thumbnail_url === d.url ? 1 : 2 });
    if (!keeper.key) Object.assign(keeper, { key: d.key, path: d.pathname, thumbnailPath: new URL(d.thumbnail_url).pathname.slice(3) });
  }
  expect(keeper.thumbnailPath).not.toBe(keeper.path);
  const issued = expectStatus(
    await ctx.json("/api/v1/images/tokens", {
      method: "POST",
      headers: { authorization: `Bearer ${alice.token}`, "content-type": "application/json" },
      body: JSON.stringify({ num: 1, seconds: 2626560 }),
    }),
    200,
  );
  temporary = issued.data.tokens[0].token;
  // what a valid admin credential may change: records of its own, never alice's
  const mallory = await ctx.createUser();
  scratch.userId = mallory.id;
  scratch.tokenId = Number(mallory.token.split("|")[0]);
  scratch.groupId = (await ctx.admin("POST", "/api/admin/groups", { name: "scratch" })).id;
  scratch.strategyId = (await ctx.admin("POST", "/api/admin/strategies", { name: "scratch", driver: "local" })).id;
  const now = await accounting();
  Object.assign(expected, { imageNum: now.imageNum, sizeBytes: Math.round(now.size * 1024), files: now.files });
  expect(expected.imageNum).toBe(3);
});
afterAll(() => ctx.close());

// ---------------------------------------------------------------------------------------------------------
// arbitraries

type Credential = "none" | "alice" | "aliceRaw" | "temporary" | "admin" | "garbage";

interface Req {
  method: string;
  path: string;
  credential: Credential;
  /** the Authorization header: undefined = none */
  authorization?: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  /** for uploads: the bytes of every part sent with a filename */
  fileParts?: Uint8Array[];
  /** for uploads: a `token` field carrying a valid credential */
  tokenField?: Credential;
}

/** Any string, control characters and unicode included. */
const anyString = (maxLength = 24) =>
  fc.oneof(fc.string({ unit: "binary-ascii", maxLength }), fc.string({ unit: "grapheme", maxLength }), fc.string({ maxLength }));

/** Numbers as they are written in hostile queries and paths. */
const numberish = fc.oneof(
  fc.constantFrom(
    "0",
    "-1",
    "1",
    "2",
    "30",
    "100",
    "101",
    "1.5",
    "1e3",
    "1e400",
    "0x10",
    "Infinity",
    "NaN",
    " 1",
    "1 ",
    "+1",
    "",
    "2147483647",
    "2147483648",
    "99999999999",
    "99999999999999999999",
  ),
  fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String),
  fc.integer().map(String),
);

/** A percent-encoded path segment or query component from any bytes (invalid UTF-8 and %00 included). */
const encodedBytes = fc.uint8Array({ maxLength: 16 }).map((b) => [...b].map((x) => `%${x.toString(16).padStart(2, "0")}`).join(""));
const component = fc.oneof(
  anyString().map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, ""))),
  encodedBytes,
  numberish.map(encodeURIComponent),
  fc.stringMatching(/^[A-Za-z0-9._~%!$&'()*+,;=:@-]{0,12}$/), // raw, possibly broken percent escapes
);

const query = fc
  .array(
    fc.tuple(
      fc.oneof(fc.constantFrom("q", "per_page", "page", "strategy_id", "username", "key", "id", "per_page"), component),
      fc.oneof(component, numberish.map(encodeURIComponent)),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => (pairs.length ? `?${pairs.map(([k, v]) => `${k}=${v}`).join("&")}` : ""));

/** Header values the Fetch API lets through (no NUL, CR, LF), latin-1 only. */
const headerValue = fc
  .string({
    unit: fc
      .integer({ min: 1, max: 0xff })
      .filter((c) => c !== 10 && c !== 13)
      .map((c) => String.fromCharCode(c)),
    maxLength: 40,
  })
  .filter((v) => {
    try {
      new Headers({ x: v });
      return true;
    } catch {
      return false;
    }
  });

/** A credential: mostly the one the operation wants (so that the random input reaches the handler), else any. */
const garbageAuthorization = fc
  .oneof(
    headerValue,
    headerValue.map((v) => `Bearer ${v}`),
    fc.constantFrom("Bearer", "Bearer ", "bearer", "Basic YTpi", "Bearer |", "Bearer ||", "Bearer 1|", "Bearer |x", "Bearer 99999999999|x", "Bearer -1|x"),
    numberish.map((n) => `Bearer ${n}|x`),
  )
  .map((authorization) => ({ credential: "garbage" as const, authorization }));
const credential = (preferred: Credential[]): fc.Arbitrary<{ credential: Credential; authorization?: string }> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...preferred).map((c) => ({ credential: c })) },
    { weight: 1, arbitrary: fc.constant({ credential: "none" as const }) },
    { weight: 1, arbitrary: fc.constantFrom<Credential>("alice", "aliceRaw", "temporary", "admin").map((c) => ({ credential: c })) },
    { weight: 2, arbitrary: garbageAuthorization },
  );

function authorizationFor(c: Credential, garbage?: string): string | undefined {
  switch (c) {
    case "none":
      return undefined;
    case "alice":
      return `Bearer ${alice.token}`;
    case "aliceRaw":
      return `Bearer ${aliceRaw}`;
    case "temporary":
      return `Bearer ${temporary}`;
    case "admin":
      return `Bearer ${ADMIN_TOKEN}`;
    case "garbage":
      return garbage;
  }
}

const extraHeaders = fc.dictionary(
  fc.constantFrom("accept", "content-type", "x-forwarded-for", "x-request-id", "range", "if-none-match", "if-modified-since", "content-encoding", "x-junk"),
  headerValue,
  { maxKeys: 3 },
);

const utf8 = (s: string) => new Uint8Array(Buffer.from(s, "utf8"));

/** A JSON body: random JSON, or the operation's fields holding random values, or bytes that are not JSON. */
const jsonValue = fc.oneof(
  numberish.map((n) => (Number.isFinite(Number(n)) && n.trim() !== "" ? Number(n) : n)),
  anyString(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(anyString(6), fc.oneof(anyString(), fc.integer()), { maxKeys: 3 }),
);
const fieldNames = [
  "num",
  "seconds",
  "name",
  "username",
  "email",
  "password",
  "group_id",
  "capacity_kb",
  "registered_ip",
  "enabled",
  "allow_api",
  "is_default",
  "max_file_size_kb",
  "allowed_extensions",
  "max_pixels",
  "uploads_per_minute",
  "concurrent_uploads",
  "retention_max_seconds",
  "default_capacity_kb",
  "review_provider",
  "review_webhook_url",
  "review_timeout_ms",
  "strategy_ids",
  "driver",
  "config",
  "quota_kb",
  "api_enabled",
  "guest_upload_enabled",
];
/** Values a field plausibly holds (often valid, often just out of range), so that random bodies also reach the handlers. */
/** Mostly a valid value, sometimes an invalid one. */
const mostly = (valid: fc.Arbitrary<unknown>, invalid: fc.Arbitrary<unknown>) => fc.oneof({ weight: 3, arbitrary: valid }, { weight: 1, arbitrary: invalid });
const plainText = (max: number) => fc.stringMatching(new RegExp(`^[A-Za-z0-9 ._-]{1,${max}}$`));
const plausible: Record<string, fc.Arbitrary<unknown>> = {
  num: mostly(fc.integer({ min: 1, max: 5 }), fc.integer({ min: -2, max: 120 })),
  seconds: mostly(fc.integer({ min: 1, max: 100_000 }), fc.constantFrom(0, -1, 2626560, 2626561)),
  name: mostly(plainText(30), anyString(120)),
  username: mostly(fc.stringMatching(/^[A-Za-z0-9_.-]{2,20}$/), anyString(70)),
  email: mostly(
    fc.stringMatching(/^[a-z0-9]{1,10}$/).map((u) => `${u}@example.com`),
    anyString(20),
  ),
  password: mostly(
    plainText(20).filter((p) => p.length >= 8),
    anyString(30),
  ),
  group_id: mostly(
    fc.constant(0).map(() => scratch.groupId),
    fc.constantFrom(1, 2, 0, -1, 2147483647),
  ),
  capacity_kb: mostly(fc.oneof(fc.integer({ min: 0, max: 10_000_000 }), fc.constant(null)), fc.constantFrom(-1, 1.5, "1")),
  registered_ip: mostly(fc.ipV4(), anyString(50)),
  enabled: fc.boolean(),
  allow_api: fc.boolean(),
  is_default: fc.boolean(),
  max_file_size_kb: mostly(fc.integer({ min: 1, max: 1_048_576 }), fc.integer({ min: -1, max: 2_000_000 })),
  allowed_extensions: mostly(
    fc.uniqueArray(fc.constantFrom("png", "jpg", "jpeg", "gif", "webp", "avif", "tif", "tiff"), { minLength: 1, maxLength: 4 }),
    fc.array(fc.constantFrom("svg", "bmp", "", "png"), { maxLength: 3 }),
  ),
  max_pixels: mostly(fc.integer({ min: 1, max: 1_000_000_000 }), fc.integer({ min: -1, max: 2_000_000_000 })),
  uploads_per_minute: mostly(fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constant(null)), fc.constantFrom(0, -1)),
  concurrent_uploads: mostly(fc.oneof(fc.integer({ min: 1, max: 10 }), fc.constant(null)), fc.constantFrom(0, -1)),
  retention_max_seconds: mostly(fc.oneof(fc.integer({ min: 1, max: 10_000_000 }), fc.constant(null)), fc.constantFrom(0, -1)),
  default_capacity_kb: mostly(fc.integer({ min: 0, max: 10_000_000 }), fc.constantFrom(-1, 1.5)),
  review_provider: mostly(fc.constant("none"), fc.constantFrom("webhook", "other")),
  review_webhook_url: mostly(fc.constantFrom("http://127.0.0.1:9/review", null), anyString(20)),
  review_timeout_ms: mostly(fc.integer({ min: 100, max: 60_000 }), fc.integer({ min: 0, max: 70_000 })),
  strategy_ids: mostly(
    fc.constant(0).map(() => [scratch.strategyId]),
    fc.array(fc.integer({ min: -1, max: 5 }), { maxLength: 3 }),
  ),
  driver: mostly(fc.constant("local"), fc.constantFrom("s3", "ftp")),
  config: mostly(
    fc.constant({}),
    fc.dictionary(fc.constantFrom("root", "url", "bucket", "endpoint", "region", "prefix", "secret_access_key", "x"), anyString(20), { maxKeys: 3 }),
  ),
  quota_kb: mostly(fc.oneof(fc.integer({ min: 0, max: 10_000_000 }), fc.constant(null)), fc.constantFrom(-1, 1.5)),
  api_enabled: fc.boolean(),
  guest_upload_enabled: fc.boolean(),
};
const plausibleObject = fc
  .uniqueArray(fc.constantFrom(...fieldNames), { maxLength: 4 })
  .chain((names) =>
    fc.tuple(...names.map((n) => fc.oneof({ weight: 4, arbitrary: plausible[n]! }, { weight: 1, arbitrary: jsonValue }).map((v) => [n, v] as const))),
  )
  .map((entries) => Object.fromEntries(entries));
/** The fields each operation reads: a plausible body names some of them. */
const bodyFields: Record<string, string[]> = {
  "/api/v1/images/tokens": ["num", "seconds"],
  "/api/admin/settings": ["api_enabled", "guest_upload_enabled"],
  "/api/admin/groups": fieldNames.filter((n) =>
    /^(name|enabled|allow_api|is_default|max_|allowed_|uploads_|concurrent|retention|default_capacity|review_|strategy_ids)/.test(n),
  ),
  "/api/admin/strategies": ["name", "driver", "config", "quota_kb", "enabled"],
  "/api/admin/users": ["username", "email", "name", "password", "group_id", "capacity_kb", "registered_ip"],
  "/api/admin/users/{user}": ["enabled", "group_id", "capacity_kb", "name"],
  "/api/admin/users/{user}/albums": ["name"],
};
bodyFields["/api/admin/groups/{group}"] = bodyFields["/api/admin/groups"]!;
bodyFields["/api/admin/strategies/{strategy}"] = bodyFields["/api/admin/strategies"]!;

/** What creating each resource requires. */
const requiredFields: Record<string, string[]> = {
  "/api/v1/images/tokens": ["num", "seconds"],
  "/api/admin/groups": ["name"],
  "/api/admin/strategies": ["name", "driver"],
  "/api/admin/users": ["username", "email"],
  "/api/admin/users/{user}/albums": ["name"],
};

/** An object with some of `names` (mostly with the required ones), each holding a plausible value or anything. */
const objectOf = (names: string[], required: string[] = []) =>
  fc
    .oneof(
      { weight: 1, arbitrary: fc.constant(names) },
      { weight: 4, arbitrary: fc.subarray(names.filter((n) => !required.includes(n))).map((rest) => [...required, ...rest]) },
      { weight: 1, arbitrary: fc.subarray(names) },
    )
    .chain((picked) =>
      fc.tuple(...picked.map((n) => fc.oneof({ weight: 6, arbitrary: plausible[n]! }, { weight: 1, arbitrary: jsonValue }).map((v) => [n, v] as const))),
    )
    .map((entries) => Object.fromEntries(entries));

const bodyFor = (template: string) =>
  fc.oneof(
    { weight: 6, arbitrary: objectOf(bodyFields[template] ?? fieldNames.slice(0, 4), requiredFields[template]).map((o) => utf8(JSON.stringify(o))) },
    { weight: 1, arbitrary: jsonBody },
  );

const jsonBody = fc.oneof(
  { weight: 4, arbitrary: plausibleObject.map((o) => utf8(JSON.stringify(o))) },
  {
    weight: 1,
    arbitrary: fc.dictionary(fc.oneof(fc.constantFrom(...fieldNames), anyString(8)), jsonValue, { maxKeys: 5 }).map((o) => utf8(JSON.stringify(o))),
  },
  { weight: 1, arbitrary: fc.jsonValue().map((v) => utf8(JSON.stringify(v))) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) },
  { weight: 1, arbitrary: anyString(64).map(utf8) },
);

type PartValue =
  | { kind: "image"; format: keyof typeof formats; mutation: "none" | "truncate" | "flip" | "append-html" | "prepend" }
  | { kind: "bytes"; bytes: Uint8Array }
  | { kind: "text"; text: string }
  | { kind: "token"; which: "temporary" | "alice" };

interface PartSpec {
  name: string;
  filename?: string;
  filenameStar?: string;
  contentType?: string;
  junkHeaders: string[];
  value: PartValue;
}

const formats = {
  png: ["png", "image/png"],
  jpeg: ["jpg", "image/jpeg"],
  gif: ["gif", "image/gif"],
  webp: ["webp", "image/webp"],
  anim: ["gif", "image/gif"],
  photo: ["jpeg", "image/jpeg"],
} as const;

/** The small fields of an upload, holding plausible or hostile values. */
const smallField: fc.Arbitrary<PartSpec> = fc.record({
  name: fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom("token", "strategy_id", "album_id", "permission", "expired_at", "ssl") },
    { weight: 1, arbitrary: anyString(8) },
  ),
  contentType: fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: headerValue }),
  junkHeaders: fc.array(headerValue, { maxLength: 1 }),
  value: fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom("temporary", "alice").map((which) => ({ kind: "token" as const, which })) },
    {
      weight: 3,
      arbitrary: fc
        .constantFrom("0", "1", "2", "-1", "", "true", "2030-01-01T00:00:00Z", "2030-01-01 00:00:00", "2026-02-30 10:00:00", "2000-01-01T00:00:00Z")
        .map((text) => ({ kind: "text" as const, text })),
    },
    { weight: 2, arbitrary: fc.oneof(numberish, anyString()).map((text) => ({ kind: "text" as const, text })) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ kind: "bytes" as const, bytes })) },
  ),
});

/** The file part: mostly a real image under a matching name and type, sometimes mislabelled or damaged. */
const filePart: fc.Arbitrary<PartSpec> = fc
  .record({
    name: fc.oneof({ weight: 8, arbitrary: fc.constant("file") }, { weight: 1, arbitrary: anyString(6) }),
    format: fc.constantFrom(...(Object.keys(formats) as (keyof typeof formats)[])),
    ext: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom("png", "jpg", "gif", "svg", "html", "", "PNG") }),
    type: fc.oneof(
      { weight: 4, arbitrary: fc.constant("matching") },
      { weight: 1, arbitrary: fc.constantFrom(undefined, "application/octet-stream", "image/png", "image/jpeg", "text/html", "image/svg+xml") },
      { weight: 1, arbitrary: headerValue },
    ),
    stem: fc.oneof({ weight: 4, arbitrary: fc.constantFrom("a", "screen shot", "图片", "../../etc/x") }, { weight: 1, arbitrary: anyString(12) }),
    star: fc.oneof({ weight: 8, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    mutation: fc.oneof(
      { weight: 6, arbitrary: fc.constant("none" as const) },
      { weight: 1, arbitrary: fc.constantFrom("truncate" as const, "flip" as const, "append-html" as const, "prepend" as const) },
    ),
    junkHeaders: fc.array(headerValue, { maxLength: 1 }),
  })
  .map(({ name, format, ext, type, stem, star, mutation, junkHeaders }) => {
    const [matchingExt, mime] = formats[format];
    const filename = `${stem}.${ext ?? matchingExt}`;
    return {
      name,
      ...(star ? { filenameStar: encodeURIComponent(filename.replace(/[\ud800-\udfff]/g, "")) } : { filename }),
      contentType: type === "matching" ? mime : type,
      junkHeaders,
      value: { kind: "image" as const, format, mutation },
    };
  });

/** Anything at all in a part. */
const chaoticPart: fc.Arbitrary<PartSpec> = fc.record({
  name: fc.oneof(fc.constantFrom("file", "token", "strategy_id"), anyString(8)),
  filename: fc.option(anyString(16), { nil: undefined }),
  filenameStar: fc.option(component, { nil: undefined }),
  contentType: fc.option(headerValue, { nil: undefined }),
  junkHeaders: fc.array(headerValue, { maxLength: 2 }),
  value: fc.oneof(
    fc.uint8Array({ maxLength: 256 }).map((bytes) => ({ kind: "bytes" as const, bytes })),
    anyString(40).map((text) => ({ kind: "text" as const, text })),
    fc.constantFrom(...(Object.keys(formats) as (keyof typeof formats)[])).map((format) => ({ kind: "image" as const, format, mutation: "none" as const })),
  ),
});

function partBytes(v: PartValue): Uint8Array {
  switch (v.kind) {
    case "bytes":
      return v.bytes;
    case "text":
      return utf8(v.text);
    case "token":
      return utf8(v.which === "temporary" ? temporary : alice.token);
    case "image": {
      const b = files[v.format];
      if (v.mutation === "truncate") return b.subarray(0, b.byteLength >> 1);
      if (v.mutation === "flip") {
        const c = new Uint8Array(b);
        c[c.byteLength >> 1] ^= 0xff;
        return c;
      }
      if (v.mutation === "append-html") return new Uint8Array(Buffer.concat([Buffer.from(b), Buffer.from("<html><script>alert(1)</script>")]));
      if (v.mutation === "prepend") return new Uint8Array(Buffer.concat([Buffer.from("GIF89a"), Buffer.from(b)]));
      return b;
    }
  }
}

/** A multipart body written byte for byte: random boundary, parts, part headers, bytes and line endings. */
const multipartBody = fc
  .record({
    boundary: fc.oneof(
      { weight: 4, arbitrary: fc.stringMatching(/^[A-Za-z0-9'()+_,./:=?-]{1,70}$/) },
      { weight: 1, arbitrary: headerValue.map((v) => v.slice(0, 10)) },
    ),
    declaredBoundary: fc.oneof({ weight: 8, arbitrary: fc.constant("same") }, { weight: 1, arbitrary: fc.constantFrom("quoted", "other", "missing", "none") }),
    eol: fc.oneof({ weight: 8, arbitrary: fc.constant("\r\n") }, { weight: 1, arbitrary: fc.constant("\n") }),
    preamble: fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: anyString(16) }),
    closing: fc.oneof({ weight: 8, arbitrary: fc.constant("close") }, { weight: 1, arbitrary: fc.constantFrom("none", "open") }),
    fields: fc.array(smallField, { maxLength: 3 }),
    file: fc.option(filePart, { freq: 8, nil: undefined }),
    chaos: fc.oneof({ weight: 3, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(chaoticPart, { minLength: 1, maxLength: 2 }) }),
    chaosFirst: fc.boolean(),
  })
  .map((m) => {
    const eol = m.eol;
    const chunks: Buffer[] = [];
    const fileParts: Uint8Array[] = [];
    let tokenField: Credential | undefined;
    const parts = [...m.fields, ...(m.file ? [m.file] : [])];
    if (m.chaosFirst) parts.unshift(...m.chaos);
    else parts.push(...m.chaos);
    if (m.preamble !== undefined) chunks.push(Buffer.from(m.preamble + eol));
    for (const p of parts) {
      let disposition = `form-data; name="${p.name}"`;
      const filename = p.filename;
      if (filename !== undefined) disposition += `; filename="${filename}"`;
      if (p.filenameStar !== undefined) disposition += `; filename*=UTF-8''${p.filenameStar}`;
      let head = `--${m.boundary}${eol}Content-Disposition: ${disposition}${eol}`;
      if (p.contentType !== undefined) head += `Content-Type: ${p.contentType}${eol}`;
      for (const j of p.junkHeaders) head += `X-Junk: ${j}${eol}`;
      const bytes = partBytes(p.value);
      if (p.name === "token" && p.value.kind === "token" && tokenField === undefined) tokenField = p.value.which;
      if (filename !== undefined || p.filenameStar !== undefined) fileParts.push(bytes);
      chunks.push(Buffer.from(head + eol, "utf8"), Buffer.from(bytes), Buffer.from(eol));
    }
    if (m.closing === "close") chunks.push(Buffer.from(`--${m.boundary}--${eol}`));
    if (m.closing === "open") chunks.push(Buffer.from(`--${m.boundary}${eol}`));
    const declared =
      m.declaredBoundary === "same"
        ? `multipart/form-data; boundary=${m.boundary}`
        : m.declaredBoundary === "quoted"
          ? `multipart/form-data; boundary="${m.boundary}"`
          : m.declaredBoundary === "other"
            ? "multipart/form-data; boundary=not-the-one"
            : m.declaredBoundary === "missing"
              ? "multipart/form-data"
              : undefined;
    return { body: new Uint8Array(Buffer.concat(chunks)), contentType: declared, fileParts, tokenField };
  });

// ---------------------------------------------------------------------------------------------------------
// the requests

const keyParam = fc.oneof({ weight: 4, arbitrary: component }, { weight: 1, arbitrary: fc.constantFrom("existing-key", "existing-name") });
const adminId = fc.oneof(
  fc.constantFrom("scratch"),
  fc.constantFrom("0", "-1", "1.5", "1e3", "0x10", "2147483648", "99999999999", "1e30", "%00", "%20", "abc"),
  component.filter((c) => {
    // never an id that could name one of alice's records
    let decoded = c;
    try {
      decoded = decodeURIComponent(c);
    } catch {}
    return !/^\s*-?\d+\s*$/.test(decoded) && decoded !== "";
  }),
);

type Operation = { method: string; template: string; body: "none" | "json" | "tokens" };
const v1Operations: Operation[] = [
  { method: "GET", template: "/api/v1/profile", body: "none" },
  { method: "GET", template: "/api/v1/strategies", body: "none" },
  { method: "GET", template: "/api/v1/images", body: "none" },
  { method: "DELETE", template: "/api/v1/images/{key}", body: "none" },
  { method: "POST", template: "/api/v1/images/tokens", body: "tokens" },
];
const adminOperations: Operation[] = [
  { method: "GET", template: "/api/admin/settings", body: "none" },
  { method: "PATCH", template: "/api/admin/settings", body: "json" },
  { method: "GET", template: "/api/admin/groups", body: "none" },
  { method: "POST", template: "/api/admin/groups", body: "json" },
  { method: "PATCH", template: "/api/admin/groups/{group}", body: "json" },
  { method: "GET", template: "/api/admin/strategies", body: "none" },
  { method: "POST", template: "/api/admin/strategies", body: "json" },
  { method: "PATCH", template: "/api/admin/strategies/{strategy}", body: "json" },
  { method: "GET", template: "/api/admin/users", body: "none" },
  { method: "POST", template: "/api/admin/users", body: "json" },
  { method: "GET", template: "/api/admin/users/{user}", body: "none" },
  { method: "PATCH", template: "/api/admin/users/{user}", body: "json" },
  { method: "POST", template: "/api/admin/users/{user}/tokens", body: "none" },
  { method: "GET", template: "/api/admin/users/{user}/tokens", body: "none" },
  { method: "POST", template: "/api/admin/users/{user}/albums", body: "json" },
  { method: "DELETE", template: "/api/admin/tokens/{token}", body: "none" },
];

function requestFor(ops: Operation[], preferred: Credential[]) {
  return fc
    .record({
      op: fc.constantFrom(...ops),
      key: keyParam,
      id: adminId,
      query,
      cred: credential(preferred),
      headers: extraHeaders,
      form: fc.boolean(),
    })
    .chain((r) =>
      (r.form && r.op.body === "tokens"
        ? objectOf(bodyFields[r.op.template]!, requiredFields[r.op.template]).map((o) =>
            utf8(new URLSearchParams(Object.entries(o).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])).toString()),
          )
        : bodyFor(r.op.template)
      ).map((json) => ({ ...r, json })),
    )
    .map(({ op, key, id, query, cred, headers, json, form }): Req => {
      const scratchId = (template: string) =>
        template.includes("{group}")
          ? scratch.groupId
          : template.includes("{strategy}")
            ? scratch.strategyId
            : template.includes("{token}")
              ? scratch.tokenId
              : scratch.userId;
      const path = op.template
        .replace("{key}", key === "existing-key" ? (deletable()[0]?.[0] ?? "none") : key === "existing-name" ? (deletable()[0]?.[1].name ?? "none") : key)
        .replace(/\{(group|strategy|user|token)\}/, id === "scratch" ? String(scratchId(op.template)) : id);
      const h: Record<string, string> = { ...headers };
      let body: Uint8Array | undefined;
      if (op.body === "json" || op.body === "tokens") {
        body = json;
        if (!("content-type" in h)) h["content-type"] = form && op.body === "tokens" ? "application/x-www-form-urlencoded" : "application/json";
      }
      return {
        method: op.method,
        path: `${path}${query}`,
        credential: cred.credential,
        authorization: authorizationFor(cred.credential, cred.authorization),
        headers: h,
        body,
      };
    });
}

const uploadRequest = fc
  .record({
    cred: credential(["alice", "aliceRaw", "temporary"]),
    m: multipartBody,
    query,
    headers: extraHeaders,
    typeOverride: fc.oneof({ weight: 12, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: headerValue }),
  })
  .map(({ cred, m, query, headers, typeOverride }): Req => {
    const h: Record<string, string> = { ...headers };
    delete h["content-type"];
    const type = typeOverride ?? m.contentType;
    if (type !== undefined) h["content-type"] = type;
    return {
      method: "POST",
      path: `/api/v1/upload${query}`,
      credential: cred.credential,
      authorization: authorizationFor(cred.credential, cred.authorization),
      headers: h,
      body: m.body,
      fileParts: m.fileParts,
      tokenField: m.tokenField,
    };
  });

const servePath = fc.oneof(
  component.map((c) => `/i/${c}`),
  fc.tuple(fc.constantFrom("", "thumbnails/", "../", "%2e%2e/"), component).map(([p, c]) => `/i/${p}${c}`),
  fc.constantFrom("path", "thumbnailPath").map((k) => `/i/${keeper[k as "path" | "thumbnailPath"]}`),
  fc.constantFrom("path", "thumbnailPath").map((k) => `/i/${keeper[k as "path" | "thumbnailPath"]}`),
  component.map((c) => `/i/${keeper.path}${c}`),
);
const serveRequest = fc.record({ path: servePath, cred: credential(["none"]), headers: extraHeaders, method: fc.constantFrom("GET", "GET", "HEAD") }).map(
  ({ path, cred, headers, method }): Req => ({
    method,
    path,
    credential: cred.credential,
    authorization: authorizationFor(cred.credential, cred.authorization),
    headers,
  }),
);

const strayRequest = fc
  .record({
    method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"),
    prefix: fc.constantFrom("/api/v1/", "/api/admin/", "/api/", "/"),
    rest: component,
    query,
    cred: credential(["alice", "admin", "none"]),
    headers: extraHeaders,
  })
  .map(
    ({ method, prefix, rest, query, cred, headers }): Req => ({
      method,
      path: `${prefix}${rest}${query}`,
      credential: cred.credential,
      authorization: authorizationFor(cred.credential, cred.authorization),
      headers,
    }),
  );

// ---------------------------------------------------------------------------------------------------------
// sending and judging

async function withTimeLimit<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${REQUEST_TIME_LIMIT_MS} ms: ${what}`)), REQUEST_TIME_LIMIT_MS);
  });
  try {
    return await Promise.race([p, limit]);
  } finally {
    clearTimeout(timer);
  }
}

const describeReq = (r: Req) =>
  `${r.method} ${r.path} [${r.credential}${r.authorization && r.credential === "garbage" ? ` ${JSON.stringify(r.authorization)}` : ""}] headers=${JSON.stringify(r.headers)} body=${r.body ? `${r.body.byteLength} bytes` : "none"}`;

/** Who may get a 200 from each operation. */
function legitimate(r: Req, pathname: string): boolean {
  const permanent = r.credential === "alice" || r.credential === "aliceRaw";
  if (pathname.startsWith("/api/admin/")) return r.credential === "admin";
  if (pathname === "/api/v1/upload") {
    if (r.authorization !== undefined) return permanent || r.credential === "temporary";
    return r.tokenField !== undefined;
  }
  if (pathname.startsWith("/api/v1/")) return permanent;
  return true;
}

async function send(r: Req) {
  const what = describeReq(r);
  const headers: Record<string, string> = { ...r.headers };
  if (r.authorization !== undefined) headers.authorization = r.authorization;
  const res = await withTimeLimit(
    ctx.request(r.path, { method: r.method, headers, body: r.method === "GET" || r.method === "HEAD" || !r.body ? undefined : new Uint8Array(r.body) }),
    what,
  );
  const text = await withTimeLimit(res.text(), what);
  return { res, text, what };
}

/** Judges one answer and keeps the expected accounting in step with what a 200 legitimately changed. */
async function judge(r: Req) {
  const { res, text, what } = await send(r);
  const pathname = new URL(r.path, "http://img.test").pathname;
  const said = `${what}\n→ ${res.status} ${text.slice(0, 400)}`;
  const known = [...v1Operations, ...adminOperations, { template: "/api/v1/upload" }].find((o) =>
    new RegExp(`^${o.template.replace(/\{[a-z]+\}/g, "[^/]+")}$`).test(pathname),
  );
  const detail = process.env.FC_STATS === "messages" && res.status !== 200 ? ` ${text.match(/"message":"([^"]{0,60})/)?.[1] ?? ""}` : "";
  const tally = `${r.method} ${pathname.startsWith("/i/") ? "/i/…" : (known?.template ?? "(other)")} ${res.status}${detail}`;
  stats.set(tally, (stats.get(tally) ?? 0) + 1);
  expect(res.status, said).toBeLessThan(500);

  const isImage = pathname.startsWith("/i/") && [200, 206, 304, 416].includes(res.status);
  if (isImage) {
    expect(res.headers.get("x-content-type-options"), said).toBe("nosniff");
    if (res.status === 200 || res.status === 206) expect(res.headers.get("content-type"), said).toMatch(/^image\//);
  } else if (r.method !== "HEAD") {
    expect(res.headers.get("content-type") ?? "", said).toContain("application/json");
    const body = JSON.parse(text);
    expect(typeof body.status, said).toBe("boolean");
    expect(typeof body.message, said).toBe("string");
    expect("data" in body, said).toBe(true);
    if (res.status === 200) {
      expect(body.status, said).toBe(true);
      expect(body.message, said).toBe("success");
      expect(legitimate(r, pathname), `a 200 for an illegitimate request: ${said}`).toBe(true);
    } else {
      expect(res.status, said).toBeGreaterThanOrEqual(400);
      expect(body.status, said).toBe(false);
      expect(body.data, said).toBeNull();
      expect(body.message.length, said).toBeGreaterThan(0);
      if (res.status === 422) expect(typeof body.errors, said).toBe("object");
    }

    if (res.status === 200 && pathname === "/api/v1/upload") {
      // what was stored is bytes that were sent as a file
      const d = body.data;
      // as stored under the default group's metadata policy (strip_location), which may drop trailing data
      // (a part the policy refuses, e.g. one that is not the stored file, cannot be what was stored)
      const stripped = (b: Uint8Array) => {
        try {
          return applyMetadataPolicy(b, d.mimetype, "strip_location").bytes;
        } catch {
          return null;
        }
      };
      const sent = (r.fileParts ?? [])
        .map(stripped)
        .filter((b): b is Uint8Array => b !== null)
        .map((b) => createHash("md5").update(b).digest("hex"));
      expect(sent, said).toContain(d.md5);
      // counted against alice only when alice (or her temporary token) uploaded
      const objects = d.thumbnail_url === d.url ? 1 : 2;
      expected.files += objects;
      if (r.credential !== "none" || r.tokenField !== undefined) {
        expected.imageNum += 1;
        expected.sizeBytes += Math.round(d.size * 1024);
        images.set(d.key, { name: d.name, path: d.pathname, size: Math.round(d.size * 1024), objects });
      }
    }
    if (res.status === 200 && r.method === "DELETE" && pathname.startsWith("/api/v1/images/")) {
      const key = decodeURIComponent(pathname.slice("/api/v1/images/".length));
      const entry = [...images.entries()].find(([k, v]) => k === key || v.name === key);
      expect(entry, `deleted something that was not alice's: ${said}`).toBeDefined();
      images.delete(entry![0]);
      expected.imageNum -= 1;
      expected.sizeBytes -= entry![1].size;
      expected.files -= entry![1].objects;
    }
    if (res.status === 200 && pathname === "/api/admin/settings" && r.method === "PATCH") {
      await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: true, guest_upload_enabled: false });
    }
  }
  await expectAccounting(said);
}

/** FC_STATS=1 prints how often each operation answered each status (to see what the generators reach); FC_STATS=messages, with the message. */
const stats = new Map<string, number>();
afterAll(() => {
  if (process.env.FC_STATS)
    console.log(
      [...stats]
        .sort()
        .map(([k, n]) => `${String(n).padStart(5)}  ${k}`)
        .join("\n"),
    );
});

const params = (numRuns: number) => ({ seed: SEED, numRuns: Math.max(1, Math.round(numRuns * RUNS)), endOnFailure: false });

describe(`random requests (seed ${SEED}; FC_SEED=<n> to change it)`, () => {
  test("the /api/v1 operations", async () => {
    await fc.assert(fc.asyncProperty(requestFor(v1Operations, ["alice", "aliceRaw"]), judge), params(400));
  });

  test("the upload, with random multipart bodies", async () => {
    await fc.assert(fc.asyncProperty(uploadRequest, judge), params(500));
  });

  test("the admin operations", async () => {
    await fc.assert(fc.asyncProperty(requestFor(adminOperations, ["admin"]), judge), params(400));
  });

  test("served objects under /i/ and stray paths and methods", async () => {
    await fc.assert(fc.asyncProperty(fc.oneof(serveRequest, strayRequest), judge), params(300));
  });

  test("alice's state is intact afterwards: her token works, her images are listed", async () => {
    const listed = new Set<string>();
    for (let page = 1; ; page++) {
      const res = expectStatus(await ctx.json(`/api/v1/images?per_page=100&page=${page}`, { headers: { authorization: `Bearer ${alice.token}` } }), 200);
      expect(res.data.total).toBe(images.size);
      for (const d of res.data.data as { key: string }[]) listed.add(d.key);
      if (page >= res.data.last_page) break;
    }
    expect(listed).toEqual(new Set(images.keys()));
  });
});
