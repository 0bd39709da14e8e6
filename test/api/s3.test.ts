import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { S3Client } from "bun";
import { type LocalS3, startLocalS3 } from "../support/s3rver.ts";
import { createTestContext, quietly, type TestContext, type TestUser } from "../support/harness.ts";
import { makeNoisyJpeg } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

/** The s3 driver against s3rver, an S3 implementation running in this process on loopback. */
let ctx: TestContext;
let s3: LocalS3;
let bucket: S3Client;
let user: TestUser;
let strategyId: number;

beforeAll(async () => {
  s3 = await startLocalS3("s3");
  ({ bucket } = s3);
  ctx = await createTestContext();
  const strategy = await ctx.admin("POST", "/api/admin/strategies", {
    name: "S3",
    driver: "s3",
    config: s3.strategyConfig("site-a", "https://cdn.example.com"),
  });
  strategyId = strategy.id;
  expect(strategy.config.secret_access_key).toBe("********");
  const group = await ctx.admin("POST", "/api/admin/groups", { name: "on s3", strategy_ids: [strategyId] });
  user = await ctx.createUser({ group_id: group.id });
});
afterAll(async () => {
  await ctx.close();
  await s3?.close();
});

describe("s3 strategy", () => {
  test("upload stores the object and thumbnail in the bucket; addresses use the bucket's public url; delete removes both", async () => {
    const jpeg = await makeNoisyJpeg(900, 600);
    const res = await ctx.upload(user.token, { bytes: jpeg, filename: "photo.jpg", contentType: "image/jpeg" });
    expectStatus(res, 200);
    const d = res.body.data;
    expect(d.url).toBe(`https://cdn.example.com/site-a/${d.pathname}`);
    expect(d.thumbnail_url).toMatch(/^https:\/\/cdn\.example\.com\/site-a\/thumbnails\/.+\.webp$/);
    const objectKey = `site-a/${d.pathname}`;
    const thumbKey = new URL(d.thumbnail_url).pathname.slice(1);
    const object = bucket.file(objectKey);
    expect(Buffer.from(await object.bytes()).equals(Buffer.from(jpeg))).toBe(true);
    expect(await bucket.file(thumbKey).exists()).toBe(true);

    const del = await ctx.json(`/api/v1/images/${d.key}`, { method: "DELETE", headers: ctx.bearer(user.token) });
    expectStatus(del, 200);
    expect(await bucket.file(objectKey).exists()).toBe(false);
    expect(await bucket.file(thumbKey).exists()).toBe(false);
  });

  test("the server does not serve s3 objects itself", async () => {
    const png = new Uint8Array(
      await (await import("sharp"))
        .default({ create: { width: 8, height: 8, channels: 3, background: "red" } })
        .png()
        .toBuffer(),
    );
    const d = (await ctx.upload(user.token, { bytes: png, filename: "a.png", contentType: "image/png" })).body.data;
    await expectStatus(await ctx.request(`/i/${d.pathname}`), 404);
  });

  test("an unreachable bucket: 500, nothing recorded or charged", async () => {
    await ctx.admin("PATCH", `/api/admin/strategies/${strategyId}`, {
      config: {
        bucket: "images",
        endpoint: "http://127.0.0.1:9",
        region: "us-east-1",
        access_key_id: "x",
        secret_access_key: "y",
        url: "https://cdn.example.com",
      },
    });
    const before = (await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) })).body.data;
    const jpeg = await makeNoisyJpeg(100, 100);
    const { result: res } = await quietly(() => ctx.upload(user.token, { bytes: jpeg, filename: "a.jpg", contentType: "image/jpeg" }));
    expectStatus(res, 500);
    expect(res.body.message).toBe("The storage service failed; nothing was stored.");
    const after = (await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) })).body.data;
    expect(after).toEqual(before);
  });
});
