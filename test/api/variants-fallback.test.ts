import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { sql } from "drizzle-orm";
import sharp from "sharp";
import { responsiveSnippet } from "../../src/http/responsive-snippet.ts";
import { DecodeOverBudget, DecoderPool } from "../../src/images/decoder.ts";
import { servicesOf } from "../../src/services/index.ts";
import { FALLBACK_MAX_AGE } from "../../src/services/serving/object-server.ts";
import { decoders, imageWork } from "../../src/services/work-queue.ts";
import { AppError } from "../../src/errors.ts";
import { BASE_URL, createTestContext, quietly, type TestContext, type TestUser } from "../support/harness.ts";
import { makeNoisyJpeg } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

setDefaultTimeout(60_000);

/**
 * A variant that cannot be made now never breaks a page (docs/decisions/variant-fallback.md): every address the
 * Responsive HTML snippet names, and `format=auto`, answer an image — the next format down the chain that is stored,
 * else the original — with a short cache lifetime; the better format is made in the background for a later request.
 */
let ctx: TestContext;
let user: TestUser;
let ipSeq = 0;
const freshIp = () => `192.0.2.${++ipSeq}`;
const get = (path: string, headers: Record<string, string> = {}, ip = freshIp()) => ctx.request(path, { headers: { "x-forwarded-for": ip, ...headers } });
const SHORT = `public, max-age=${FALLBACK_MAX_AGE}`;
const BROWSER_ACCEPT = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";

/** A decoder pool whose budget is 1 ms of CPU (3 ms of wall time): any real variant overruns it, and its process is killed. */
const tiny = new DecoderPool(1, 0.001);
const realVariant = decoders.variant;
let decodes = 0;
/** How the next variant decodes go: "real" (the app's pool), "over" (the tiny pool: killed over budget), or a count of "over" ones left. */
let mode: "real" | "over" | number = "real";

beforeAll(async () => {
  ctx = await createTestContext();
  user = await ctx.createUser();
  decoders.variant = (...args: Parameters<typeof realVariant>) => {
    decodes++;
    const over = mode === "over" || (typeof mode === "number" && mode > 0);
    if (typeof mode === "number" && mode > 0) mode--;
    return over ? tiny.variant(...args) : realVariant.apply(decoders, args);
  };
});
afterAll(async () => {
  decoders.variant = realVariant;
  await servicesOf(ctx.deps).variants.settled();
  await ctx.close();
});

async function upload(width: number, height: number, name: string) {
  return expectStatus(await ctx.upload(user.token, { bytes: await makeNoisyJpeg(width, height), filename: name, contentType: "image/jpeg" }), 200).data;
}

async function rowsOf(imagePath: string): Promise<{ width: number; format: string }[]> {
  const stem = imagePath
    .split("/")
    .pop()!
    .replace(/\.[^.]*$/, "");
  const result = await ctx.db.execute(sql`select width, format, path from image_variants order by id`);
  const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as { width: number; format: string; path: string }[];
  return rows.filter((r) => r.path.split("/").pop()!.startsWith(`${stem}_`)).map(({ width, format }) => ({ width, format }));
}

/** Every address a snippet names (its sources' srcsets, the img's src and srcset), as paths on this server; the original's own url is left out. */
function snippetAddresses(image: any): string[] {
  const html = responsiveSnippet(image, BASE_URL);
  const urls = new Set<string>();
  for (const [, list] of html.matchAll(/srcset="([^"]*)"/g)) for (const entry of list!.split(", ")) urls.add(entry.split(" ")[0]!.replaceAll("&amp;", "&"));
  for (const [, src] of html.matchAll(/src="([^"]*)"/g)) urls.add(src!.replaceAll("&amp;", "&"));
  return [...urls].filter((u) => u !== image.url).map((u) => u.slice(BASE_URL.length));
}

/** The answer is a whole image of `type` and `width`, cached briefly, not immutably. */
async function expectFallback(res: Response, type: string, width: number, what: string) {
  const bytes: Uint8Array = await expectStatus(res, 200);
  expect(res.headers.get("content-type"), what).toBe(type);
  expect(res.headers.get("cache-control"), what).toBe(SHORT);
  const meta = await sharp(bytes).metadata();
  expect(`image/${meta.format === "heif" ? "avif" : meta.format}`, what).toBe(type);
  expect(meta.width, what).toBe(width);
}

describe("a variant over the decode budget", () => {
  test("the tiny pool really kills a variant over its budget", async () => {
    // large enough that no variant of it is made before the pool's first check (a 1000×750 one sometimes was)
    const up = await upload(2400, 1800, "probe.jpg");
    const file = `${ctx.dataDir}/uploads/${up.pathname}`;
    for (const format of ["webp", "avif", "jpeg"] as const) {
      const e = await tiny.variant({ file }, { width: 160, format, quality: 50, maxPixels: 100_000_000, animated: false }).catch((x) => x);
      expect(e).toBeInstanceOf(DecodeOverBudget);
    }
  });

  test("every address of the snippet and format=auto answer 200 with the original, cached briefly; nothing is stored", async () => {
    const up = await upload(1000, 750, "snippet.jpg");
    const addresses = snippetAddresses(up);
    // AVIF and WebP at 160, 320, 640 and the own width, the original's format at 160, 320, 640
    expect(addresses.length).toBe(11);
    mode = "over";
    try {
      const { logged } = await quietly(async () => {
        for (const address of addresses) {
          await expectFallback(await get(address), "image/jpeg", 1000, address);
        }
        for (const w of ["", "w=640&"]) {
          const res = await get(`/i/${up.pathname}?${w}format=auto`, { accept: BROWSER_ACCEPT });
          await expectFallback(res, "image/jpeg", 1000, `${w}format=auto`);
          expect(res.headers.get("vary")).toBe("Accept");
        }
        // HEAD and a revalidation of the fallback answer as for the original, briefly cached
        const head = await ctx.request(`/i/${up.pathname}?w=320&format=avif`, { method: "HEAD", headers: { "x-forwarded-for": freshIp() } });
        expect(head.status).toBe(200);
        expect(head.headers.get("cache-control")).toBe(SHORT);
        const revalidated = await get(`/i/${up.pathname}?w=320&format=avif`, { "if-none-match": `"${up.sha1}"` });
        expect(revalidated.status).toBe(304);
        expect(revalidated.headers.get("cache-control")).toBe(SHORT);
        await servicesOf(ctx.deps).variants.settled();
      });
      expect(logged.some((r) => r.msg === "variant: not made now; a fallback is served" && r.cause === "over_budget")).toBe(true);
    } finally {
      mode = "real";
    }
    expect(await rowsOf(up.pathname)).toEqual([]);
  });

  test("the better format is made in the background: a later request gets it, and the failure is not what it is served", async () => {
    const up = await upload(1000, 750, "later.jpg");
    const path = `/i/${up.pathname}?w=320&format=avif`;
    mode = 1; // the request's own generation overruns; the background's retry does not
    decodes = 0;
    await quietly(async () => {
      await expectFallback(await get(path), "image/jpeg", 1000, "first");
      await servicesOf(ctx.deps).variants.settled();
    });
    expect(decodes).toBe(2);
    expect(await rowsOf(up.pathname)).toEqual([{ width: 320, format: "avif" }]);
    const later = await get(path);
    const bytes: Uint8Array = await expectStatus(later, 200);
    expect(later.headers.get("content-type")).toBe("image/avif");
    expect(later.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect((await sharp(bytes).metadata()).width).toBe(320);
    expect(decodes).toBe(2);
  });

  test("format=auto falls back down the chain: AVIF over budget, the stored WebP is served (briefly); asking again costs no decode", async () => {
    const up = await upload(1000, 750, "chain.jpg");
    const auto = `/i/${up.pathname}?w=640&format=auto`;
    const webp = await get(`/i/${up.pathname}?w=640&format=webp`);
    expect(webp.headers.get("content-type")).toBe("image/webp");
    await webp.arrayBuffer();
    mode = "over";
    decodes = 0;
    try {
      await quietly(async () => {
        const res = await get(auto, { accept: BROWSER_ACCEPT });
        await expectFallback(res, "image/webp", 640, "auto");
        expect(res.headers.get("vary")).toBe("Accept");
        await servicesOf(ctx.deps).variants.settled();
      });
      // the request's generation, and the background's one retry of AVIF (WebP is stored: nothing more)
      expect(decodes).toBe(2);
      // remembered for the cost: asking again costs no decode, and still answers the WebP
      await quietly(async () => {
        for (let i = 0; i < 3; i++) await expectFallback(await get(auto, { accept: BROWSER_ACCEPT }), "image/webp", 640, `again ${i}`);
        await servicesOf(ctx.deps).variants.settled();
      });
      expect(decodes).toBe(2);
    } finally {
      mode = "real";
    }
    expect(await rowsOf(up.pathname)).toEqual([{ width: 640, format: "webp" }]);
  });

  test("an overrun of every format in the background leaves the next request the original, and nothing stored", async () => {
    const up = await upload(800, 600, "allover.jpg");
    mode = "over";
    decodes = 0;
    try {
      await quietly(async () => {
        await expectFallback(await get(`/i/${up.pathname}?w=320&format=avif`), "image/jpeg", 800, "avif");
        await servicesOf(ctx.deps).variants.settled();
      });
    } finally {
      mode = "real";
    }
    // the request's AVIF, then the background: AVIF again, WebP, JPEG
    expect(decodes).toBe(4);
    expect(await rowsOf(up.pathname)).toEqual([]);
  });
});

describe("other causes", () => {
  test("a damaged original: the original is served (briefly) to every source, one decode in all, nothing made in the background", async () => {
    const up = await upload(800, 600, "damaged.jpg");
    const file = `${ctx.dataDir}/uploads/${up.pathname}`;
    const bytes = new Uint8Array(await Bun.file(file).arrayBuffer());
    await Bun.write(file, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
    decodes = 0;
    await quietly(async () => {
      for (let i = 0; i < 4; i++) {
        const res = await get(`/i/${up.pathname}?w=320&format=avif`);
        const body: Uint8Array = await expectStatus(res, 200);
        expect(res.headers.get("content-type")).toBe("image/jpeg");
        expect(res.headers.get("cache-control")).toBe(SHORT);
        expect(body.byteLength).toBe(Math.floor(bytes.length * 0.6));
      }
      await servicesOf(ctx.deps).variants.settled();
    });
    expect(decodes).toBe(1);
    expect(await rowsOf(up.pathname)).toEqual([]);
  });

  test("a throttled address (its cold budget spent) gets the original, briefly cached, and starts no generation", async () => {
    const variants = servicesOf(ctx.deps).variants;
    const saved = variants.budget.perMinute;
    variants.budget.perMinute = 1;
    try {
      const up = await upload(900, 600, "throttled.jpg");
      const ip = "198.18.0.1";
      const first = await get(`/i/${up.pathname}?w=160&format=webp`, {}, ip);
      expect(first.headers.get("content-type")).toBe("image/webp");
      await first.arrayBuffer();
      decodes = 0;
      for (const address of snippetAddresses(up).filter((a) => !a.endsWith("?w=160&format=webp"))) {
        // the AVIF at 160 falls back to the WebP at 160 (stored), the rest to the original
        if (address.endsWith("?w=160&format=avif")) await expectFallback(await get(address, {}, ip), "image/webp", 160, address);
        else await expectFallback(await get(address, {}, ip), "image/jpeg", 900, address);
      }
      await servicesOf(ctx.deps).variants.settled();
      expect(decodes).toBe(0);
      expect(await rowsOf(up.pathname)).toEqual([{ width: 160, format: "webp" }]);
      // another address is not throttled
      const other = await get(`/i/${up.pathname}?w=320&format=webp`);
      expect(other.headers.get("content-type")).toBe("image/webp");
      expect(other.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    } finally {
      variants.budget.perMinute = saved;
    }
  });

  test("a full work queue: the original, briefly cached, and no memory of it (the next request makes the variant)", async () => {
    const up = await upload(900, 600, "busy.jpg");
    const run = imageWork.run;
    imageWork.run = () =>
      Promise.reject(new AppError("too_many_requests", "The server is busy processing images: retry in a few seconds.", undefined, { "retry-after": "2" }));
    try {
      await expectFallback(await get(`/i/${up.pathname}?w=320&format=avif`), "image/jpeg", 900, "busy");
    } finally {
      imageWork.run = run;
    }
    await servicesOf(ctx.deps).variants.settled();
    expect(await rowsOf(up.pathname)).toEqual([]);
    const next = await get(`/i/${up.pathname}?w=320&format=avif`);
    expect(next.headers.get("content-type")).toBe("image/avif");
    await next.arrayBuffer();
  });

  test("what the client can fix stays a 400: the grammar, a format an animation cannot take", async () => {
    const up = await upload(640, 480, "grammar.jpg");
    mode = "over";
    try {
      for (const q of ["?w=100", "?format=gif", "?format=AVIF", "?w=320&w=320"]) {
        const res = await get(`/i/${up.pathname}${q}`);
        expect(res.status, q).toBe(400);
        expect((await res.json()).status).toBe(false);
      }
    } finally {
      mode = "real";
    }
  });
});
