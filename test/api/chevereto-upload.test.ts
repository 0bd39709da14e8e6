/**
 * POST /api/1/upload, the Chevereto 3/4 and ImgBB dialect: the same upload as /api/v1/upload (checks, limits,
 * metadata policy, events, cost before trust) answering in those products' formats, and real clients of it from npm
 * against a loopback server: PicGo's picgo-plugin-web-uploader configured for Chevereto (under a stand-in for PicGo's
 * ctx, as test/web/integrations.test.ts runs the Lsky plugin) and imgbb-uploader's Chevereto mode.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq, sql } from "drizzle-orm";
import exifr from "exifr";
// the package names a types file it does not ship; its own declarations sit beside its CommonJS entry
import imgbbUploader from "imgbb-uploader/lib/cjs/index.js";
import { images } from "../../src/db/schema.ts";
import { createEndpoint } from "../../src/services/webhooks.ts";
import { rowsOf } from "../../src/webhooks/outbox.ts";
import { BASE_URL, createTestContext, testLog, type TestContext, type TestUser } from "../support/harness.ts";
import { makeImage, makeNoisyJpeg, multipart, type Part } from "../support/images.ts";
import { phonePhoto } from "../support/metadata-fixtures.ts";
import { expectStatus } from "../support/status.ts";

setDefaultTimeout(60_000);

let ctx: TestContext;
let alice: TestUser;
let png: Uint8Array;

beforeAll(async () => {
  ctx = await createTestContext();
  alice = await ctx.createUser();
  png = await makeImage("png", 64, 48);
});
afterAll(() => ctx.close());

const defaults = {
  max_file_size_kb: 10240,
  allowed_extensions: ["jpg", "jpeg", "png", "gif", "webp", "avif"],
  retention_max_seconds: null,
};
beforeEach(async () => {
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, defaults);
  await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: false });
});

const pngPart = (filename = "shot.png", name = "source"): Part => ({ name, value: png, filename, contentType: "image/png" });

/** POST /api/1/upload with multipart parts in the order given. */
function post(parts: Part[], options: { query?: string; headers?: Record<string, string>; path?: string } = {}) {
  const m = multipart(parts);
  return ctx.json(`${options.path ?? "/api/1/upload"}${options.query ?? ""}`, {
    method: "POST",
    headers: { "content-type": m.contentType, ...options.headers },
    body: m.body,
  });
}

/** POST /api/1/upload with an urlencoded body, parameters in the order given. */
function postForm(fields: [string, string][], options: { query?: string; headers?: Record<string, string> } = {}) {
  return ctx.request(`/api/1/upload${options.query ?? ""}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...options.headers },
    body: new URLSearchParams(fields).toString(),
  });
}

const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const md5 = (bytes: Uint8Array) => createHash("md5").update(bytes).digest("hex");

function storedFiles(): string[] {
  const root = join(ctx.dataDir, "uploads");
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name))
    .sort();
}
const countImages = async () => (await ctx.db.select().from(images)).length;

/** A refusal in Chevereto's envelope, nothing stored. */
async function expectRefusal(
  res: { status: number; body: any },
  status: number,
  code: number,
  messagePart: string,
  before: { files: string[]; images: number },
) {
  expectStatus(res, status);
  expect(Object.keys(res.body).sort()).toEqual(["error", "status_code", "status_txt"]);
  expect(res.body.status_code).toBe(status);
  expect(res.body.status_txt).toBe(
    ({ 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 415: "Unsupported Media Type" } as Record<number, string>)[status]!,
  );
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.context).toBe("string");
  expect(res.body.error.message.toLowerCase()).toContain(messagePart.toLowerCase());
  expect(storedFiles()).toEqual(before.files);
  expect(await countImages()).toBe(before.images);
}
const snapshot = async () => ({ files: storedFiles(), images: await countImages() });

describe("a successful upload", () => {
  test("Chevereto's answer: every field, the stored bytes and the record", async () => {
    const res = await post([{ name: "key", value: alice.token }, pngPart("screen shot.png")]);
    expectStatus(res, 200);
    expect(Object.keys(res.body).sort()).toEqual(["image", "status_code", "status_txt", "success"]);
    expect(res.body.status_code).toBe(200);
    expect(res.body.status_txt).toBe("OK");
    expect(res.body.success).toEqual({ message: "image uploaded", code: 200 });
    const i = res.body.image;
    const [row] = await ctx.db.select().from(images).where(eq(images.key, i.id));
    expect(row).toMatchObject({ userId: alice.id, size: png.byteLength, originName: "screen shot.png", thumbnailPath: null, isPublic: true, expiredAt: null });
    const url = `${BASE_URL}/i/${row!.path}`;
    const gmt = row!.createdAt.toISOString().slice(0, 19).replace("T", " ");
    const file = { filename: row!.name, name: row!.name.replace(/\.png$/, ""), mime: "image/png", extension: "png", url };
    expect(i).toEqual({
      id: row!.key,
      id_encoded: row!.key,
      name: row!.name.replace(/\.png$/, ""),
      extension: "png",
      filename: row!.name,
      original_filename: "screen shot.png",
      title: "screen shot",
      description: null,
      mime: "image/png",
      size: png.byteLength,
      width: 64,
      height: 48,
      md5: md5(png),
      nsfw: 0,
      date: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
      date_gmt: gmt,
      time: Math.floor(row!.createdAt.getTime() / 1000),
      expiration: 0,
      expiration_date_gmt: null,
      url,
      url_viewer: url,
      display_url: url,
      delete_url: `${BASE_URL}/api/v1/images/${row!.key}`,
      image: file,
      thumb: file, // 64×48 fits the thumbnail box: it is its own thumbnail
      medium: file,
    });
    expect(row!.key).toMatch(/^[A-Za-z0-9_-]{16}$/);
    const stored = await Bun.file(join(ctx.dataDir, "uploads", row!.path)).bytes();
    expect(Buffer.from(stored).equals(Buffer.from(png))).toBe(true);
    // the address serves it, and the delete_url deletes it with the same token
    const served = await ctx.request(new URL(url).pathname);
    expect(Buffer.from(await served.arrayBuffer()).equals(Buffer.from(png))).toBe(true);
    const del = await ctx.json(new URL(i.delete_url).pathname, { method: "DELETE", headers: ctx.bearer(alice.token) });
    expectStatus(del, 200);
    expect(await ctx.db.select().from(images).where(eq(images.key, i.id))).toEqual([]);
  });

  test("ImgBB's answer when the source is sent as `image`, with `name`; a large image's thumb is the WebP thumbnail", async () => {
    const jpeg = await makeNoisyJpeg(900, 600);
    const res = await post(
      [
        { name: "name", value: "holiday" },
        { name: "image", value: jpeg, filename: "IMG_1.jpg", contentType: "image/jpeg" },
      ],
      {
        query: `?key=${encodeURIComponent(alice.token)}`,
      },
    );
    expectStatus(res, 200);
    expect(Object.keys(res.body).sort()).toEqual(["data", "status", "success"]);
    expect(res.body.success).toBe(true);
    expect(res.body.status).toBe(200);
    const d = res.body.data;
    const [row] = await ctx.db.select().from(images).where(eq(images.key, d.id));
    expect(row!.originName).toBe("holiday.jpg");
    expect([d.original_filename, d.title, d.width, d.height, d.mime, d.extension]).toEqual(["holiday.jpg", "holiday", 900, 600, "image/jpeg", "jpg"]);
    expect(d.thumb.url).toMatch(/\/i\/thumbnails\/\d{4}\/\d{2}\/\d{2}\/[A-Za-z0-9_-]{20}\.webp$/);
    expect([d.thumb.mime, d.thumb.extension]).toEqual(["image/webp", "webp"]);
    expect(d.thumb.filename).toBe(d.thumb.url.split("/").pop());
    expect(d.display_url).toBe(d.url);
    expect(d.medium).toEqual(d.image);
    const thumb = await ctx.request(new URL(d.thumb.url).pathname);
    expect(thumb.headers.get("content-type")).toBe("image/webp");
  });

  test("the key in each place: X-API-Key, Authorization, the query, a field; a temporary token; the trailing-slash path", async () => {
    const { body } = await ctx.json("/api/v1/images/tokens", {
      method: "POST",
      headers: { ...ctx.bearer(alice.token), "content-type": "application/json" },
      body: JSON.stringify({ num: 1, seconds: 60 }),
    });
    const temporary = body.data.tokens[0].token as string;
    const ways = [
      post([pngPart()], { headers: { "x-api-key": alice.token } }),
      post([pngPart()], { headers: ctx.bearer(alice.token) }),
      post([pngPart()], { query: `?key=${encodeURIComponent(alice.token)}` }),
      post([{ name: "key", value: alice.token }, pngPart()]),
      post([{ name: "key", value: temporary }, pngPart()]),
      post([{ name: "key", value: alice.token }, pngPart()], { path: "/api/1/upload/" }),
    ];
    for (const res of await Promise.all(ways)) {
      expectStatus(res, 200);
      const [row] = await ctx.db.select().from(images).where(eq(images.key, res.body.image.id));
      expect(row!.userId).toBe(alice.id);
    }
  });

  test("base64 sources: a multipart field, and urlencoded (a data URI and line breaks are allowed)", async () => {
    const jpeg = await makeNoisyJpeg(120, 90);
    const wrapped = base64(jpeg).replace(/.{76}/g, "$&\r\n");
    const asField = await post([
      { name: "key", value: alice.token },
      { name: "source", value: wrapped },
    ]);
    expectStatus(asField, 200);
    const [row] = await ctx.db.select().from(images).where(eq(images.key, asField.body.image.id));
    expect([row!.originName, row!.mimetype, row!.size, row!.md5]).toEqual(["image.jpg", "image/jpeg", jpeg.byteLength, md5(jpeg)]);

    const form = await postForm([
      ["key", alice.token],
      ["name", "from-form"],
      ["image", `data:image/png;base64,${base64(png)}`],
    ]);
    expect(form.status).toBe(200);
    const d = ((await form.json()) as any).data;
    expect([d.original_filename, d.size, d.md5]).toEqual(["from-form.png", png.byteLength, md5(png)]);
    expect(Buffer.from(await Bun.file(join(ctx.dataDir, "uploads", new URL(d.url).pathname.slice(3))).bytes()).equals(Buffer.from(png))).toBe(true);
  });

  test("format=txt answers the URL as text; format=redirect a 302 to it (from the query or the body)", async () => {
    const txt = await ctx.request(
      "/api/1/upload?format=txt",
      (() => {
        const m = multipart([{ name: "key", value: alice.token }, pngPart()]);
        return { method: "POST", headers: { "content-type": m.contentType }, body: m.body };
      })(),
    );
    expect(txt.status).toBe(200);
    expect(txt.headers.get("content-type")).toStartWith("text/plain");
    const url = await txt.text();
    expect(url).toMatch(new RegExp(`^${BASE_URL}/i/\\d{4}/\\d{2}/\\d{2}/[A-Za-z0-9_-]{20}\\.png$`));
    const redirect = await postForm([
      ["key", alice.token],
      ["format", "redirect"],
      ["source", base64(png)],
    ]);
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get("location")).toMatch(new RegExp(`^${BASE_URL}/i/\\d{4}/\\d{2}/\\d{2}/[A-Za-z0-9_-]{20}\\.png$`));
    // a refusal under format=txt is its message alone
    const refused = await postForm([["source", base64(png)]], { query: "?format=txt" });
    expect(refused.status).toBe(401);
    expect(await refused.text()).toStartWith("Guest upload is disabled: send the key in the X-API-Key header");
  });

  test("album_id and expiration (seconds or an ISO 8601 duration) are kept", async () => {
    const album = await ctx.admin("POST", `/api/admin/users/${alice.id}/albums`, { name: "A" });
    const res = await post([
      { name: "key", value: alice.token },
      { name: "album_id", value: String(album.id) },
      { name: "expiration", value: "P1DT2H" },
      pngPart(),
    ]);
    expectStatus(res, 200);
    const [row] = await ctx.db.select().from(images).where(eq(images.key, res.body.image.id));
    expect(row!.albumId).toBe(album.id);
    const seconds = Math.round((row!.expiredAt!.getTime() - row!.createdAt.getTime()) / 1000);
    expect(Math.abs(seconds - 93_600)).toBeLessThanOrEqual(2);
    expect(Math.abs(res.body.image.expiration - 93_600)).toBeLessThanOrEqual(2);
    expect(res.body.image.expiration_date_gmt).toBe(row!.expiredAt!.toISOString().slice(0, 19).replace("T", " "));
    const bySeconds = await post([{ name: "key", value: alice.token }, { name: "expiration", value: "600" }, pngPart()]);
    const [row2] = await ctx.db.select().from(images).where(eq(images.key, bySeconds.body.image.id));
    expect(Math.abs((row2!.expiredAt!.getTime() - row2!.createdAt.getTime()) / 1000 - 600)).toBeLessThanOrEqual(2);
  });
});

describe("the same upload service", () => {
  test("the group's metadata policy: a phone photo's location is not stored", async () => {
    const photo = await phonePhoto("jpeg");
    expect((await exifr.gps(Buffer.from(photo)))?.latitude).toBeCloseTo(48.8584, 3);
    const res = await postForm([
      ["key", alice.token],
      ["source", base64(photo)],
    ]);
    expect(res.status).toBe(200);
    const d = ((await res.json()) as any).image;
    const stored = await Bun.file(join(ctx.dataDir, "uploads", new URL(d.url).pathname.slice(3))).bytes();
    expect(await exifr.gps(Buffer.from(stored)).catch(() => undefined)).toBeUndefined();
    expect(stored.byteLength).toBeLessThan(photo.byteLength);
    expect(d.size).toBe(stored.byteLength); // the answer describes the stored bytes
    expect(d.md5).toBe(md5(stored));
  });

  test("the image.uploaded event is written with the upload", async () => {
    const { endpoint } = await createEndpoint(ctx.deps, { ownerId: alice.id }, { url: "https://93.184.216.34/hook", events: ["image.uploaded"] });
    try {
      const res = await post([{ name: "key", value: alice.token }, pngPart()]);
      expectStatus(res, 200);
      const rows = rowsOf<{ endpoint_id: number; body: string }>(
        await ctx.db.execute(sql`select endpoint_id, body from webhook_deliveries where subject = ${`image:${res.body.image.id}`}`),
      );
      expect(rows.map((r) => r.endpoint_id)).toEqual([endpoint.id]);
      expect(JSON.parse(rows[0]!.body)).toMatchObject({ type: "image.uploaded", data: { key: res.body.image.id, owner: { id: alice.id } } });
    } finally {
      await ctx.db.execute(sql`delete from webhook_endpoints`);
    }
  });

  test("guest upload, when it is on, needs no key", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
    const res = await post([pngPart()], { headers: { "x-forwarded-for": "198.51.100.77" } });
    expectStatus(res, 200);
    const [row] = await ctx.db.select().from(images).where(eq(images.key, res.body.image.id));
    expect([row!.userId, row!.uploaderIp]).toEqual([null, "198.51.100.77"]);
  });
});

describe("refusals, in Chevereto's envelope, nothing stored", () => {
  test("a wrong key is 401 (code 100) wherever it is sent; no key with guest upload off says where to put it", async () => {
    const before = await snapshot();
    await expectRefusal(await post([pngPart()], { headers: { "x-api-key": "no-such-token" } }), 401, 100, "invalid token", before);
    await expectRefusal(await post([pngPart()], { query: "?key=no-such-token" }), 401, 100, "invalid token", before);
    await expectRefusal(await post([{ name: "key", value: "no-such-token" }, pngPart()]), 401, 100, "invalid token", before);
    await expectRefusal(await post([pngPart()]), 401, 100, "send the key in the X-API-Key header or the query string", before);
    await expectRefusal(await post([pngPart()], { headers: { authorization: "Basic abc" } }), 401, 100, "malformed", before);
  });

  test("a key after a large source is never read: 401 as soon as 64 KB have come, the rest unread", async () => {
    let sent = 0;
    const encoder = new TextEncoder();
    const chunk = encoder.encode("A".repeat(64 * 1024));
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(encoder.encode("source="));
      },
      pull(c) {
        if (sent >= 20 * 1024 * 1024) {
          c.enqueue(encoder.encode(`&key=${alice.token}`));
          return c.close();
        }
        sent += chunk.byteLength;
        c.enqueue(chunk);
      },
    });
    const res = await ctx.json("/api/1/upload", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: stream });
    expectStatus(res, 401);
    expect(res.body.error.message).toContain("a key after the source is never read");
    expect(sent).toBeLessThan(2 * 1024 * 1024);
  });

  test("with guest upload on, a key after the source is refused rather than ignored", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
    const before = await snapshot();
    const big = "A".repeat(70 * 1024); // more than the 64 KB read before the sender is known
    const res = await postForm([
      ["source", base64(png)],
      ["pad", big],
      ["key", alice.token],
    ]);
    await expectRefusal({ status: res.status, body: await res.json() }, 401, 100, "the key came after the source", before);
  });

  test("missing or empty source is 400 code 130; another body type 415; an URL source 400", async () => {
    const before = await snapshot();
    const key = { "x-api-key": alice.token };
    await expectRefusal(await post([{ name: "title", value: "x" }], { headers: key }), 400, 130, "empty upload source", before);
    await expectRefusal(await ctx.json("/api/1/upload", { method: "POST", headers: key }), 400, 130, "empty upload source", before);
    const form = await postForm([["source", "  "]], { headers: key });
    await expectRefusal({ status: form.status, body: await form.json() }, 400, 130, "empty upload source", before);
    const json = await ctx.json("/api/1/upload", { method: "POST", headers: { ...key, "content-type": "application/json" }, body: "{}" });
    await expectRefusal(json, 415, 415, "multipart/form-data", before);
    const url = await postForm([["source", "http://169.254.169.254/latest/meta-data"]], { headers: key });
    await expectRefusal({ status: url.status, body: await url.json() }, 400, 130, "from a url is not supported", before);
  });

  test("invalid base64 is 400 code 120; base64 of something else names what it is", async () => {
    const before = await snapshot();
    const key = { "x-api-key": alice.token };
    for (const bad of ["not base64!", "QUJD=A==", "QUJ"]) {
      const res = await postForm([["source", bad]], { headers: key });
      await expectRefusal({ status: res.status, body: await res.json() }, 400, 120, "invalid base64", before);
    }
    const pdf = await postForm([["source", base64(new TextEncoder().encode("%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"))]], { headers: key });
    await expectRefusal({ status: pdf.status, body: await pdf.json() }, 400, 400, "a pdf document", before);
  });

  test("wrong type: SVG, or a PNG named .jpg, refused by the same checks", async () => {
    const before = await snapshot();
    const key = { name: "key", value: alice.token };
    const svg = new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    await expectRefusal(
      await post([key, { name: "source", value: svg, filename: "a.svg", contentType: "image/svg+xml" }]),
      400,
      400,
      "unsupported format .svg",
      before,
    );
    await expectRefusal(await post([key, pngPart("a.jpg")]), 400, 400, "declared type image/png does not match", before);
    await expectRefusal(
      await post([key, { name: "source", value: png, filename: "a.jpg", contentType: "image/jpeg" }]),
      400,
      400,
      "named .jpg but its content is a png image",
      before,
    );
  });

  test("oversized: a file or base64 above the group's limit is 400; a huge body is refused unread", async () => {
    const jpeg = await makeNoisyJpeg(300, 300);
    const limitKb = Math.ceil(jpeg.byteLength / 1024) - 1;
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { max_file_size_kb: limitKb });
    const before = await snapshot();
    const key = { name: "key", value: alice.token };
    await expectRefusal(
      await post([key, { name: "source", value: jpeg, filename: "big.jpg", contentType: "image/jpeg" }]),
      400,
      400,
      `limit is ${limitKb} KB`,
      before,
    );
    const b64 = await postForm([
      ["key", alice.token],
      ["source", base64(jpeg)],
    ]);
    await expectRefusal({ status: b64.status, body: await b64.json() }, 400, 400, `limit of ${limitKb} KB`, before);

    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { max_file_size_kb: 100 });
    let sent = 0;
    const chunk = new Uint8Array(64 * 1024);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('--b\r\nContent-Disposition: form-data; name="source"; filename="x.png"\r\nContent-Type: image/png\r\n\r\n'));
      },
      pull(c) {
        if (sent >= 50 * 1024 * 1024) return c.close();
        sent += chunk.byteLength;
        c.enqueue(chunk);
      },
    });
    const res = await ctx.json("/api/1/upload", {
      method: "POST",
      headers: { "x-api-key": alice.token, "content-type": "multipart/form-data; boundary=b" },
      body: stream,
    });
    expectStatus(res, 400);
    expect(res.body.error.message).toContain("100 KB");
    expect(sent).toBeLessThan(2 * 1024 * 1024);
  });

  test("capacity: an account without room is refused by the service's check", async () => {
    const bob = await ctx.createUser({ capacity_kb: 1 });
    const before = await snapshot();
    const jpeg = await makeNoisyJpeg(200, 200);
    await expectRefusal(
      await post([
        { name: "key", value: bob.token },
        { name: "source", value: jpeg, filename: "a.jpg", contentType: "image/jpeg" },
      ]),
      400,
      400,
      "capacity",
      before,
    );
  });

  test("fields: album_id of another account, a non-numeric album_id, a bad expiration, beyond the retention ceiling", async () => {
    const bob = await ctx.createUser();
    const album = await ctx.admin("POST", `/api/admin/users/${bob.id}/albums`, { name: "bob's" });
    const before = await snapshot();
    const key = { name: "key", value: alice.token };
    await expectRefusal(await post([key, { name: "album_id", value: String(album.id) }, pngPart()]), 400, 400, "album", before);
    await expectRefusal(await post([key, { name: "album_id", value: "Xk9" }, pngPart()]), 400, 400, "album_id field is invalid", before);
    for (const bad of ["tomorrow", "P", "PT", "-5", "0"]) {
      await expectRefusal(await post([key, { name: "expiration", value: bad }, pngPart()]), 400, 400, "expiration field is invalid", before);
    }
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { retention_max_seconds: 3600 });
    await expectRefusal(await post([key, { name: "expiration", value: "P1D" }, pngPart()]), 400, 400, "retention", before);
  });

  test("the API switched off is 403 in the envelope", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: false });
    try {
      await expectRefusal(await post([{ name: "key", value: alice.token }, pngPart()]), 403, 403, "disabled", await snapshot());
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: true });
    }
  });
});

test("a key in the query string never reaches the log", async () => {
  const lines: string[] = [];
  const listener = (record: Record<string, unknown>) => lines.push(JSON.stringify(record));
  testLog.listeners.add(listener);
  try {
    expectStatus(await post([pngPart()], { query: `?key=${encodeURIComponent(alice.token)}` }), 200);
    expectStatus(await post([pngPart()], { query: `?key=${encodeURIComponent(`${alice.token}x`)}` }), 401);
  } finally {
    testLog.listeners.delete(listener);
  }
  expect(lines.some((l) => l.includes('"route":"/api/1/upload"'))).toBe(true);
  const secret = alice.token.slice(alice.token.indexOf("|") + 1);
  expect(lines.filter((l) => l.includes(secret))).toEqual([]);
});

describe("real clients from npm, against a loopback server", () => {
  let server: ReturnType<typeof Bun.serve>;
  let dir: string;
  beforeAll(() => {
    server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req, srv) => ctx.app.fetch(req, srv) });
    dir = mkdtempSync(join(tmpdir(), "imghost-chevereto-client-"));
  });
  afterAll(async () => {
    await server.stop(true);
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * PicGo's ctx.Request.request for the request-style options the plugin passes (method, url, headers, formData with
   * {value, options: {filename}} files, fields in their order): the form's own multipart Content-Type replaces the
   * bare one, as the `request` library does; a non-2xx answer rejects. Returns the body as text.
   */
  async function picgoRequest(options: { method: string; url: string; headers: Record<string, string>; formData: Record<string, any> }) {
    const headers = Object.fromEntries(Object.entries(options.headers).filter(([k]) => !/^content-?type$/i.test(k)));
    const body = new FormData();
    for (const [k, v] of Object.entries(options.formData)) {
      if (v && typeof v === "object" && "value" in v) body.append(k, new Blob([v.value]), v.options.filename);
      else body.append(k, String(v));
    }
    const res = await fetch(options.url, { method: options.method, headers, body });
    const text = await res.text();
    if (res.status < 200 || res.status >= 300) throw Object.assign(new Error(`${res.status} - ${text}`), { statusCode: res.status });
    return text;
  }

  test("PicGo with picgo-plugin-web-uploader configured for Chevereto: the key as a header or a field before the file", async () => {
    const plugin = createRequire(import.meta.url)("picgo-plugin-web-uploader") as (ctx: any) => { register: () => void };
    const url = `http://127.0.0.1:${server.port}/api/1/upload`;
    for (const config of [
      { url, paramName: "source", jsonPath: "image.url", customHeader: JSON.stringify({ "X-API-Key": alice.token }) },
      { url, paramName: "image", jsonPath: "data.url", customBody: JSON.stringify({ key: alice.token }) },
    ]) {
      const uploaders: Record<string, { handle: (ctx: any) => Promise<any> }> = {};
      const notifications: unknown[] = [];
      const picgo = {
        getConfig: (key: string) => (key === "picBed.web-uploader" ? config : undefined),
        helper: { uploader: { register: (name: string, u: any) => (uploaders[name] = u) } },
        emit: (_event: string, payload: unknown) => notifications.push(payload),
        Request: { request: picgoRequest },
        log: { info() {}, warn() {}, error() {}, success() {} },
        output: [{ fileName: "picgo.png", extname: ".png", buffer: Buffer.from(png), width: 64, height: 48 }] as any[],
      };
      plugin(picgo).register();
      await uploaders["web-uploader"]!.handle(picgo);
      expect(notifications).toEqual([]);
      const imgUrl = picgo.output[0].imgUrl as string;
      expect(imgUrl).toMatch(new RegExp(`^${BASE_URL}/i/\\d{4}/\\d{2}/\\d{2}/[A-Za-z0-9_-]{20}\\.png$`));
      const [row] = await ctx.db
        .select()
        .from(images)
        .where(eq(images.path, imgUrl.slice(`${BASE_URL}/i/`.length)));
      expect([row!.userId, row!.originName, row!.md5]).toEqual([alice.id, "picgo.png", md5(png)]);
    }
  });

  test("imgbb-uploader in Chevereto mode uploads a file and a base64 string, and reads the answer it expects", async () => {
    const path = join(dir, "client.png");
    writeFileSync(path, png);
    const host = `http://127.0.0.1:${server.port}`;
    const fromFile = (await imgbbUploader({ apiKey: alice.token, imagePath: path, cheveretoHost: host })) as any;
    expect(fromFile.status_code).toBe(200);
    const [row] = await ctx.db.select().from(images).where(eq(images.key, fromFile.image.id));
    expect([row!.userId, row!.size, row!.md5]).toEqual([alice.id, png.byteLength, md5(png)]);
    expect(fromFile.image.url).toBe(`${BASE_URL}/i/${row!.path}`);

    const jpeg = await makeNoisyJpeg(160, 120);
    const fromBase64 = (await imgbbUploader({
      apiKey: alice.token,
      base64string: base64(jpeg),
      cheveretoHost: host,
      customPayload: { expiration: "PT1H" },
    })) as any;
    const [row2] = await ctx.db.select().from(images).where(eq(images.key, fromBase64.image.id));
    expect([row2!.mimetype, row2!.md5]).toEqual(["image/jpeg", md5(jpeg)]);
    expect(Math.abs((row2!.expiredAt!.getTime() - row2!.createdAt.getTime()) / 1000 - 3600)).toBeLessThanOrEqual(2);

    // its refusals: the client rejects with our error envelope inside
    const refused = await imgbbUploader({ apiKey: "no-such-token", imagePath: path, cheveretoHost: host }).then(
      () => null,
      (e: Error) => JSON.parse(e.message),
    );
    expect(refused.cheveretoResponse).toMatchObject({ status_code: 401, error: { code: 100, message: "Invalid token." } });
  });
});
