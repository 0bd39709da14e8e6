import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { sql } from "drizzle-orm";
import sharp from "sharp";
import { RECONCILE_GRACE_SECONDS } from "../../src/services/reconcile/index.ts";
import { sweepExpired } from "../../src/services/sweeper.ts";
import { servicesOf } from "../../src/services/index.ts";
import { COLD_PER_MINUTE, LADDER, parseVariantQuery } from "../../src/services/variants/query.ts";
import { decoders } from "../../src/services/work-queue.ts";
import { createTestContext, type TestContext, type TestUser } from "../support/harness.ts";
import { makeAnimatedGif, makeImage, makeNoisyJpeg } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

setDefaultTimeout(60_000);

let ctx: TestContext;
let user: TestUser;
let photo: any; // 1000×750 JPEG
let photoPath: string;
let root: string;
let ipSeq = 0;
/** Each test asks from addresses of its own, so the cold budget of one never refuses another's. */
const freshIp = () => `198.51.100.${++ipSeq}`;

beforeAll(async () => {
  ctx = await createTestContext();
  root = join(ctx.dataDir, "uploads");
  user = await ctx.createUser();
  photo = expectStatus(await ctx.upload(user.token, { bytes: await makeNoisyJpeg(1000, 750), filename: "photo.jpg", contentType: "image/jpeg" }), 200).data;
  photoPath = new URL(photo.url).pathname;
});
afterAll(() => ctx.close());

const get = (path: string, headers: Record<string, string> = {}, ip = freshIp()) => ctx.request(path, { headers: { "x-forwarded-for": ip, ...headers } });

async function variantRows(): Promise<{ image_id: number; width: number; format: string; path: string; size: number }[]> {
  const result = await ctx.db.execute(sql`select image_id::int, width, format, path, size::int from image_variants order by id`);
  return (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as any[];
}

/** The files under uploads/variants/, relative to the storage root. */
function variantFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else out.push(full.slice(root.length + 1));
    }
  };
  walk(join(root, "variants"));
  return out.sort();
}

/** The variant rows of an uploaded image (by its stored name's stem, which its variants' names begin with). */
async function rowsOf(up: { pathname: string }) {
  const stem = up.pathname
    .split("/")
    .pop()!
    .replace(/\.[^.]*$/, "");
  return (await variantRows()).filter((r) => r.path.split("/").pop()!.startsWith(`${stem}_`));
}

async function upload(bytes: Uint8Array, filename: string, contentType: string, fields: Record<string, string> = {}) {
  return expectStatus(await ctx.upload(user.token, { bytes, filename, contentType }, fields), 200).data;
}

describe("the grammar: anything outside it is a 400 (or 404), and nothing is stored", () => {
  test("parseVariantQuery accepts exactly the ladder and the formats", () => {
    expect(parseVariantQuery("")).toBeNull();
    expect(parseVariantQuery("?")).toBeNull();
    expect(parseVariantQuery("?w=640")).toEqual({ width: 640, format: null });
    expect(parseVariantQuery("?format=auto&w=160")).toEqual({ width: 160, format: "auto" });
    expect(LADDER).toEqual([160, 320, 640, 1280, 1920, 2560]);
    expect(COLD_PER_MINUTE).toBe(30);
  });

  test("hostile parameters: 400 in the JSON envelope, no row, no file", async () => {
    const rowsBefore = (await variantRows()).length;
    const filesBefore = variantFiles();
    const queries = [
      "?w=100",
      "?w=641",
      "?w=0640",
      "?w=640.0",
      "?w=+640",
      "?w=-640",
      "?w=1e3",
      "?w=%36%34%30",
      "?w=99999999999999999999",
      "?w=640&w=320",
      "?w=640&w=640",
      "?format=gif",
      "?format=WEBP",
      "?format=svg",
      "?format=webp&format=png",
      "?format=auto%00",
      "?x=1",
      "?w=640&x=1",
      "?W=640",
      "?w[]=640",
      "?w",
      "?w=",
      "?&",
      "?w=640&",
      "?&w=640",
      "?w=640;format=webp",
      `?${"a".repeat(10_000)}`,
      `?w=640&format=webp${"&".repeat(100)}`,
    ];
    for (const q of queries) {
      const res = await get(`${photoPath}${q}`);
      const body = await res.json();
      expect(res.status, `${q.slice(0, 60)} answered ${res.status}: ${JSON.stringify(body)}`).toBe(400);
      expect(res.headers.get("content-type")).toBe("application/json");
      expect(body.status).toBe(false);
      expect(body.data).toBeNull();
      expect(typeof body.message).toBe("string");
    }
    // path tricks with a valid query: never a file outside the records
    writeFileSync(join(ctx.dataDir, "secret.txt"), "top secret");
    const thumbnail = new URL(photo.thumbnail_url).pathname;
    for (const [p, status] of [
      ["/i/../secret.txt?w=640", 404],
      ["/i/%2e%2e/secret.txt?w=640", 404],
      ["/i/..%2fsecret.txt?format=webp", 404],
      ["/i/nothing.jpg?w=640", 404],
      ["/i/variants/x.webp?w=640", 404],
      [`${thumbnail}?w=160`, 400], // variants are made of images, not of thumbnails
    ] as const) {
      const res = await get(p);
      const text = await res.text();
      expect(res.status, `${p} answered ${res.status}: ${text}`).toBe(status);
      expect(text).not.toContain("top secret");
    }
    expect((await variantRows()).length).toBe(rowsBefore);
    expect(variantFiles()).toEqual(filesBefore);
  });

  test("no query, or an empty one, is the original exactly as before", async () => {
    for (const p of [photoPath, `${photoPath}?`]) {
      const res = await get(p);
      await expectStatus(res, 200);
      expect(res.headers.get("etag")).toBe(`"${photo.sha1}"`);
      expect(res.headers.get("content-type")).toBe("image/jpeg");
      expect(res.headers.get("vary")).toBeNull();
    }
  });
});

describe("widths and formats produced", () => {
  test("each format at a ladder width, read back with sharp", async () => {
    for (const format of ["webp", "avif", "jpeg", "png"] as const) {
      const res = await get(`${photoPath}?w=320&format=${format}`);
      const bytes: Uint8Array = await expectStatus(res, 200);
      expect(res.headers.get("content-type")).toBe(`image/${format}`);
      const meta = await sharp(bytes).metadata();
      expect(meta.width).toBe(320);
      expect(meta.height).toBe(240);
      expect(meta.format).toBe(format === "avif" ? "heif" : format);
      if (format === "avif") expect(meta.compression).toBe("av1");
    }
    // w alone keeps the original's format
    const plain = await get(`${photoPath}?w=640`);
    const bytes: Uint8Array = await expectStatus(plain, 200);
    expect(plain.headers.get("content-type")).toBe("image/jpeg");
    expect((await sharp(bytes).metadata()).width).toBe(640);
  });

  test("a width above the original's answers at the original's size: one variant for all of them; the original's own format is the original", async () => {
    const before = (await variantRows()).length;
    for (const w of [1280, 1920, 2560]) {
      const res = await get(`${photoPath}?w=${w}&format=webp`);
      const bytes: Uint8Array = await expectStatus(res, 200);
      expect((await sharp(bytes).metadata()).width).toBe(1000);
    }
    const rows = (await variantRows()).filter((r) => r.format === "webp" && r.width === 1000);
    expect(rows.length).toBe(1);
    expect((await variantRows()).length).toBe(before + 1);
    // JPEG at or above the original's width: the original itself, nothing made
    for (const q of ["?w=2560", "?format=jpeg", "?w=1280&format=jpeg"]) {
      const res = await get(`${photoPath}${q}`);
      await expectStatus(res, 200);
      expect(res.headers.get("etag")).toBe(`"${photo.sha1}"`);
    }
    expect((await variantRows()).length).toBe(before + 1);
  });

  test("auto picks from Accept (AVIF, else WebP, else the original's format) and answers Vary: Accept", async () => {
    const cases: [string | null, string][] = [
      ["image/avif,image/webp,image/apng,image/*,*/*;q=0.8", "image/avif"],
      ["image/webp,*/*", "image/webp"],
      ["image/avif;q=0,image/webp", "image/webp"],
      ["*/*", "image/jpeg"],
      [null, "image/jpeg"],
    ];
    for (const [accept, type] of cases) {
      const res = await get(`${photoPath}?w=160&format=auto`, accept === null ? {} : { accept });
      const bytes: Uint8Array = await expectStatus(res, 200);
      expect(res.headers.get("content-type"), `Accept: ${accept}`).toBe(type);
      expect(res.headers.get("vary")).toBe("Accept");
      expect((await sharp(bytes).metadata()).width).toBe(160);
    }
    // auto that lands on the original is still varied
    const original = await get(`${photoPath}?format=auto`, { accept: "*/*" });
    await expectStatus(original, 200);
    expect(original.headers.get("etag")).toBe(`"${photo.sha1}"`);
    expect(original.headers.get("vary")).toBe("Accept");
  });

  test("orientation is applied and no EXIF survives; the ICC profile is kept", async () => {
    const oriented = new Uint8Array(
      await sharp(await makeNoisyJpeg(400, 200))
        .withIccProfile("p3")
        .withExif({ IFD0: { Artist: "someone", Copyright: "mine" } })
        .withMetadata({ orientation: 6 })
        .jpeg()
        .toBuffer(),
    );
    const up = await upload(oriented, "oriented.jpg", "image/jpeg");
    expect([up.width, up.height]).toEqual([200, 400]);
    const res = await get(`${new URL(up.url).pathname}?w=160&format=webp`);
    const bytes: Uint8Array = await expectStatus(res, 200);
    const meta = await sharp(bytes).metadata();
    expect([meta.width, meta.height]).toEqual([160, 320]); // 200×400 as displayed
    expect(meta.exif).toBeUndefined();
    expect(meta.orientation).toBeUndefined();
    expect(meta.icc).toBeDefined();
  });

  test("an animated GIF keeps its animation (WebP or GIF), and formats without animation are refused", async () => {
    const gif = await upload(await makeAnimatedGif(400, 300), "anim.gif", "image/gif");
    const path = new URL(gif.url).pathname;
    const asWebp: Uint8Array = await expectStatus(await get(`${path}?w=160&format=webp`), 200);
    const webpMeta = await sharp(asWebp, { animated: true }).metadata();
    expect(webpMeta.format).toBe("webp");
    expect(webpMeta.pages).toBe(2);
    expect(webpMeta.width).toBe(160);
    const asGif = await get(`${path}?w=160`);
    const gifMeta = await sharp((await expectStatus(asGif, 200)) as Uint8Array, { animated: true }).metadata();
    expect(asGif.headers.get("content-type")).toBe("image/gif");
    expect([gifMeta.format, gifMeta.pages, gifMeta.width]).toEqual(["gif", 2, 160]);
    const auto = await get(`${path}?w=160&format=auto`, { accept: "image/avif,image/webp" });
    expect(auto.headers.get("content-type")).toBe("image/webp");
    const rows = (await variantRows()).length;
    for (const format of ["jpeg", "png", "avif"]) {
      const res = await get(`${path}?w=160&format=${format}`);
      const body = await expectStatus(res, 400);
      expect(body.message).toContain("animated");
    }
    expect((await variantRows()).length).toBe(rows);
  });
});

describe("made once", () => {
  test("10 concurrent requests for a cold variant: one generation, one row, one file, the same bytes", async () => {
    const up = await upload(await makeNoisyJpeg(900, 600), "once.jpg", "image/jpeg");
    const path = new URL(up.url).pathname;
    const filesBefore = variantFiles().length;
    const answers = await Promise.all(Array.from({ length: 10 }, () => get(`${path}?w=640&format=webp`)));
    const bodies = await Promise.all(answers.map(async (r) => Buffer.from((await expectStatus(r, 200)) as Uint8Array)));
    for (const b of bodies) expect(b.equals(bodies[0]!)).toBe(true);
    const rows = await rowsOf(up);
    expect(rows.length).toBe(1);
    expect(rows[0]!.size).toBe(bodies[0]!.byteLength);
    expect(variantFiles().length).toBe(filesBefore + 1);
    expect(existsSync(join(root, rows[0]!.path))).toBe(true);
  });
});

describe("cost for strangers", () => {
  test("a flood of cold variants from one address: after the budget, the original (briefly cached) and nothing made; cached ones and other addresses still served", async () => {
    const variants = servicesOf(ctx.deps).variants;
    const saved = variants.budget.perMinute;
    variants.budget.perMinute = 4; // the default (30 a minute) works the same way; 4 keeps the test fast
    try {
      const up = await upload(await makeNoisyJpeg(2600, 200), "flood.jpg", "image/jpeg");
      const path = new URL(up.url).pathname;
      const flooder = "203.0.113.77";
      const asks = LADDER.flatMap((w) => ["webp", "png"].map((f) => `${path}?w=${w}&format=${f}`));
      const rowsBefore = (await variantRows()).length;
      const answers: { type: string | null; cache: string | null }[] = [];
      for (const ask of asks) {
        const res = await get(ask, {}, flooder);
        await expectStatus(res, 200);
        answers.push({ type: res.headers.get("content-type"), cache: res.headers.get("cache-control") });
      }
      // the first 4 are made; past the budget, each answers the original for a minute (a <picture> never breaks), none is made
      expect(answers.slice(0, 4).map((a) => a.type)).toEqual(["image/webp", "image/png", "image/webp", "image/png"]);
      expect(answers.slice(0, 4).every((a) => a.cache === "public, max-age=31536000, immutable")).toBe(true);
      for (const a of answers.slice(4)) expect(a).toEqual({ type: "image/jpeg", cache: "public, max-age=60" });
      await variants.settled();
      expect((await variantRows()).length).toBe(rowsBefore + 4);
      // what exists is served to the flooder; another address may still make new ones
      const cached = await get(asks[0]!, {}, flooder);
      await expectStatus(cached, 200);
      expect(cached.headers.get("content-type")).toBe("image/webp");
      const other = await get(asks[5]!, {}, "203.0.113.78");
      await expectStatus(other, 200);
      expect(other.headers.get("content-type")).toBe("image/png");
      // an IPv6 /64 is one bucket
      for (let i = 0; i < 4; i++) {
        const res = await get(`${path}?w=${LADDER[i]}&format=avif`, {}, `2001:db8:1:2::${i + 1}`);
        await expectStatus(res, 200);
        expect(res.headers.get("content-type")).toBe("image/avif");
      }
      const fifth = await get(`${path}?w=${LADDER[4]}&format=avif`, {}, "2001:db8:1:2::99");
      await expectStatus(fifth, 200);
      expect(fifth.headers.get("cache-control")).toBe("public, max-age=60");
      expect(fifth.headers.get("content-type")).toBe("image/jpeg");
    } finally {
      variants.budget.perMinute = saved;
    }
  });
});

describe("delete, expiry and the reconciler", () => {
  test("deleting an image removes its variants' files and rows in the same delete", async () => {
    const up = await upload(await makeNoisyJpeg(800, 600), "del.jpg", "image/jpeg");
    const path = new URL(up.url).pathname;
    await expectStatus(await get(`${path}?w=160&format=webp`), 200);
    await expectStatus(await get(`${path}?w=320&format=png`), 200);
    const mine = await rowsOf(up);
    expect(mine.length).toBe(2);
    for (const r of mine) expect(existsSync(join(root, r.path))).toBe(true);
    const del = await ctx.json(`/api/v1/images/${up.key}`, { method: "DELETE", headers: ctx.bearer(user.token) });
    expect(del.status).toBe(200);
    for (const r of mine) expect(existsSync(join(root, r.path))).toBe(false);
    expect(await rowsOf(up)).toEqual([]);
    expect((await get(`${path}?w=160&format=webp`)).status).toBe(404);
    expect((await get(path)).status).toBe(404);
  });

  test("expiry removes the variants with the image", async () => {
    const expires = new Date(ctx.now().getTime() + 30_000).toISOString();
    const up = await upload(await makeNoisyJpeg(800, 600), "exp.jpg", "image/jpeg", { expired_at: expires });
    const path = new URL(up.url).pathname;
    const served = await get(`${path}?w=160&format=webp`);
    await expectStatus(served, 200);
    expect(served.headers.get("cache-control")).toMatch(/^public, max-age=(29|30)$/); // the image's expiry, not a year
    const mine = await rowsOf(up);
    expect(mine.length).toBe(1);
    ctx.advance(31_000);
    expect((await get(`${path}?w=160&format=webp`)).status).toBe(404);
    expect(await sweepExpired(ctx.deps)).toBeGreaterThanOrEqual(1);
    expect(existsSync(join(root, mine[0]!.path))).toBe(false);
    expect(await rowsOf(up)).toEqual([]);
  });

  test("the reconciler keeps live variants and quarantines a variant file no row names", async () => {
    const up = await upload(await makeNoisyJpeg(800, 600), "rec.jpg", "image/jpeg");
    await expectStatus(await get(`${new URL(up.url).pathname}?w=320&format=webp`), 200);
    const live = await rowsOf(up);
    expect(live.length).toBe(1);
    const orphan = `variants/2026/01/02/${"A".repeat(20)}_320_abcdefgh.webp`;
    mkdirSync(dirname(join(root, orphan)), { recursive: true });
    writeFileSync(join(root, orphan), "leftover");
    ctx.advance(2 * RECONCILE_GRACE_SECONDS * 1000);
    const old = new Date(ctx.now().getTime() - 2 * RECONCILE_GRACE_SECONDS * 1000);
    utimesSync(join(root, orphan), old, old);
    const report = await ctx.admin("POST", "/api/admin/storage/reconcile");
    const location = report.locations.find((l: any) => l.strategies.some((s: any) => s.id === ctx.localStrategyId));
    expect(location.orphans).toEqual([orphan]);
    for (const r of await variantRows()) expect(existsSync(join(root, r.path)), r.path).toBe(true);
    expect(existsSync(join(root, orphan))).toBe(false);
  });
});

describe("cached variants are served like originals", () => {
  test("ETag, 304, Range, HEAD, immutable caching and the security headers", async () => {
    const path = `${photoPath}?w=640&format=webp`;
    const first = await get(path);
    const bytes: Uint8Array = await expectStatus(first, 200);
    const etag = first.headers.get("etag")!;
    expect(etag).toBe(`"v-${photo.sha1}-640-webp"`);
    expect(first.headers.get("content-length")).toBe(String(bytes.byteLength));
    expect(first.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(first.headers.get("x-content-type-options")).toBe("nosniff");
    expect(first.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(first.headers.get("accept-ranges")).toBe("bytes");
    expect(first.headers.get("vary")).toBeNull();
    expect(new Date(first.headers.get("last-modified")!).toString()).not.toBe("Invalid Date");

    const again: Uint8Array = await expectStatus(await get(path), 200);
    expect(Buffer.from(again).equals(Buffer.from(bytes))).toBe(true);
    const revalidated = await get(path, { "if-none-match": etag });
    await expectStatus(revalidated, 304);
    expect(revalidated.headers.get("etag")).toBe(etag);
    await expectStatus(await get(path, { "if-modified-since": first.headers.get("last-modified")! }), 304);
    await expectStatus(await get(path, { "if-none-match": '"other"' }), 200);

    const ranged = await get(path, { range: "bytes=0-11" });
    const part: Uint8Array = await expectStatus(ranged, 206);
    expect(ranged.headers.get("content-range")).toBe(`bytes 0-11/${bytes.byteLength}`);
    expect(Buffer.from(part).equals(Buffer.from(bytes.subarray(0, 12)))).toBe(true);
    expect(Buffer.from(part.subarray(8, 12)).toString()).toBe("WEBP");
    await expectStatus(await get(path, { range: `bytes=${bytes.byteLength + 10}-` }), 416);

    const head = await ctx.request(path, { method: "HEAD", headers: { "x-forwarded-for": freshIp() } });
    expect((await expectStatus(head, 200)).byteLength).toBe(0);
    expect(head.headers.get("content-length")).toBe(String(bytes.byteLength));
  });

  test("a lost variant object is made again on its next request", async () => {
    const up = await upload(await makeImage("png", 700, 500), "lost.png", "image/png");
    const path = `${new URL(up.url).pathname}?w=320&format=webp`;
    await expectStatus(await get(path), 200);
    const [row] = await rowsOf(up);
    await Bun.file(join(root, row!.path)).delete();
    const again = await get(path);
    expect((await sharp((await expectStatus(again, 200)) as Uint8Array).metadata()).width).toBe(320);
    const rows = await rowsOf(up);
    expect(rows.length).toBe(1);
    expect(existsSync(join(root, rows[0]!.path))).toBe(true);
  });

  test("a variant that cannot be made (a corrupt original) answers the original, briefly cached; remembered: asking again from other addresses costs no decode", async () => {
    const up = await upload(await makeNoisyJpeg(800, 600), "broken.jpg", "image/jpeg");
    const file = join(root, up.pathname);
    const bytes = new Uint8Array(await Bun.file(file).arrayBuffer());
    const damaged = bytes.subarray(0, Math.floor(bytes.length * 0.6));
    writeFileSync(file, damaged); // damaged on disk after the upload
    const original = decoders.variant;
    let decodes = 0;
    decoders.variant = (...args: Parameters<typeof original>) => {
      decodes++;
      return original.apply(decoders, args);
    };
    try {
      const path = `${new URL(up.url).pathname}?w=320&format=webp`;
      for (let i = 0; i < 6; i++) {
        const res = await get(path);
        const body: Uint8Array = await expectStatus(res, 200);
        expect(res.headers.get("content-type")).toBe("image/jpeg");
        expect(res.headers.get("cache-control")).toBe("public, max-age=60");
        expect(Buffer.from(body).equals(Buffer.from(damaged))).toBe(true);
      }
      await servicesOf(ctx.deps).variants.settled();
      expect(decodes).toBe(1);
      expect(await rowsOf(up)).toEqual([]);
    } finally {
      decoders.variant = original;
    }
  });
});
