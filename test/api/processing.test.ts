import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import exifr from "exifr";
import sharp from "sharp";
import { main } from "../../src/cli/index.ts";
import { images, users } from "../../src/db/schema.ts";
import { jpegQuality } from "../../src/images/jpeg.ts";
import { ADMIN_TOKEN, BASE_URL, createTestContext, type TestContext } from "../support/harness.ts";
import { makeImage, makeNoisyJpeg } from "../support/images.ts";
import { phonePhoto } from "../support/metadata-fixtures.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s
setDefaultTimeout(60_000);

let ctx: TestContext;
let server: ReturnType<typeof Bun.serve>;
let SERVER_URL: string;

beforeAll(async () => {
  ctx = await createTestContext();
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: ctx.app.fetch });
  SERVER_URL = `http://127.0.0.1:${server.port}`;
});
afterAll(async () => {
  await server.stop(true);
  await ctx.close();
});

const kb = (bytes: number) => bytes / 1024;
const md5 = (b: Uint8Array) => new Bun.CryptoHasher("md5").update(b).digest("hex");
const sha1 = (b: Uint8Array) => new Bun.CryptoHasher("sha1").update(b).digest("hex");

/** A group of its own (with the local strategy) with these fields, and a user in it. */
async function userInGroup(fields: Record<string, unknown>) {
  const group = await ctx.admin("POST", "/api/admin/groups", {
    name: `p${Math.random().toString(36).slice(2, 7)}`,
    strategy_ids: [ctx.localStrategyId],
    ...fields,
  });
  const user = await ctx.createUser({ group_id: group.id });
  return { group, user };
}

async function upload(token: string, bytes: Uint8Array, filename: string, contentType: string) {
  const res = await ctx.upload(token, { bytes, filename, contentType });
  return res;
}

async function served(url: string): Promise<Uint8Array> {
  const res = await ctx.request(url);
  expect(res.status).toBe(200);
  return new Uint8Array(await res.arrayBuffer());
}

/** The answer describes exactly the stored bytes that `url` serves, and the account is charged for them. */
async function expectDescribesStored(d: any, stored: Uint8Array, userId: number, usedBefore = 0) {
  const meta = await sharp(stored).metadata();
  expect(d.size).toBe(kb(stored.byteLength));
  expect(d.md5).toBe(md5(stored));
  expect(d.sha1).toBe(sha1(stored));
  expect([d.width, d.height]).toEqual([meta.autoOrient?.width ?? meta.width, meta.autoOrient?.height ?? meta.pageHeight ?? meta.height]);
  expect(d.mimetype).toBe(`image/${meta.format === "heif" ? "avif" : meta.format}`);
  const [row] = await ctx.db.select().from(images).where(eq(images.key, d.key));
  expect(row!.size).toBe(stored.byteLength);
  expect([row!.mimetype, row!.extension, row!.name, row!.width, row!.height]).toEqual([d.mimetype, d.extension, d.name, d.width, d.height]);
  const [account] = await ctx.db.select().from(users).where(eq(users.id, userId));
  expect(account!.usedBytes - usedBefore).toBe(stored.byteLength);
}

describe("the group fields", () => {
  test("off by default; POST and PATCH set them; GET lists them; values outside their range are a 422", async () => {
    const { groups } = await ctx.admin("GET", "/api/admin/groups");
    for (const g of groups) {
      expect([g.convert_format, g.convert_quality, g.max_width, g.max_height, g.jpeg_max_quality]).toEqual([null, 80, null, null, null]);
    }
    const { group } = await userInGroup({ convert_format: "webp", convert_quality: 70, max_width: 2000, max_height: 1500, jpeg_max_quality: 85 });
    expect([group.convert_format, group.convert_quality, group.max_width, group.max_height, group.jpeg_max_quality]).toEqual(["webp", 70, 2000, 1500, 85]);
    const off = await ctx.admin("PATCH", `/api/admin/groups/${group.id}`, { convert_format: null, max_width: null, max_height: null, jpeg_max_quality: null });
    expect([off.convert_format, off.max_width, off.max_height, off.jpeg_max_quality]).toEqual([null, null, null, null]);
    for (const bad of [
      { convert_format: "gif" },
      { convert_format: "png" },
      { convert_quality: 0 },
      { convert_quality: 101 },
      { max_width: 0 },
      { max_height: -1 },
      { jpeg_max_quality: 101 },
      { convert_quality: null },
    ]) {
      const res = await ctx.json(`/api/admin/groups/${group.id}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(bad),
      });
      expectStatus(res, 422);
    }
  });

  test("bun run cli group set sets them, null turns them off", async () => {
    const out: string[] = [];
    const env = { BASE_URL: SERVER_URL, ADMIN_TOKEN };
    const io = { out: (s: string) => out.push(s), err: (s: string) => out.push(s) };
    expect(
      await main(["group", "create", "cli-processing", "--convert-format", "avif", "--convert-quality", "55", "--max-width", "1920", "--json"], env, io),
    ).toBe(0);
    const created = JSON.parse(out.join("\n"));
    expect([created.convert_format, created.convert_quality, created.max_width, created.max_height]).toEqual(["avif", 55, 1920, null]);
    out.length = 0;
    expect(await main(["group", "set", String(created.id), "--convert-format", "null", "--jpeg-max-quality", "80", "--json"], env, io)).toBe(0);
    const changed = JSON.parse(out.join("\n"));
    expect([changed.convert_format, changed.jpeg_max_quality]).toEqual([null, 80]);
    out.length = 0;
    expect(await main(["group", "set", String(created.id), "--convert-format", "bmp"], env, io)).not.toBe(0);
  });
});

describe("processing on upload", () => {
  test("convert to WebP: the answer describes the stored WebP; origin_name stays; orientation applied; no location; same input, same bytes", async () => {
    const { user } = await userInGroup({ convert_format: "webp", convert_quality: 75 });
    const photo = await phonePhoto("jpeg", 640, 480, { orientation: 6 });
    const res = await upload(user.token, photo, "IMG_0001.jpg", "image/jpeg");
    expectStatus(res, 200);
    const d = res.body.data;
    expect([d.mimetype, d.extension, d.origin_name]).toEqual(["image/webp", "webp", "IMG_0001.jpg"]);
    expect(d.name).toMatch(/^[A-Za-z0-9_-]+\.webp$/);
    expect(d.pathname).toMatch(/\.webp$/);
    expect(d.url).toBe(`${BASE_URL}/i/${d.pathname}`);
    expect(d.links.markdown).toContain(d.url);
    const stored = await served(d.url);
    await expectDescribesStored(d, stored, user.id);
    // the pixels turned upright: no orientation left to apply
    const meta = await sharp(stored).metadata();
    expect([meta.width, meta.height, meta.orientation ?? 1]).toEqual([480, 640, 1]);
    expect(meta.icc).toBeTruthy(); // the colour profile kept
    // strip_location (the default) held through the conversion: camera kept, no GPS, no XMP location
    const tags = meta.exif ? await exifr.parse(Buffer.from(meta.exif.subarray(6)), { gps: true, tiff: true, translateValues: false }) : {};
    expect(tags.Make).toBe("Examplephone");
    expect(Object.keys(tags).filter((t) => /^GPS/.test(t))).toEqual([]);
    expect(Buffer.from(stored).toString("latin1")).not.toContain("Paris");
    // the thumbnail is of the stored image
    const thumbnail = await sharp(await served(d.thumbnail_url)).metadata();
    expect([thumbnail.format, thumbnail.width, thumbnail.height]).toEqual(["webp", 300, 400]);
    // deterministic: the same input gives the same stored bytes
    const again = await upload(user.token, photo, "IMG_0001.jpg", "image/jpeg");
    expectStatus(again, 200);
    expect(again.body.data.md5).toBe(d.md5);
  });

  test("convert to AVIF and to JPEG (transparency flattened onto white)", async () => {
    const { user } = await userInGroup({ convert_format: "avif", convert_quality: 50 });
    const png = await makeImage("png", 500, 300);
    const res = await upload(user.token, png, "shot.png", "image/png");
    expectStatus(res, 200);
    expect([res.body.data.mimetype, res.body.data.extension]).toEqual(["image/avif", "avif"]);
    await expectDescribesStored(res.body.data, await served(res.body.data.url), user.id);

    const { user: other } = await userInGroup({ convert_format: "jpeg", convert_quality: 70 });
    const transparent = new Uint8Array(
      await sharp({ create: { width: 20, height: 20, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
        .png()
        .toBuffer(),
    );
    const r2 = await upload(other.token, transparent, "clear.png", "image/png");
    expectStatus(r2, 200);
    const stored = await served(r2.body.data.url);
    expect(jpegQuality(stored)).toBe(70);
    const { data } = await sharp(stored).raw().toBuffer({ resolveWithObject: true });
    expect(Math.min(...data)).toBeGreaterThan(245); // white, not black
    await expectDescribesStored(r2.body.data, stored, other.id);
  });

  test("downscale: larger than max_width × max_height fits the box, aspect kept; smaller is stored as sent", async () => {
    const { user } = await userInGroup({ max_width: 300, max_height: 300, metadata: "keep" });
    const big = await makeImage("png", 640, 480);
    const res = await upload(user.token, big, "big.png", "image/png");
    expectStatus(res, 200);
    expect([res.body.data.width, res.body.data.height, res.body.data.mimetype]).toEqual([300, 225, "image/png"]);
    const stored = await served(res.body.data.url);
    await expectDescribesStored(res.body.data, stored, user.id);
    const small = await makeImage("png", 200, 100);
    const r2 = await upload(user.token, small, "small.png", "image/png");
    expectStatus(r2, 200);
    expect(r2.body.data.md5).toBe(md5(small)); // untouched, byte for byte
  });

  test("re-encode JPEGs above a quality: a q95 JPEG is stored at q70 and smaller; a q60 JPEG is stored as sent", async () => {
    const { user } = await userInGroup({ jpeg_max_quality: 70, metadata: "keep" });
    const high = await makeNoisyJpeg(400, 300, 95);
    expect(jpegQuality(high)).toBe(95);
    const res = await upload(user.token, high, "high.jpg", "image/jpeg");
    expectStatus(res, 200);
    const stored = await served(res.body.data.url);
    expect(jpegQuality(stored)).toBe(70);
    expect(stored.byteLength).toBeLessThan(high.byteLength);
    expect([res.body.data.mimetype, res.body.data.extension, res.body.data.width, res.body.data.height]).toEqual(["image/jpeg", "jpg", 400, 300]);
    await expectDescribesStored(res.body.data, stored, user.id);
    const low = await makeNoisyJpeg(400, 300, 60);
    const r2 = await upload(user.token, low, "low.jpg", "image/jpeg");
    expectStatus(r2, 200);
    expect(r2.body.data.md5).toBe(md5(low));
  });

  test("animated GIFs stay animated: to WebP every frame is kept; to AVIF or JPEG the GIF stays a GIF (downscaled when too large)", async () => {
    const frames = ["red", "blue", "lime"];
    const frame = (c: string) =>
      sharp({ create: { width: 120, height: 90, channels: 3, background: c } })
        .png()
        .toBuffer();
    const gif = new Uint8Array(
      await sharp(await Promise.all(frames.map(frame)), { join: { animated: true } })
        .gif()
        .toBuffer(),
    );
    const { user } = await userInGroup({ convert_format: "webp" });
    const res = await upload(user.token, gif, "loop.gif", "image/gif");
    expectStatus(res, 200);
    expect(res.body.data.mimetype).toBe("image/webp");
    const webp = await sharp(await served(res.body.data.url)).metadata();
    expect([webp.pages, webp.width, webp.pageHeight ?? webp.height]).toEqual([3, 120, 90]);
    expect([res.body.data.width, res.body.data.height]).toEqual([120, 90]);

    for (const target of ["avif", "jpeg"]) {
      const { user: u } = await userInGroup({ convert_format: target, metadata: "keep" });
      const kept = await upload(u.token, gif, "loop.gif", "image/gif");
      expectStatus(kept, 200);
      expect([kept.body.data.mimetype, kept.body.data.md5]).toEqual(["image/gif", md5(gif)]);
    }
    const { user: small } = await userInGroup({ convert_format: "avif", max_width: 60 });
    const scaled = await upload(small.token, gif, "loop.gif", "image/gif");
    expectStatus(scaled, 200);
    const meta = await sharp(await served(scaled.body.data.url)).metadata();
    expect([meta.format, meta.pages, meta.width, meta.pageHeight ?? meta.height]).toEqual(["gif", 3, 60, 45]);
    expect([scaled.body.data.width, scaled.body.data.height]).toEqual([60, 45]);
  });

  test("an image processing cannot handle (an animation beyond the pixel bound in all its frames) is stored as sent, not refused", async () => {
    const frame = (c: string) =>
      sharp({ create: { width: 100, height: 100, channels: 3, background: c } })
        .png()
        .toBuffer();
    const gif = new Uint8Array(
      await sharp(await Promise.all(["red", "blue", "lime", "black"].map(frame)), { join: { animated: true } })
        .gif()
        .toBuffer(),
    );
    const { user } = await userInGroup({ convert_format: "webp", max_pixels: 25_000, metadata: "keep" });
    const res = await upload(user.token, gif, "many.gif", "image/gif");
    expectStatus(res, 200);
    expect([res.body.data.mimetype, res.body.data.md5]).toEqual(["image/gif", md5(gif)]);
  });

  test("refusals are decided on the upload as sent: its format, its size, its pixels — before any processing", async () => {
    // the converted file would fit the size limit; the upload as sent does not
    const photo = await makeNoisyJpeg(800, 600, 95);
    const { user } = await userInGroup({
      convert_format: "webp",
      convert_quality: 10,
      max_width: 100,
      max_file_size_kb: Math.floor(photo.byteLength / 1024) - 1,
    });
    const tooLarge = await upload(user.token, photo, "p.jpg", "image/jpeg");
    expectStatus(tooLarge, 400);
    expect(tooLarge.body.message).toContain("the limit is");
    // a format the group does not accept is refused even though it would be converted to one it does
    const { user: pngless } = await userInGroup({ convert_format: "webp", allowed_extensions: ["jpg", "webp"] });
    const png = await upload(pngless.token, await makeImage("png"), "a.png", "image/png");
    expectStatus(png, 400);
    expect(png.body.message).toContain("Unsupported format .png");
    // pixels: judged on the image as sent, although it would be downscaled under the limit
    const { user: bounded } = await userInGroup({ max_width: 100, max_height: 100, max_pixels: 640 * 480 - 1 });
    const pixels = await upload(bounded.token, await makeImage("png", 640, 480), "p.png", "image/png");
    expectStatus(pixels, 400);
    expect(pixels.body.message).toContain("pixels");
    // nothing stored for any of them
    for (const u of [user, pngless, bounded]) {
      expect(await ctx.db.select().from(images).where(eq(images.userId, u.id))).toEqual([]);
    }
  });
});
