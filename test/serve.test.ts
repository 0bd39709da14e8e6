import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTestContext, type TestContext } from "./support/harness.ts";
import { makeNoisyJpeg } from "./support/images.ts";

let ctx: TestContext;
let jpeg: Uint8Array;
let image: any;
let path: string;

beforeAll(async () => {
  ctx = await createTestContext();
  const user = await ctx.createUser();
  jpeg = await makeNoisyJpeg(800, 600);
  image = (await ctx.upload(user.token, { bytes: jpeg, filename: "photo.jpg", contentType: "image/jpeg" })).body.data;
  path = new URL(image.url).pathname;
});
afterAll(() => ctx.close());

describe("serving local objects at /i/<path>", () => {
  test("200 with type, length, validators, long-lived cache and script-free headers", async () => {
    const res = await ctx.request(path);
    expect(res.status).toBe(200);
    const body = new Uint8Array(await res.arrayBuffer());
    expect(Buffer.from(body).equals(Buffer.from(jpeg))).toBe(true);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(res.headers.get("content-length")).toBe(String(jpeg.byteLength));
    expect(res.headers.get("etag")).toBe(`"${image.sha1}"`);
    expect(new Date(res.headers.get("last-modified")!).toString()).not.toBe("Invalid Date");
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(res.headers.get("content-security-policy")).not.toContain("script-src");
    expect(res.headers.get("accept-ranges")).toBe("bytes");
  });

  test("the thumbnail is served as WebP", async () => {
    const res = await ctx.request(new URL(image.thumbnail_url).pathname);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/webp");
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(Buffer.from(bytes.subarray(8, 12)).toString()).toBe("WEBP");
    expect(res.headers.get("etag")).not.toBe(`"${image.sha1}"`);
  });

  test("HEAD: headers without a body", async () => {
    const res = await ctx.request(path, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe(String(jpeg.byteLength));
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });

  test("revalidation: If-None-Match and If-Modified-Since answer 304", async () => {
    const first = await ctx.request(path);
    const etag = first.headers.get("etag")!;
    const lastModified = first.headers.get("last-modified")!;
    const byEtag = await ctx.request(path, { headers: { "if-none-match": etag } });
    expect(byEtag.status).toBe(304);
    expect(byEtag.headers.get("etag")).toBe(etag);
    expect((await byEtag.arrayBuffer()).byteLength).toBe(0);
    expect((await ctx.request(path, { headers: { "if-none-match": `"other", ${etag}` } })).status).toBe(304);
    expect((await ctx.request(path, { headers: { "if-none-match": '"other"' } })).status).toBe(200);
    expect((await ctx.request(path, { headers: { "if-modified-since": lastModified } })).status).toBe(304);
    expect((await ctx.request(path, { headers: { "if-modified-since": "Thu, 01 Jan 1970 00:00:00 GMT" } })).status).toBe(200);
    // If-None-Match wins over If-Modified-Since
    expect((await ctx.request(path, { headers: { "if-none-match": '"other"', "if-modified-since": lastModified } })).status).toBe(200);
  });

  test("single byte ranges: 206 with Content-Range; unsatisfiable: 416", async () => {
    const size = jpeg.byteLength;
    const cases: [string, number, number][] = [
      ["bytes=0-99", 0, 99],
      ["bytes=100-", 100, size - 1],
      ["bytes=-50", size - 50, size - 1],
      [`bytes=10-${size + 1000}`, 10, size - 1],
    ];
    for (const [range, start, end] of cases) {
      const res = await ctx.request(path, { headers: { range } });
      expect(res.status).toBe(206);
      expect(res.headers.get("content-range")).toBe(`bytes ${start}-${end}/${size}`);
      expect(res.headers.get("content-length")).toBe(String(end - start + 1));
      const body = new Uint8Array(await res.arrayBuffer());
      expect(Buffer.from(body).equals(Buffer.from(jpeg.subarray(start, end + 1)))).toBe(true);
    }
    for (const range of [`bytes=${size}-`, `bytes=${size + 5}-${size + 10}`, "bytes=-0"]) {
      const res = await ctx.request(path, { headers: { range } });
      expect(res.status).toBe(416);
      expect(res.headers.get("content-range")).toBe(`bytes */${size}`);
    }
    // multiple ranges or garbage: the whole object
    expect((await ctx.request(path, { headers: { range: "bytes=0-1,5-6" } })).status).toBe(200);
    expect((await ctx.request(path, { headers: { range: "pages=1" } })).status).toBe(200);
    // If-Range with a stale validator: the whole object
    expect((await ctx.request(path, { headers: { range: "bytes=0-1", "if-range": '"stale"' } })).status).toBe(200);
  });

  test("404 for anything absent, and no path escapes the storage root", async () => {
    writeFileSync(join(ctx.dataDir, "secret.txt"), "top secret");
    writeFileSync(join(ctx.dataDir, "uploads", "stray.png"), "not an image record");
    const dir = path.slice(0, path.lastIndexOf("/"));
    for (const p of [
      "/i/nothing.png",
      "/i/",
      "/i/stray.png", // a file without a record is not served
      "/i/../secret.txt",
      "/i/%2e%2e/secret.txt",
      "/i/..%2fsecret.txt",
      `${dir}/..%2f..%2f..%2f..%2fsecret.txt`,
      "/i/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
      "/i/%00",
      "/i/%E0%A4%A",
    ]) {
      const res = await ctx.request(p);
      expect(res.status).toBe(404);
      expect(await res.text()).not.toContain("top secret");
    }
  });
});
