/**
 * Authentication lookups are kept for at most LOOKUP_CACHE_MS per instance: the instance that makes an
 * administration change refuses at once, every other instance within the bound.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createApp } from "../../src/app.ts";
import { LOOKUP_CACHE_MS } from "../../src/services/lookup-cache.ts";
import { BASE_URL, createTestContext, type TestContext } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

let ctx: TestContext;
/** A second instance: the same database, its own process-level caches. */
let other: ReturnType<typeof createApp>;

beforeAll(async () => {
  ctx = await createTestContext();
  other = createApp({ ...ctx.deps });
});
afterAll(() => ctx.close());

const profileOn = (app: ReturnType<typeof createApp>, token: string) =>
  app.request(`${BASE_URL}/api/v1/profile`, { headers: { authorization: `Bearer ${token}` } });

/** Refused on this instance at once, on the other within the bound (and not a moment later). */
async function refusedEverywhereWithin(token: string, status: number) {
  await expectStatus(await profileOn(ctx.app, token), status);
  await Bun.sleep(LOOKUP_CACHE_MS + 50);
  await expectStatus(await profileOn(other, token), status);
}

describe(`every instance refuses within ${LOOKUP_CACHE_MS} ms`, () => {
  test("a revoked token", async () => {
    const alice = await ctx.createUser();
    await expectStatus(await profileOn(other, alice.token), 200); // the other instance now keeps the lookup
    await ctx.admin("DELETE", `/api/admin/tokens/${alice.token.split("|")[0]}`);
    await refusedEverywhereWithin(alice.token, 401);
  });

  test("a disabled account", async () => {
    const bob = await ctx.createUser();
    await expectStatus(await profileOn(other, bob.token), 200);
    await ctx.admin("PATCH", `/api/admin/users/${bob.id}`, { enabled: false });
    await refusedEverywhereWithin(bob.token, 403);
  });

  test("the site-wide API switch", async () => {
    const carol = await ctx.createUser();
    await expectStatus(await profileOn(other, carol.token), 200);
    await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: false });
    try {
      await refusedEverywhereWithin(carol.token, 403);
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: true });
      await Bun.sleep(LOOKUP_CACHE_MS + 50); // and on again everywhere
    }
  });

  test("the profile's figures are never stale, whatever is kept", async () => {
    const dave = await ctx.createUser();
    await expectStatus(await profileOn(other, dave.token), 200);
    const image = await makeImage("png", 20, 20);
    expectStatus(await ctx.upload(dave.token, { bytes: image, filename: "a.png", contentType: "image/png" }), 200);
    const body = await expectStatus(await profileOn(other, dave.token), 200);
    expect(body.data.image_num).toBe(1);
    expect(body.data.size).toBe(image.byteLength / 1024);
  });
});
