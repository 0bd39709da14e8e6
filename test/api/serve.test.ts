import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createTestContext, type TestContext } from "../support/harness.ts";
import { makeNoisyJpeg } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

let ctx: TestContext;
let jpeg: Uint8Array;
let image: any;
let path: string;

beforeAll(async () => {
  ctx = await createTestContext();
  const user = await ctx.createUser();
  jpeg = await makeNoisyJpeg(800, 600);
  image = expectStatus(await ctx.upload(user.token, { bytes: jpeg, filename: "photo.jpg", contentType: "image/jpeg" }), 200).data;
  path = new URL(image.url).pathname;
});
afterAll(() => ctx.close());

describe("serving local objects at /i/<path>", () => {
  test("200 with type, length, validators, long-lived cache and script-free headers", async () => {
    const res = await ctx.request(path);
    const body: Uint8Array = await expectStatus(res, 200);
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
    const bytes: Uint8Array = await expectStatus(res, 200);
    expect(res.headers.get("content-type")).toBe("image/webp");
    expect(Buffer.from(bytes.subarray(8, 12)).toString()).toBe("WEBP");
    expect(res.headers.get("etag")).not.toBe(`"${image.sha1}"`);
  });

  test("HEAD: headers without a body", async () => {
    const res = await ctx.request(path, { method: "HEAD" });
    const body: Uint8Array = await expectStatus(res, 200);
    expect(res.headers.get("content-length")).toBe(String(jpeg.byteLength));
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(body.byteLength).toBe(0);
  });

  test("any other method: 405 with Allow, and the object is untouched", async () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND"]) {
      const res = await ctx.request(path, { method, body: method === "PUT" || method === "POST" ? "overwrite" : undefined });
      const body = await expectStatus(res, 405);
      expect(res.headers.get("allow")).toBe("GET, HEAD");
      expect(body).toEqual({
        status: false,
        message: "Method not allowed: images are read with GET or HEAD; upload and delete them through /api/v1.",
        data: null,
      });
    }
    const res = await ctx.request(path);
    expect(Buffer.from(await expectStatus(res, 200)).equals(Buffer.from(jpeg))).toBe(true);
  });

  test("revalidation: If-None-Match and If-Modified-Since answer 304", async () => {
    const first = await ctx.request(path);
    const etag = first.headers.get("etag")!;
    const lastModified = first.headers.get("last-modified")!;
    const byEtag = await ctx.request(path, { headers: { "if-none-match": etag } });
    const empty: Uint8Array = await expectStatus(byEtag, 304);
    expect(byEtag.headers.get("etag")).toBe(etag);
    expect(empty.byteLength).toBe(0);
    await expectStatus(await ctx.request(path, { headers: { "if-none-match": `"other", ${etag}` } }), 304);
    await expectStatus(await ctx.request(path, { headers: { "if-none-match": '"other"' } }), 200);
    await expectStatus(await ctx.request(path, { headers: { "if-modified-since": lastModified } }), 304);
    await expectStatus(await ctx.request(path, { headers: { "if-modified-since": "Thu, 01 Jan 1970 00:00:00 GMT" } }), 200);
    // If-None-Match wins over If-Modified-Since
    await expectStatus(await ctx.request(path, { headers: { "if-none-match": '"other"', "if-modified-since": lastModified } }), 200);
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
      const body: Uint8Array = await expectStatus(res, 206);
      expect(res.headers.get("content-range")).toBe(`bytes ${start}-${end}/${size}`);
      expect(res.headers.get("content-length")).toBe(String(end - start + 1));
      expect(Buffer.from(body).equals(Buffer.from(jpeg.subarray(start, end + 1)))).toBe(true);
    }
    for (const range of [`bytes=${size}-`, `bytes=${size + 5}-${size + 10}`, "bytes=-0"]) {
      const res = await ctx.request(path, { headers: { range } });
      await expectStatus(res, 416);
      expect(res.headers.get("content-range")).toBe(`bytes */${size}`);
    }
    // multiple ranges or garbage: the whole object
    await expectStatus(await ctx.request(path, { headers: { range: "bytes=0-1,5-6" } }), 200);
    await expectStatus(await ctx.request(path, { headers: { range: "pages=1" } }), 200);
    // If-Range with a stale validator: the whole object
    await expectStatus(await ctx.request(path, { headers: { range: "bytes=0-1", "if-range": '"stale"' } }), 200);
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
      // the raw text, whatever the type: nothing of the file may leak
      const text = await res.text();
      expect(res.status, `${p} answered ${res.status}: ${text}`).toBe(404);
      expect(text).not.toContain("top secret");
    }
  });
});

describe("what docs/api.md promises about addresses", () => {
  test("HEAD with a Range header answers 200 with the full length (ranges are for GET)", async () => {
    const res = await ctx.request(path, { method: "HEAD", headers: { range: "bytes=0-9" } });
    await expectStatus(res, 200);
    expect(res.headers.get("content-length")).toBe(String(jpeg.byteLength));
    expect(res.headers.get("content-range")).toBeNull();
  });

  test("a delete_url opened in a browser answers 405 saying how to use it", async () => {
    const res = await ctx.app.fetch(new Request(image.delete_url));
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("DELETE");
    expect(await res.json()).toEqual({
      status: false,
      message: "Method not allowed: delete this image with DELETE and a permanent API token ('Authorization: Bearer <token>').",
      data: null,
    });
    const tokens = await ctx.app.fetch(new Request(`${new URL(image.delete_url).origin}/api/v1/images/tokens`));
    expect([tokens.status, tokens.headers.get("allow")]).toEqual([405, "POST"]);
  });
});
