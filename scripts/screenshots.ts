/**
 * The README's screenshots, made the way the browser tests see the site (test/support/browser-site.ts): the app on
 * a loopback port over a fresh test database, Debian's Chromium through playwright-core, headless, every request
 * that leaves loopback blocked. Writes docs/images/upload.png, images.png and admin.png (each under 150 KB).
 *
 *   bun run docs:screenshots     (needs /usr/bin/chromium: apt-get install chromium)
 */
import { closeSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { CHROMIUM, hasChromium, PASSWORD, startBrowserSite } from "../test/support/browser-site.ts";
import { startTestDatabases, stopTestDatabases, testLog } from "../test/support/harness.ts";

const OUT = join(import.meta.dir, "..", "docs", "images");
const MAX_BYTES = 150 * 1024;
const VIEWPORT = { width: 1100, height: 700 };

/** A landscape-like picture: a sky gradient, a sun and two hills, in the given colours. */
async function picture(width: number, height: number, sky: [string, string], hills: [string, string], format: "png" | "jpeg" | "webp") {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs><linearGradient id="s" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${sky[0]}"/><stop offset="1" stop-color="${sky[1]}"/></linearGradient></defs>
    <rect width="100%" height="100%" fill="url(#s)"/>
    <circle cx="${width * 0.72}" cy="${height * 0.3}" r="${height * 0.12}" fill="#fff6c8" opacity="0.9"/>
    <ellipse cx="${width * 0.25}" cy="${height * 1.05}" rx="${width * 0.55}" ry="${height * 0.45}" fill="${hills[0]}"/>
    <ellipse cx="${width * 0.85}" cy="${height * 1.1}" rx="${width * 0.5}" ry="${height * 0.4}" fill="${hills[1]}"/>
  </svg>`;
  const image = sharp(Buffer.from(svg));
  return format === "png" ? image.png().toBuffer() : format === "jpeg" ? image.jpeg({ quality: 85 }).toBuffer() : image.webp().toBuffer();
}

const PICTURES: { name: string; sky: [string, string]; hills: [string, string]; format: "png" | "jpeg" | "webp"; mimeType: string }[] = [
  { name: "harbour.jpg", sky: ["#5aa9e6", "#cfe8ff"], hills: ["#2f6f4f", "#3f8f5f"], format: "jpeg", mimeType: "image/jpeg" },
  { name: "sunset.png", sky: ["#ff7e5f", "#feb47b"], hills: ["#5b3a29", "#7a4b32"], format: "png", mimeType: "image/png" },
  { name: "dusk.webp", sky: ["#2c3e75", "#b06ab3"], hills: ["#1d2b4a", "#2f3f66"], format: "webp", mimeType: "image/webp" },
  { name: "meadow.jpg", sky: ["#89c4f4", "#e0f3ff"], hills: ["#6aa84f", "#8bc34a"], format: "jpeg", mimeType: "image/jpeg" },
  { name: "desert.png", sky: ["#f6d365", "#fda085"], hills: ["#c2833f", "#d9a15b"], format: "png", mimeType: "image/png" },
  { name: "glacier.webp", sky: ["#a1c4fd", "#c2e9fb"], hills: ["#e8f1f8", "#b8d4e8"], format: "webp", mimeType: "image/webp" },
];

/** Saves a screenshot as a palette PNG, fewer colours until it fits MAX_BYTES. */
async function save(png: Buffer, name: string) {
  for (const colours of [256, 128, 64]) {
    const out = await sharp(png).png({ palette: true, colours, compressionLevel: 9, effort: 10 }).toBuffer();
    if (out.byteLength <= MAX_BYTES) {
      writeFileSync(join(OUT, name), out);
      console.log(`docs/images/${name}: ${(out.byteLength / 1024).toFixed(0)} KB (${colours} colours)`);
      return;
    }
  }
  throw new Error(`${name} does not fit in ${MAX_BYTES / 1024} KB`);
}

if (!hasChromium) {
  console.error(`${CHROMIUM} not found: apt-get install chromium`);
  process.exit(1);
}
mkdirSync(OUT, { recursive: true });
const artifacts = mkdtempSync(join(tmpdir(), "imghost-screenshots-"));
await startTestDatabases();
const site = await startBrowserSite({ artifacts, user: { username: "june", email: "june@example.com", name: "June" } });
try {
  const { origin } = site;
  const [june] = (await site.admin("GET", "/api/admin/users?username=june")).users;
  await site.admin("PATCH", `/api/admin/users/${june.id}`, { role: "admin" });
  const context = await site.newContext({ viewport: VIEWPORT });
  const page = await context.newPage();
  await page.goto(`${origin}/user/login`);
  await page.getByLabel("Username or email").fill("june");
  await page.getByLabel("Password").fill(PASSWORD);
  await Promise.all([page.waitForURL(/\/user\/(dashboard|admin)/), page.getByRole("button", { name: "Sign in" }).click()]);

  // the upload page, with each file's links
  const files = await Promise.all(
    PICTURES.map(async (p) => ({ name: p.name, mimeType: p.mimeType, buffer: await picture(1600, 1000, p.sky, p.hills, p.format) })),
  );
  await page.goto(`${origin}/user/upload`);
  await page.getByLabel("Choose images, or drop them here").setInputFiles(files.slice(0, 2));
  await page.locator(".upload.done").nth(1).waitFor();
  await save(await page.screenshot(), "upload.png");

  // the image grid
  await page.goto(`${origin}/user/upload`);
  await page.getByLabel("Choose images, or drop them here").setInputFiles(files.slice(2));
  await page
    .locator(".upload.done")
    .nth(files.length - 3)
    .waitFor();
  await page.setViewportSize({ width: VIEWPORT.width, height: 1000 });
  await page.goto(`${origin}/user/images`);
  await page
    .locator(".grid .image")
    .nth(files.length - 1)
    .waitFor();
  await page.evaluate(() => Promise.all(Array.from(document.images, (i) => (i.complete ? null : new Promise((r) => (i.onload = i.onerror = r))))));
  await save(await page.screenshot(), "images.png");

  // an admin page: the overview, with a few more accounts
  for (const name of ["ada", "grace", "linus"]) await site.admin("POST", "/api/admin/users", { username: name, email: `${name}@example.com`, name });
  await page.setViewportSize(VIEWPORT);
  await page.goto(`${origin}/user/admin`);
  await save(await page.screenshot(), "admin.png");

  if (site.foreign.length > 0) throw new Error(`requests left loopback: ${site.foreign.join(", ")}`);
  if (site.pageErrors.length > 0) throw new Error(`the pages reported errors: ${site.pageErrors.join("; ")}`);
  for (const name of ["upload.png", "images.png", "admin.png"]) if (statSync(join(OUT, name)).size > MAX_BYTES) throw new Error(`${name} is over 150 KB`);
} finally {
  await site.close();
  await stopTestDatabases();
  rmSync(artifacts, { recursive: true, force: true });
  closeSync(testLog.fd);
  rmSync(testLog.file, { force: true });
}
