import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { S3Client } from "bun";
import { sql } from "drizzle-orm";
import sharp from "sharp";
import { DecoderPool } from "../../src/images/decoder.ts";
import { RECONCILE_GRACE_SECONDS } from "../../src/services/reconcile/index.ts";
import { servicesOf } from "../../src/services/index.ts";
import { decoders } from "../../src/services/work-queue.ts";
import { sweepExpired } from "../../src/services/sweeper.ts";
import { type LocalS3, startLocalS3 } from "../support/s3rver.ts";
import { createTestContext, type TestContext, type TestUser } from "../support/harness.ts";
import { makeNoisyJpeg } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

setDefaultTimeout(60_000);

/**
 * Variants on an S3 strategy (variants work on every strategy), end to end against s3rver in this
 * process. The strategy's public address (cdn.example.com) is not reachable from here: the original is read through
 * the storage with the strategy's credentials (Storage.read), never through its public address.
 */
let ctx: TestContext;
let s3: LocalS3;
let endpoint: string;
let bucket: S3Client;
let user: TestUser;
let strategyId: number;
const PUBLIC = "https://cdn.example.com/images";

beforeAll(async () => {
  s3 = await startLocalS3("variants-s3");
  ({ endpoint, bucket } = s3);
  ctx = await createTestContext();
  const strategy = await ctx.admin("POST", "/api/admin/strategies", {
    name: "S3 variants",
    driver: "s3",
    config: s3.strategyConfig("site-v", PUBLIC),
  });
  strategyId = strategy.id;
  const group = await ctx.admin("POST", "/api/admin/groups", { name: "variants on s3", strategy_ids: [strategy.id] });
  user = await ctx.createUser({ group_id: group.id });
});
afterAll(async () => {
  await ctx?.close();
  await s3?.close();
});

async function variantKeys(): Promise<string[]> {
  const page = await bucket.list({ prefix: "site-v/variants/" });
  return (page.contents ?? []).map((o) => o.key).sort();
}

describe("variants on an S3 strategy", () => {
  test("/i/{pathname}?w=320&format=webp on this server: 302 to the stored variant (200 image/webp, 320 wide); the image's delete removes it", async () => {
    const jpeg = await makeNoisyJpeg(1000, 750);
    const d = expectStatus(await ctx.upload(user.token, { bytes: jpeg, filename: "photo.jpg", contentType: "image/jpeg" }), 200).data;
    expect(d.url).toBe(`${PUBLIC}/site-v/${d.pathname}`);
    expect(await variantKeys()).toEqual([]);

    const ask = () => ctx.request(`/i/${d.pathname}?w=320&format=webp`, { headers: { "x-forwarded-for": "198.51.100.40" } });
    const res = await ask();
    expect(res.status).toBe(302);
    const location = res.headers.get("location")!;
    expect(location.startsWith(`${PUBLIC}/site-v/variants/`)).toBe(true);
    expect(location).toMatch(/_320_[\w-]+\.webp$/);
    const key = new URL(location).pathname.slice("/images/".length);
    expect(await variantKeys()).toEqual([key]);

    // the object the redirect names, fetched from the bucket as a browser would fetch it from its public address
    const object = await fetch(`${endpoint}/images/${key}`);
    expect(object.status).toBe(200);
    expect(object.headers.get("content-type")).toBe("image/webp");
    const meta = await sharp(new Uint8Array(await object.arrayBuffer())).metadata();
    expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format: "webp", width: 320, height: 240 });

    // made once: the second request redirects to the same object, nothing new in the bucket
    const again = await ask();
    expect(again.status).toBe(302);
    expect(again.headers.get("location")).toBe(location);
    expect(await variantKeys()).toEqual([key]);

    const del = await ctx.json(`/api/v1/images/${d.key}`, { method: "DELETE", headers: ctx.bearer(user.token) });
    expectStatus(del, 200);
    expect(await bucket.file(key).exists()).toBe(false);
    expect(await bucket.file(`site-v/${d.pathname}`).exists()).toBe(false);
    expect(await variantKeys()).toEqual([]);
    const rows = await ctx.db.execute(sql`select count(*)::int as n from image_variants`);
    expect(((Array.isArray(rows) ? rows : (rows as { rows: unknown[] }).rows) as { n: number }[])[0]!.n).toBe(0);
    // the address stops at once, even on the instance that redirected a moment ago: no redirect to a deleted object
    const afterDelete = await ask();
    expect(afterDelete.status).toBe(404);
    expect(afterDelete.headers.get("location")).toBeNull();
    expect(await variantKeys()).toEqual([]);
  });

  test("an original gone from the bucket: 404, nothing stored", async () => {
    const d = expectStatus(await ctx.upload(user.token, { bytes: await makeNoisyJpeg(700, 500), filename: "lost.jpg", contentType: "image/jpeg" }), 200).data;
    await bucket.delete(`site-v/${d.pathname}`);
    const res = await ctx.request(`/i/${d.pathname}?w=160&format=webp`, { headers: { "x-forwarded-for": "198.51.100.41" } });
    expect(res.status).toBe(404);
    expect(await variantKeys()).toEqual([]);
  });

  test("expiry removes the variant objects from the bucket with the image", async () => {
    const expires = new Date(ctx.now().getTime() + 30_000).toISOString();
    const d = expectStatus(
      await ctx.upload(user.token, { bytes: await makeNoisyJpeg(800, 600), filename: "exp.jpg", contentType: "image/jpeg" }, { expired_at: expires }),
      200,
    ).data;
    const res = await ctx.request(`/i/${d.pathname}?w=160&format=webp`, { headers: { "x-forwarded-for": "198.51.100.42" } });
    expect(res.status).toBe(302);
    const key = new URL(res.headers.get("location")!).pathname.slice("/images/".length);
    expect(await bucket.file(key).exists()).toBe(true);
    ctx.advance(31_000);
    expect((await ctx.request(`/i/${d.pathname}?w=160&format=webp`, { headers: { "x-forwarded-for": "198.51.100.42" } })).status).toBe(404);
    expect(await sweepExpired(ctx.deps)).toBeGreaterThanOrEqual(1);
    expect(await bucket.file(key).exists()).toBe(false);
    expect(await bucket.file(`site-v/${d.pathname}`).exists()).toBe(false);
  });

  test("the reconciler keeps a live variant object and quarantines a variant object no row names", async () => {
    const d = expectStatus(await ctx.upload(user.token, { bytes: await makeNoisyJpeg(800, 600), filename: "rec.jpg", contentType: "image/jpeg" }), 200).data;
    const res = await ctx.request(`/i/${d.pathname}?w=320&format=webp`, { headers: { "x-forwarded-for": "198.51.100.43" } });
    expect(res.status).toBe(302);
    const live = new URL(res.headers.get("location")!).pathname.slice("/images/".length);
    const orphan = `variants/2026/01/02/${"B".repeat(20)}_320_abcdefgh.webp`;
    await bucket.write(`site-v/${orphan}`, "leftover");
    ctx.advance(2 * RECONCILE_GRACE_SECONDS * 1000);
    const report = await ctx.admin("POST", "/api/admin/storage/reconcile");
    const location = report.locations.find((l: any) => l.strategies.some((s: any) => s.id === strategyId));
    expect(location.orphans).toEqual([orphan]);
    expect(await bucket.file(live).exists()).toBe(true);
    expect(await bucket.file(`site-v/${orphan}`).exists()).toBe(false);
    // the live variant still answers
    const again = await ctx.request(`/i/${d.pathname}?w=320&format=webp`, { headers: { "x-forwarded-for": "198.51.100.43" } });
    expect(again.status).toBe(302);
    expect(new URL(again.headers.get("location")!).pathname.slice("/images/".length)).toBe(live);
  });

  test("a variant over the decode budget: 302 to the original, briefly cached; the AVIF made in the background is the next answer", async () => {
    const d = expectStatus(await ctx.upload(user.token, { bytes: await makeNoisyJpeg(900, 600), filename: "over.jpg", contentType: "image/jpeg" }), 200).data;
    const tiny = new DecoderPool(1, 0.001); // any real variant overruns 1 ms of CPU: its process is killed
    const real = decoders.variant;
    let calls = 0;
    decoders.variant = (...args: Parameters<typeof real>) => (++calls === 1 ? tiny.variant(...args) : real.apply(decoders, args));
    try {
      const ask = () =>
        ctx.request(`/i/${d.pathname}?w=320&format=auto`, { headers: { "x-forwarded-for": "198.51.100.44", accept: "image/avif,image/webp,*/*" } });
      const first = await ask();
      expect(first.status).toBe(302);
      expect(first.headers.get("location")).toBe(d.url);
      expect(first.headers.get("cache-control")).toBe("public, max-age=60");
      expect(first.headers.get("vary")).toBe("Accept");
      await servicesOf(ctx.deps).variants.settled();
      expect(calls).toBe(2);
      const later = await ask();
      expect(later.status).toBe(302);
      expect(later.headers.get("location")).toMatch(/_320_[\w-]+\.avif$/);
      expect(later.headers.get("cache-control")).toBe("public, max-age=86400");
    } finally {
      decoders.variant = real;
    }
  });
});
