/**
 * The "Responsive HTML" snippet: its exact format (always run), then in a real browser (Debian's
 * Chromium through playwright-core): a signed-in user uploads a 2000×1500 JPEG on the upload page, copies the
 * snippet from the upload result (clipboard) and finds the same one in the image grid; the snippet, loaded in a page
 * 400 CSS px wide at device scale 1, makes Chromium fetch one variant in a modern format at the width the srcset
 * implies, never the original. Every request that leaves loopback is blocked and fails the test. Screenshots go to
 * test/browser/artifacts/responsive/ (git-ignored). The browser part is skipped, with the reason printed, where
 * /usr/bin/chromium is missing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import sharp from "sharp";
import type { BrowserContext, Page } from "playwright-core";
import { responsiveSnippet, type SnippetImage } from "../../src/http/responsive-snippet.ts";
import { type BrowserSite, CHROMIUM, hasChromium, PASSWORD, startBrowserSite } from "../support/browser-site.ts";

if (!hasChromium) console.warn(`test/browser/responsive.test.ts skipped (browser part): ${CHROMIUM} not found (apt-get install chromium)`);

const ARTIFACTS = join(import.meta.dir, "artifacts", "responsive");

const B = "https://img.example";
const image = (over: Partial<SnippetImage> = {}): SnippetImage => ({
  url: `${B}/i/2026/01/02/abc.jpg`,
  pathname: "2026/01/02/abc.jpg",
  width: 2000,
  height: 1500,
  mimetype: "image/jpeg",
  origin_name: "photo.jpg",
  ...over,
});

describe("the Responsive HTML snippet's format", () => {
  test("a 2000×1500 JPEG: AVIF, WebP and the original's format at the ladder's widths below 2000, then at 2000", () => {
    const v = `${B}/i/2026/01/02/abc.jpg`;
    const set = (f: string) =>
      `${v}?w=160&amp;format=${f} 160w, ${v}?w=320&amp;format=${f} 320w, ${v}?w=640&amp;format=${f} 640w, ${v}?w=1280&amp;format=${f} 1280w, ${v}?w=1920&amp;format=${f} 1920w, ${v}?format=${f} 2000w`;
    const sizes = `sizes="(max-width: 640px) 100vw, 640px"`;
    expect(responsiveSnippet(image(), B)).toBe(
      `<picture>` +
        `<source type="image/avif" srcset="${set("avif")}" ${sizes}>` +
        `<source type="image/webp" srcset="${set("webp")}" ${sizes}>` +
        `<img src="${v}" srcset="${v}?w=160 160w, ${v}?w=320 320w, ${v}?w=640 640w, ${v}?w=1280 1280w, ${v}?w=1920 1920w, ${v} 2000w" ${sizes} alt="photo.jpg" width="2000" height="1500" loading="lazy">` +
        `</picture>`,
    );
  });

  test("wider than the ladder: every ladder width, then the own width without w (a width off the ladder would be a 400)", () => {
    const s = responsiveSnippet(image({ width: 4000, height: 3000 }), `${B}/`);
    expect(s).toContain(`${B}/i/2026/01/02/abc.jpg?w=2560&amp;format=webp 2560w, ${B}/i/2026/01/02/abc.jpg?format=webp 4000w"`);
    expect(s).not.toMatch(/\?w=4000/);
  });

  test("narrow images: only the ladder's widths below their own, and sizes no wider than the image", () => {
    const s = responsiveSnippet(image({ width: 320, height: 200 }), B);
    expect(s).toContain(`srcset="${B}/i/2026/01/02/abc.jpg?w=160&amp;format=avif 160w, ${B}/i/2026/01/02/abc.jpg?format=avif 320w"`);
    expect(s).toContain(`sizes="(max-width: 320px) 100vw, 320px"`);
    expect(responsiveSnippet(image({ width: 100, height: 80 }), B)).toContain(`<img src="${B}/i/2026/01/02/abc.jpg" srcset="${B}/i/2026/01/02/abc.jpg 100w"`);
  });

  test("a GIF has no AVIF source (an animated GIF's variants keep the animation); a TIFF's <img> is its JPEG variant", () => {
    const gif = responsiveSnippet(image({ mimetype: "image/gif", url: `${B}/i/a.gif`, pathname: "a.gif" }), B);
    expect(gif).not.toContain("avif");
    expect(gif).toContain(`<source type="image/webp"`);
    const tiff = responsiveSnippet(image({ mimetype: "image/tiff", url: `${B}/i/a.tif`, pathname: "a.tif" }), B);
    expect(tiff).toContain(`<img src="${B}/i/a.tif?format=jpeg" srcset="${B}/i/a.tif?w=160 160w`);
    expect(tiff).toContain(`${B}/i/a.tif?format=jpeg 2000w"`);
  });

  test("on a storage with its own addresses (S3) the variants are on this server; the <img> is the stored original", () => {
    const s = responsiveSnippet(image({ url: "https://bucket.s3.example/2026/01/02/abc.jpg" }), B);
    expect(s).toContain(`<img src="https://bucket.s3.example/2026/01/02/abc.jpg" srcset="${B}/i/2026/01/02/abc.jpg?w=160 160w`);
    expect(s).toContain(`https://bucket.s3.example/2026/01/02/abc.jpg 2000w"`);
  });

  test("the alt text is escaped as the image resource's html snippet escapes it; path segments are percent-encoded", () => {
    const name = `"><script>alert('x')</script> & co.jpg`;
    const s = responsiveSnippet(image({ origin_name: name, pathname: "a b/c#d.jpg", url: `${B}/i/a%20b/c%23d.jpg` }), B);
    expect(s).toContain(`alt="&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co.jpg"`);
    expect(s).toContain(`${B}/i/a%20b/c%23d.jpg?w=160&amp;format=avif 160w`);
    expect(s).not.toContain("<script>");
  });
});

let site: BrowserSite;
let origin: string;
let context: BrowserContext;
let page: Page;
let foreign: string[] = [];
let pageErrors: string[] = [];
let snippet = "";
let stored: any;
let token = "";

/** A 2000×1500 photo-like JPEG that shows what it is: a gradient, a grid, and its size written on it. */
async function photo(): Promise<Buffer> {
  const lines = Array.from(
    { length: 19 },
    (_, i) => `<line x1="${(i + 1) * 100}" y1="0" x2="${(i + 1) * 100}" y2="1500" stroke="#fff3" stroke-width="4"/>`,
  ).join("");
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="2000" height="1500">
    <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#1d4e89"/><stop offset="1" stop-color="#f4a259"/></linearGradient></defs>
    <rect width="2000" height="1500" fill="url(#g)"/>${lines}
    <circle cx="1000" cy="750" r="420" fill="#ffffff55" stroke="#fff" stroke-width="12"/>
    <text x="1000" y="800" font-family="sans-serif" font-size="160" text-anchor="middle" fill="#fff">2000×1500</text>
  </svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 85 }).toBuffer();
}

describe.skipIf(!hasChromium)("the Responsive HTML snippet in Chromium", () => {
  beforeAll(async () => {
    site = await startBrowserSite({ artifacts: ARTIFACTS, user: { username: "rosa", email: "rosa@example.com", name: "Rosa" } });
    ({ origin, context, foreign, pageErrors } = site);
    page = await context.newPage();
    await page.goto(`${origin}/user/login`);
    await page.getByLabel("Username or email").fill("rosa");
    await page.getByLabel("Password").fill(PASSWORD);
    await Promise.all([page.waitForURL(`${origin}/user/dashboard`), page.getByRole("button", { name: "Sign in" }).click()]);
  }, 120_000);

  afterAll(async () => {
    await site?.close();
  }, 60_000);

  test("the upload result has a Responsive HTML copy button; the clipboard gets the snippet; the v1 answer has no new field", async () => {
    await page.goto(`${origin}/user/upload`);
    await page.getByLabel("Choose images, or drop them here").setInputFiles([{ name: `big "photo" <1>.jpg`, mimeType: "image/jpeg", buffer: await photo() }]);
    const item = page.locator(".upload.done").first();
    await item.waitFor();
    const button = item.getByRole("button", { name: "Responsive HTML" });
    await button.click();
    await page.locator("#announcer").filter({ hasText: "Copied Responsive HTML" }).waitFor();
    snippet = await page.evaluate(() => navigator.clipboard.readText());
    await page.screenshot({ path: join(ARTIFACTS, "01-upload-result.png"), fullPage: true });

    // the v1 answer, read with an API token the user creates on the tokens page
    await page.goto(`${origin}/user/tokens`);
    await page.getByLabel("Label (optional)").fill("test");
    await page.getByRole("button", { name: "Create token" }).click();
    token = await page.getByTestId("new-token").inputValue();
    const listed = await (await fetch(`${origin}/api/v1/images`, { headers: { authorization: `Bearer ${token}`, accept: "application/json" } })).json();
    stored = (listed as any).data.data[0];
    expect(stored).toMatchObject({ width: 2000, height: 1500, mimetype: "image/jpeg", origin_name: `big "photo" <1>.jpg` });
    expect(Object.keys(stored)).not.toContain("responsive_html");
    expect(Object.keys(stored.links)).not.toContain("responsive_html");
    expect(snippet).toBe(responsiveSnippet(stored, origin));
    expect(snippet).toContain(`alt="big &quot;photo&quot; &lt;1&gt;.jpg"`);
    // the same escaping as the html snippet of the v1 answer
    expect(stored.html).toContain(`alt="big &quot;photo&quot; &lt;1&gt;.jpg"`);
  }, 60_000);

  test("the image grid's Responsive HTML buttons copy the server's snippet of each image (composed by the page's script)", async () => {
    // beside the JPEG: a GIF (no AVIF source), a PNG narrower than the ladder's first step, a name to escape
    const gif = await sharp({ create: { width: 900, height: 600, channels: 3, background: "#468" } })
      .gif()
      .toBuffer();
    const small = await sharp({ create: { width: 120, height: 90, channels: 4, background: "#8a4" } })
      .png()
      .toBuffer();
    for (const [name, type, bytes] of [
      ["anim & 'quoted'.gif", "image/gif", gif],
      ["tiny <icon>.png", "image/png", small],
    ] as const) {
      const form = new FormData();
      form.append("file", new File([bytes], name, { type }));
      const res = await fetch(`${origin}/api/v1/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, accept: "application/json" },
        body: form,
      });
      expect(res.status).toBe(200);
    }
    const listed = (
      (await (await fetch(`${origin}/api/v1/images`, { headers: { authorization: `Bearer ${token}`, accept: "application/json" } })).json()) as any
    ).data.data;
    expect(listed.length).toBe(3);
    await page.goto(`${origin}/user/images`);
    for (const resource of listed) {
      const card = page.locator(".grid .image").filter({ has: page.locator(`a[href="/user/images/${resource.key}"]`) });
      const button = card.getByRole("button", { name: "Responsive HTML" });
      expect(await button.getAttribute("data-copy")).toBeNull(); // not written out in the page
      await button.click();
      await page.locator("#announcer").filter({ hasText: "Copied Responsive HTML" }).waitFor();
      await expect(page.evaluate(() => navigator.clipboard.readText())).resolves.toBe(responsiveSnippet(resource, origin));
      await page.evaluate(() => (document.getElementById("announcer")!.textContent = ""));
    }
    expect(
      responsiveSnippet(
        listed.find((r: any) => r.key === stored.key),
        origin,
      ),
    ).toBe(snippet);
    await page.screenshot({ path: join(ARTIFACTS, "02-image-grid.png"), fullPage: true });
  }, 60_000);

  test("in a 400-px viewport at scale 1, Chromium fetches the 640-px AVIF (or WebP) variant, not the original", async () => {
    expect(snippet).toContain(`sizes="(max-width: 640px) 100vw, 640px"`);
    // sizes = 100vw on a 400-px viewport: a 400-px slot at scale 1; the srcset's widths are 160, 320, 640, 1280,
    // 1920, 2000: the smallest at least 400 × 1 is 640
    const viewport = { width: 400, height: 700 };
    const dpr = 1;
    const widths = [...snippet.matchAll(/ (\d+)w[,"]/g)].map((m) => Number(m[1]));
    const expected = Math.min(...widths.filter((w) => w >= viewport.width * dpr));
    expect(expected).toBe(640);

    const narrow = await site.newContext({ viewport, deviceScaleFactor: dpr });
    const fetched: { url: string; status: number; type: string; body: Promise<Buffer> }[] = [];
    const p = await narrow.newPage();
    p.on("response", (r) => {
      if (r.request().resourceType() === "image") fetched.push({ url: r.url(), status: r.status(), type: r.headers()["content-type"] ?? "", body: r.body() });
    });
    const errors: string[] = [];
    p.on("pageerror", (e) => errors.push(e.message));
    await p.setContent(
      `<!doctype html><html><head><meta name="viewport" content="width=device-width"><style>body{margin:0}img{display:block;max-width:100%;height:auto}</style></head><body>${snippet}<p>The snippet at 400 CSS px.</p></body></html>`,
    );
    await p.waitForFunction(() => {
      const img = document.querySelector("img")!;
      return img.complete && img.naturalWidth > 0;
    });
    const shown = await p.evaluate(() => {
      const img = document.querySelector("img")!;
      // naturalWidth is in CSS px: the 640w candidate in a 400-px slot has a density of 1.6, so 640 / 1.6 = 400
      return { currentSrc: img.currentSrc, naturalWidth: img.naturalWidth, clientWidth: img.clientWidth };
    });
    await p.screenshot({ path: join(ARTIFACTS, "03-snippet-400px.png"), fullPage: true });
    const bodies = await Promise.all(fetched.map((f) => f.body));
    await narrow.close();

    expect(errors).toEqual([]);
    expect(fetched.length).toBe(1);
    const [only] = fetched;
    expect(only!.status).toBe(200);
    expect(only!.type).toMatch(/^image\/(avif|webp)$/);
    const format = only!.type.slice("image/".length);
    expect(only!.url).toBe(`${origin}/i/${stored.pathname.split("/").map(encodeURIComponent).join("/")}?w=${expected}&format=${format}`);
    expect(fetched.map((f) => f.url)).not.toContain(stored.url);
    expect(shown).toEqual({ currentSrc: only!.url, naturalWidth: 400, clientWidth: 400 });
    // the bytes fetched are that format at that width, read by an independent decoder
    const meta = await sharp(bodies[0]!).metadata();
    expect({ format: meta.format === "heif" ? "avif" : meta.format, width: meta.width, height: meta.height }).toEqual({ format, width: 640, height: 480 });
  }, 60_000);

  test("nothing left loopback and no script failed", () => {
    expect(foreign).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
