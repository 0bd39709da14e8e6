import { afterAll, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import sharp from "sharp";
import { images, uploadLog } from "../../src/db/schema.ts";
import { BASE_URL, createTestContext, quietly, type TestContext, type TestUser } from "../support/harness.ts";
import { makeAnimatedGif, makeImage, makeNoisyJpeg, pngHeaderClaiming } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
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
  max_pixels: 100_000_000,
  retention_max_seconds: null,
  review_provider: "none",
};
beforeEach(async () => {
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, defaults);
  await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: false });
});

/** Every object under the storage root, relative. */
function storedFiles(): string[] {
  const root = join(ctx.dataDir, "uploads");
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name).slice(root.length + 1))
    .sort();
}

async function countImages() {
  return (await ctx.db.select().from(images)).length;
}

/** A refused upload leaves no trace: no object, no record, no charge. */
async function expectRefused(
  res: { status: number; body: any },
  status: number,
  messagePart: string,
  before: { files: string[]; images: number; size: number },
) {
  expectStatus(res, status);
  expect(res.body.status).toBe(false);
  expect(res.body.data).toBeNull();
  expect(res.body.message.toLowerCase()).toContain(messagePart.toLowerCase());
  expect(storedFiles()).toEqual(before.files);
  expect(await countImages()).toBe(before.images);
  const profile = await ctx.json("/api/v1/profile", { headers: ctx.bearer(alice.token) });
  expect(profile.body.data.size).toBe(before.size);
}

async function snapshot() {
  const profile = await ctx.json("/api/v1/profile", { headers: ctx.bearer(alice.token) });
  return { files: storedFiles(), images: await countImages(), size: profile.body.data.size as number };
}

describe("a successful upload", () => {
  test("returns every field of 2.4 plus links and pathname, and stores exactly those bytes", async () => {
    const res = await ctx.upload(alice.token, { bytes: png, filename: "screen shot.png", contentType: "image/png" });
    expectStatus(res, 200);
    expect(res.body.status).toBe(true);
    expect(res.body.message).toBe("success");
    const d = res.body.data;
    const md5 = createHash("md5").update(png).digest("hex");
    const sha1 = createHash("sha1").update(png).digest("hex");
    expect(d.key).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(d.name).toMatch(/^[A-Za-z0-9_-]{20}\.png$/);
    expect(d.origin_name).toBe("screen shot.png");
    expect(d.size).toBe(png.byteLength / 1024);
    expect(d.mimetype).toBe("image/png");
    expect(d.extension).toBe("png");
    expect(d.width).toBe(64);
    expect(d.height).toBe(48);
    expect(d.md5).toBe(md5);
    expect(d.sha1).toBe(sha1);
    expect(d.is_public).toBe(true);
    expect(d.expired_at).toBeNull();
    expect(d.created_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(d.pathname).toMatch(new RegExp(`^\\d{4}/\\d{2}/\\d{2}/${d.name.replace(".", "\\.")}$`));
    expect(d.url).toBe(`${BASE_URL}/i/${d.pathname}`);
    expect(d.thumbnail_url).toBe(d.url); // 64×48 fits the thumbnail box: it is its own thumbnail
    expect(d.html).toBe(`<img src="${d.url}" alt="screen shot.png">`);
    expect(d.bbcode).toBe(`[img]${d.url}[/img]`);
    expect(d.markdown).toBe(`![screen shot.png](${d.url})`);
    expect(d.markdown_with_link).toBe(`[![screen shot.png](${d.url})](${d.url})`);
    expect(d.delete_url).toBe(`${BASE_URL}/api/v1/images/${d.key}`);
    expect(d.links).toEqual({
      url: d.url,
      thumbnail_url: d.thumbnail_url,
      html: d.html,
      bbcode: d.bbcode,
      markdown: d.markdown,
      markdown_with_link: d.markdown_with_link,
      delete_url: d.delete_url,
    });
    const stored = await Bun.file(join(ctx.dataDir, "uploads", d.pathname)).bytes();
    expect(Buffer.from(stored).equals(Buffer.from(png))).toBe(true);
    const [row] = await ctx.db.select().from(images).where(eq(images.key, d.key));
    expect(row).toMatchObject({ userId: alice.id, strategyId: 1, size: png.byteLength, thumbnailPath: null, originName: "screen shot.png" });
  });

  test("a large image gets a WebP thumbnail fitting 400×400, never enlarged", async () => {
    const jpeg = await makeNoisyJpeg(1200, 900);
    const res = await ctx.upload(alice.token, { bytes: jpeg, filename: "photo.jpg", contentType: "image/jpeg" });
    expectStatus(res, 200);
    const d = res.body.data;
    expect([d.width, d.height, d.mimetype, d.extension]).toEqual([1200, 900, "image/jpeg", "jpg"]);
    expect(d.thumbnail_url).not.toBe(d.url);
    expect(d.thumbnail_url).toMatch(/\/i\/thumbnails\/\d{4}\/\d{2}\/\d{2}\/[A-Za-z0-9_-]{20}\.webp$/);
    const thumbPath = new URL(d.thumbnail_url).pathname.slice(3);
    const meta = await sharp(await Bun.file(join(ctx.dataDir, "uploads", thumbPath)).bytes()).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["webp", 400, 300]);

    const tall = await makeImage("png", 100, 800);
    const t = await ctx.upload(alice.token, { bytes: tall, filename: "tall.png", contentType: "image/png" });
    const tm = await sharp(await Bun.file(join(ctx.dataDir, "uploads", new URL(t.body.data.thumbnail_url).pathname.slice(3))).bytes()).metadata();
    expect([tm.width, tm.height]).toEqual([50, 400]);
  });

  test("animated GIF: dimensions and thumbnail of the first frame", async () => {
    const gif = await makeAnimatedGif(600, 200);
    const res = await ctx.upload(alice.token, { bytes: gif, filename: "anim.gif", contentType: "image/gif" });
    expectStatus(res, 200);
    expect([res.body.data.width, res.body.data.height]).toEqual([600, 200]);
    const thumb = await sharp(await Bun.file(join(ctx.dataDir, "uploads", new URL(res.body.data.thumbnail_url).pathname.slice(3))).bytes()).metadata();
    expect([thumb.width, thumb.height, thumb.pages ?? 1]).toEqual([400, 133, 1]);
  });

  test("EXIF-rotated JPEG reports its displayed dimensions", async () => {
    const jpeg = await sharp({ create: { width: 60, height: 20, channels: 3, background: "red" } })
      .jpeg()
      .withMetadata({ orientation: 6 })
      .toBuffer();
    const res = await ctx.upload(alice.token, { bytes: new Uint8Array(jpeg), filename: "r.jpeg", contentType: "image/jpeg" });
    expect([res.body.data.width, res.body.data.height]).toEqual([20, 60]);
  });

  test("every supported format is accepted with its matching type", async () => {
    for (const [format, ext, mime] of [
      ["jpeg", "jpeg", "image/jpeg"],
      ["webp", "webp", "image/webp"],
      ["avif", "avif", "image/avif"],
      ["gif", "gif", "image/gif"],
    ] as const) {
      const res = await ctx.upload(alice.token, { bytes: await makeImage(format, 32, 32), filename: `x.${ext}`, contentType: mime });
      expectStatus(res, 200);
      expect(res.body.data.mimetype).toBe(mime);
      expect(res.body.data.extension).toBe(ext);
    }
  });

  test("real clients: no Accept, strategy_id in the query, stray fields, octet-stream type, token in a form field", async () => {
    const viaQuery = await ctx.upload(
      alice.token,
      { bytes: png, filename: "a.PNG", contentType: "application/octet-stream" },
      { ssl: "true", foo: "bar" },
      { query: "?strategy_id=1" },
    );
    expectStatus(viaQuery, 200);
    expect(viaQuery.body.data.extension).toBe("png");
    const { body } = await ctx.json("/api/v1/images/tokens", {
      method: "POST",
      headers: { ...ctx.bearer(alice.token), "content-type": "application/json" },
      body: JSON.stringify({ num: 1, seconds: 60 }),
    });
    const viaField = await ctx.upload(null, { bytes: png, filename: "b.png", contentType: "image/png" }, { token: body.data.tokens[0].token });
    expectStatus(viaField, 200);
    const noType = await ctx.upload(alice.token, { bytes: png, filename: "c.png" });
    expectStatus(noType, 200);
  });

  test("private images and albums", async () => {
    const album = await ctx.admin("POST", `/api/admin/users/${alice.id}/albums`, { name: "A" });
    const res = await ctx.upload(alice.token, { bytes: png, filename: "p.png", contentType: "image/png" }, { permission: "0", album_id: String(album.id) });
    expectStatus(res, 200);
    expect(res.body.data.is_public).toBe(false);
    const [row] = await ctx.db.select().from(images).where(eq(images.key, res.body.data.key));
    expect(row?.albumId).toBe(album.id);
  });
});

describe("snippets stay correct for awkward names", () => {
  const cases = [
    `quote" onerror="alert(1).png`,
    "it's <b>bold</b> & co.png",
    "[brackets] (parens).png",
    "spaces   and\ttab.png",
    "中文 名字 😀.png",
    "back\\slash.png",
  ];
  for (const name of cases) {
    test(JSON.stringify(name), async () => {
      const res = await ctx.upload(alice.token, { bytes: png, filename: name, contentType: "image/png" });
      expectStatus(res, 200);
      const d = res.body.data;
      const origin = name.split(/[\\/]/).pop()!.replace("\t", " "); // a tab is shown as a space
      expect(d.origin_name).toBe(origin);
      // HTML: attribute values escaped; a parser sees one img with the exact alt
      const escaped = origin.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/'/g, "&#39;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
      expect(d.html).toBe(`<img src="${d.url}" alt="${escaped}">`);
      expect(d.html.match(/"/g)!.length).toBe(4);
      // Markdown: brackets escaped, URL without spaces or parentheses
      const mdAlt = origin.replace(/[\\[\]]/g, "\\$&");
      expect(d.markdown).toBe(`![${mdAlt}](${d.url})`);
      expect(d.url).not.toMatch(/[\s()<>"[\]]/);
      expect(d.bbcode).toBe(`[img]${d.url}[/img]`);
    });
  }

  test("an RFC 5987 filename* is decoded", async () => {
    const boundary = "XyZ";
    const body = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="fallback.png"; filename*=UTF-8''%E5%9B%BE%E7%89%87.png\r\nContent-Type: image/png\r\n\r\n`,
      ),
      Buffer.from(png),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const res = await ctx.json("/api/v1/upload", {
      method: "POST",
      headers: { ...ctx.bearer(alice.token), "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
    });
    expectStatus(res, 200);
    expect(res.body.data.origin_name).toBe("图片.png");
  });
});

describe("check 1: format", () => {
  test("extension, declared type and content must agree; SVG and HTML are refused", async () => {
    const before = await snapshot();
    const jpeg = await makeNoisyJpeg(200, 200);
    const svg = new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    const html = new TextEncoder().encode("<!doctype html><script>alert(1)</script>");
    const glued = new Uint8Array(Buffer.concat([Buffer.from(jpeg.subarray(0, 300)), Buffer.from("<script>alert(document.cookie)</script>".repeat(10))]));
    const cases: [Uint8Array, string, string | undefined, string][] = [
      [png, "a.jpg", "image/jpeg", "named .jpg but its content is a png image (.png)"], // PNG named .jpg
      [png, "a.png", "image/jpeg", "declared type"], // declared type disagrees
      [html, "a.png", "image/png", "not a valid png"], // HTML named .png
      [glued, "a.jpg", "image/jpeg", "not a valid jpg"], // JPEG header glued to a script
      [svg, "a.svg", "image/svg+xml", "unsupported format .svg"],
      [png, "a.bmp", "image/bmp", "unsupported format .bmp"],
      [png, "noextension", "image/png", "no extension"],
      [png, "a.png.html", "text/html", "unsupported format .html"],
      [new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), "trunc.png", "image/png", "not a valid png"],
    ];
    for (const [bytes, filename, type, message] of cases) {
      await expectRefused(await ctx.upload(alice.token, { bytes, filename, contentType: type }), 400, message, before);
    }
  });

  test("content of another type: the message names what the file is", async () => {
    const before = await snapshot();
    const jpeg = await makeNoisyJpeg(120, 80);
    const res = await ctx.upload(alice.token, { bytes: jpeg, filename: "holiday.png", contentType: "application/octet-stream" });
    expect(expectStatus(res, 400).message).toBe("The file is named .png but its content is a JPEG image (.jpg or .jpeg): rename it, or send another file.");
    const pdf = new TextEncoder().encode("%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n");
    const asPdf = await ctx.upload(alice.token, { bytes: pdf, filename: "scan.jpg", contentType: "image/jpeg" });
    expect(expectStatus(asPdf, 400).message).toBe("The file is named .jpg but its content is a PDF document: rename it, or send another file.");
    await expectRefused(await ctx.upload(alice.token, { bytes: jpeg, filename: "again.png" }), 400, "its content is a jpeg image", before);
  });

  test("a format the group does not allow is refused; the group's list is the authority", async () => {
    const before = await snapshot();
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { allowed_extensions: ["jpg", "jpeg"] });
    await expectRefused(await ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }), 400, "unsupported format .png", before);
  });

  test("missing file → 422 with errors.file; not multipart → 422", async () => {
    const res = await ctx.upload(alice.token, null, { strategy_id: "1" });
    expectStatus(res, 422);
    expect(res.body.errors.file[0]).toContain("file");
    const json = await ctx.json("/api/v1/upload", {
      method: "POST",
      headers: { ...ctx.bearer(alice.token), "content-type": "application/json" },
      body: "{}",
    });
    expectStatus(json, 422);
    expect(Object.keys(json.body.errors)).toEqual(["file"]);
    const empty = await ctx.upload(alice.token, { bytes: new Uint8Array(0), filename: "e.png", contentType: "image/png" });
    expectStatus(empty, 422);
  });

  test("malformed multipart → 400", async () => {
    const res = await ctx.json("/api/v1/upload", {
      method: "POST",
      headers: { ...ctx.bearer(alice.token), "content-type": "multipart/form-data; boundary=abc" },
      body: '--abc\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\nno closing boundary',
    });
    expectStatus(res, 400);
    expect(res.body.message).toContain("Malformed");
  });

  test("ill-typed fields → 422 naming each field", async () => {
    const res = await ctx.upload(
      alice.token,
      { bytes: png, filename: "a.png", contentType: "image/png" },
      {
        strategy_id: "abc",
        album_id: "-1",
        permission: "2",
        expired_at: "tomorrow",
      },
    );
    expectStatus(res, 422);
    expect(Object.keys(res.body.errors).sort()).toEqual(["album_id", "expired_at", "permission", "strategy_id"]);
  });
});

describe("check 2: per-image size and pixels", () => {
  test("above the group's size limit → 400, at the limit → 200", async () => {
    const jpeg = await makeNoisyJpeg(300, 300);
    const limitKb = Math.ceil(jpeg.byteLength / 1024);
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { max_file_size_kb: limitKb });
    expectStatus(await ctx.upload(alice.token, { bytes: jpeg, filename: "ok.jpg", contentType: "image/jpeg" }), 200);
    const before = await snapshot();
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { max_file_size_kb: limitKb - 1 });
    await expectRefused(await ctx.upload(alice.token, { bytes: jpeg, filename: "big.jpg", contentType: "image/jpeg" }), 400, "limit", before);
  });

  test("a body far above the limit is refused without being read whole", async () => {
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { max_file_size_kb: 100 });
    let sent = 0;
    const chunk = new Uint8Array(64 * 1024);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('--b\r\nContent-Disposition: form-data; name="file"; filename="x.png"\r\nContent-Type: image/png\r\n\r\n'));
      },
      pull(c) {
        if (sent >= 50 * 1024 * 1024) return c.close();
        sent += chunk.byteLength;
        c.enqueue(chunk);
      },
    });
    const res = await ctx.json("/api/v1/upload", {
      method: "POST",
      headers: { ...ctx.bearer(alice.token), "content-type": "multipart/form-data; boundary=b" },
      body: stream,
    });
    expectStatus(res, 400);
    expect(res.body.message).toContain("100 KB");
    expect(sent).toBeLessThan(2 * 1024 * 1024);
  });

  test("more pixels than the group allows → 400 before decoding", async () => {
    const before = await snapshot();
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { max_pixels: 1000 });
    await expectRefused(await ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }), 400, "pixels", before);
    // a decompression bomb's header: 50000×50000 claimed in a few hundred bytes
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { max_pixels: 100_000_000 });
    const bomb = pngHeaderClaiming(50_000, 50_000);
    expect(bomb.byteLength).toBeLessThan(1024);
    const started = performance.now();
    await expectRefused(await ctx.upload(alice.token, { bytes: bomb, filename: "bomb.png", contentType: "image/png" }), 400, "pixels", before);
    expect(performance.now() - started).toBeLessThan(5000); // header only, never decoded
  });
});

describe("check 7: retention", () => {
  test("expired_at in the past → 422; beyond the ceiling → 400; within → stored with its expiry", async () => {
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { retention_max_seconds: 3600 });
    const before = await snapshot();
    const past = new Date(ctx.now().getTime() - 1000).toISOString();
    const pastRes = await ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }, { expired_at: past });
    expectStatus(pastRes, 422);
    expect(Object.keys(pastRes.body.errors)).toEqual(["expired_at"]);
    const far = new Date(ctx.now().getTime() + 7200_000).toISOString();
    await expectRefused(
      await ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }, { expired_at: far }),
      400,
      "retention",
      before,
    );

    const soon = new Date(Math.floor(ctx.now().getTime() / 1000) * 1000 + 1800_000);
    const withOffset = soon.toISOString().replace("Z", "+00:00");
    const ok = await ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }, { expired_at: withOffset });
    expectStatus(ok, 200);
    const [row] = await ctx.db.select().from(images).where(eq(images.key, ok.body.data.key));
    expect(row?.expiredAt?.getTime()).toBe(soon.getTime());
    // the server-time-zone form
    const pad = (n: number) => String(n).padStart(2, "0");
    const local = `${soon.getFullYear()}-${pad(soon.getMonth() + 1)}-${pad(soon.getDate())} ${pad(soon.getHours())}:${pad(soon.getMinutes())}:${pad(soon.getSeconds())}`;
    const ok2 = await ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }, { expired_at: local });
    expectStatus(ok2, 200);
    expect(ok2.body.data.expired_at).toBe(local);
  });
});

describe("check 8: albums and guests", () => {
  test("an album of another account → 400", async () => {
    const bob = await ctx.createUser();
    const album = await ctx.admin("POST", `/api/admin/users/${bob.id}/albums`, { name: "bob's" });
    const before = await snapshot();
    await expectRefused(
      await ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }, { album_id: String(album.id) }),
      400,
      "album",
      before,
    );
    await expectRefused(
      await ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }, { album_id: "999999" }),
      400,
      "album",
      before,
    );
  });

  test("guests upload public images without an account; no albums, no private images", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
    const headers = { "x-forwarded-for": "198.51.100.20" };
    const ok = await ctx.upload(null, { bytes: png, filename: "g.png", contentType: "image/png" }, {}, { headers });
    expectStatus(ok, 200);
    const [row] = await ctx.db.select().from(images).where(eq(images.key, ok.body.data.key));
    expect(row?.userId).toBeNull();
    expect(row?.uploaderIp).toBe("198.51.100.20");
    const album = await ctx.admin("POST", `/api/admin/users/${alice.id}/albums`, { name: "x" });
    const a = await ctx.upload(null, { bytes: png, filename: "g.png", contentType: "image/png" }, { album_id: String(album.id) }, { headers });
    expectStatus(a, 400);
    expect(a.body.message).toContain("Guests");
    const p = await ctx.upload(null, { bytes: png, filename: "g.png", contentType: "image/png" }, { permission: "0" }, { headers });
    expectStatus(p, 400);
    expect(p.body.message).toContain("private");
  });
});

describe("check 9: content review", () => {
  let verdict: { allow: boolean; reason?: string } | "slow" | "broken" = { allow: true };
  let received: { type: string | null; bytes: number; name: string | null }[] = [];
  let reviewer: ReturnType<typeof Bun.serve>;

  beforeAll(() => {
    reviewer = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req) {
        const body = await req.arrayBuffer();
        received.push({ type: req.headers.get("content-type"), bytes: body.byteLength, name: req.headers.get("x-image-name") });
        if (verdict === "slow") await Bun.sleep(1500);
        if (verdict === "broken") return new Response("oops", { status: 500 });
        return Response.json(verdict === "slow" ? { allow: true } : verdict);
      },
    });
  });
  afterAll(() => reviewer.stop(true));

  const useWebhook = (failOpen: boolean) =>
    ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, {
      review_provider: "webhook",
      review_webhook_url: `http://127.0.0.1:${reviewer.port}/review`,
      review_timeout_ms: 500,
      review_fail_open: failOpen,
    });

  test("allowed images pass; the webhook receives the bytes and type", async () => {
    await useWebhook(false);
    verdict = { allow: true };
    received = [];
    const res = await ctx.upload(alice.token, { bytes: png, filename: "ok.png", contentType: "image/png" });
    expectStatus(res, 200);
    expect(received).toEqual([{ type: "image/png", bytes: png.byteLength, name: "ok.png" }]);
  });

  test("a rejection → 400 with the reason, nothing stored", async () => {
    await useWebhook(false);
    verdict = { allow: false, reason: "nudity" };
    const before = await snapshot();
    await expectRefused(
      await ctx.upload(alice.token, { bytes: png, filename: "no.png", contentType: "image/png" }),
      400,
      "rejected by content review: nudity",
      before,
    );
  });

  test("timeout or failure: fail-closed refuses, fail-open accepts", async () => {
    const before = await snapshot();
    await useWebhook(false);
    for (const v of ["slow", "broken"] as const) {
      verdict = v;
      await expectRefused(await ctx.upload(alice.token, { bytes: png, filename: "x.png", contentType: "image/png" }), 400, "review is unavailable", before);
    }
    await useWebhook(true);
    verdict = "broken";
    expectStatus(await ctx.upload(alice.token, { bytes: png, filename: "x.png", contentType: "image/png" }), 200);
  });
});

describe("failures halfway", () => {
  test("storage failure: nothing recorded, nothing charged, 500 without internals", async () => {
    const broken = await ctx.admin("POST", "/api/admin/strategies", { name: "Broken disk", driver: "local", config: { root: "/proc/no-such-dir/uploads" } });
    const group = await ctx.admin("POST", "/api/admin/groups", { name: "on broken disk", strategy_ids: [broken.id] });
    const dave = await ctx.createUser({ group_id: group.id });
    const { result: res, logged } = await quietly(() => ctx.upload(dave.token, { bytes: png, filename: "a.png", contentType: "image/png" }));
    expectStatus(res, 500);
    expect(res.body.message).toBe("The storage service failed; nothing was stored.");
    expect(JSON.stringify(res.body)).not.toContain("/proc");
    expect(JSON.stringify(logged)).toContain("local write failed"); // the cause is in the log, not the answer
    const profile = await ctx.json("/api/v1/profile", { headers: ctx.bearer(dave.token) });
    expect(profile.body.data.image_num).toBe(0);
    expect(profile.body.data.size).toBe(0);
    const strategies = await ctx.admin("GET", "/api/admin/strategies");
    expect(strategies.strategies.find((s: { id: number }) => s.id === broken.id).used_kb).toBe(0);
    expect((await ctx.db.select().from(uploadLog)).length).toBeGreaterThan(0); // other uploads are logged…
    expect((await ctx.db.select().from(images).where(eq(images.userId, dave.id))).length).toBe(0); // …not this one
  });

  test("database failure after storing: the stored objects are removed", async () => {
    const erin = await ctx.createUser();
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { uploads_per_minute: 100 });
    const filesBefore = storedFiles();
    // make the final transaction fail: the frequency log table refuses inserts for this test
    await ctx.db.execute("create or replace function refuse() returns trigger language plpgsql as $$ begin raise exception 'disk full'; end $$" as never);
    await ctx.db.execute("create trigger refuse_log before insert on upload_log for each row execute function refuse()" as never);
    try {
      const big = await makeNoisyJpeg(800, 600);
      const { result: res } = await quietly(() => ctx.upload(erin.token, { bytes: big, filename: "a.jpg", contentType: "image/jpeg" }));
      expectStatus(res, 500);
      expect(res.body.message).toBe("Internal server error.");
    } finally {
      await ctx.db.execute("drop trigger refuse_log on upload_log" as never);
      await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { uploads_per_minute: null });
    }
    expect(storedFiles()).toEqual(filesBefore); // neither the object nor its thumbnail is left
    const profile = await ctx.json("/api/v1/profile", { headers: ctx.bearer(erin.token) });
    expect([profile.body.data.image_num, profile.body.data.size]).toEqual([0, 0]);
  });
});

describe("TIFF", () => {
  test("a TIFF small enough to be its own thumbnail still gets a WebP thumbnail browsers can show", async () => {
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { allowed_extensions: ["png", "tif", "tiff"] });
    try {
      const tiff = await makeImage("tiff", 40, 30);
      const d = expectStatus(await ctx.upload(alice.token, { bytes: tiff, filename: "scan.tiff", contentType: "image/tiff" }), 200).data;
      expect(d.thumbnail_url).not.toBe(d.url);
      expect(d.thumbnail_url).toEndWith(".webp");
      const thumb = await ctx.request(new URL(d.thumbnail_url).pathname);
      const bytes: Uint8Array = await expectStatus(thumb, 200);
      expect(thumb.headers.get("content-type")).toBe("image/webp");
      expect(Buffer.from(bytes.subarray(8, 12)).toString()).toBe("WEBP");
    } finally {
      await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { allowed_extensions: ["jpg", "jpeg", "png", "gif", "webp", "avif"] });
    }
  });
});
