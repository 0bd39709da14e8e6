/**
 * The API reference at /docs in a real browser (Chromium through playwright-core): the page runs the Scalar
 * bundle served by the server itself, renders the operations of the spec, and its own client ("Test Request",
 * then "Send") reaches the server with the token typed into it. Every request to a host other than loopback is
 * blocked and fails the test. Skipped, with the reason printed, where /usr/bin/chromium is missing
 * (`apt-get install chromium`; .ci/run installs it).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { createTestContext, type TestContext, type TestUser } from "../support/harness.ts";

const CHROMIUM = "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`test/browser/docs.test.ts skipped: ${CHROMIUM} not found (apt-get install chromium)`);

const STEP_MS = 20_000;
const isLoopback = (url: URL) => /^127\.\d+\.\d+\.\d+$/.test(url.hostname) || url.hostname === "localhost" || url.hostname === "[::1]";

interface Received {
  method: string;
  path: string;
  search: string;
  authorization: string | null;
}

let ctx: TestContext;
let user: TestUser;
let server: ReturnType<typeof Bun.serve>;
let origin: string;
let browser: Browser | undefined;
let context: BrowserContext;
let page: Page;
const received: Received[] = [];
const browserRequests: string[] = [];
const foreign: string[] = [];

describe.skipIf(!hasChromium)("the docs page in Chromium", () => {
  beforeAll(async () => {
    ctx = await createTestContext();
    user = await ctx.createUser();
    server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (req, srv) => {
        const url = new URL(req.url);
        received.push({ method: req.method, path: url.pathname, search: url.search, authorization: req.headers.get("authorization") });
        return ctx.app.fetch(req, srv);
      },
    });
    origin = `http://127.0.0.1:${server.port}`;
    // The served spec names BASE_URL as its server, and Scalar's client sends there: make it the address served
    // on, as a deployment sets BASE_URL (the harness's http://img.test resolves nowhere). Read lazily, on the
    // first GET /api/v1/openapi.json.
    ctx.deps.config.baseUrl = origin;

    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
      timeout: 60_000,
    });
    context = await browser.newContext({ serviceWorkers: "block" });
    context.setDefaultTimeout(STEP_MS);
    context.on("request", (r) => browserRequests.push(r.url()));
    await context.route("**/*", (route) => {
      const url = new URL(route.request().url());
      if (isLoopback(url)) return route.continue();
      foreign.push(url.href);
      return route.abort("blockedbyclient");
    });
    page = await context.newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close().catch(() => {});
    await server?.stop(true);
    await ctx?.close();
  }, 60_000);

  test("loads its script from the server itself and renders the operations", async () => {
    const response = await page.goto(`${origin}/docs`, { waitUntil: "load" });
    expect(response?.status()).toBe(200);
    await expect(page.title()).resolves.toBe("Image Hosting API");

    const scripts = await page.evaluate(() => Array.from(document.scripts, (s) => s.src).filter(Boolean));
    expect(scripts).toEqual([`${origin}/docs/scalar.js`]);

    // the reference renders the spec it fetched from this server: its title, and every operation once the
    // sidebar's groups are opened
    await page.getByText("Read the account profile", { exact: true }).first().waitFor();
    await expect(page.getByRole("heading", { name: "Image Hosting API" }).first().isVisible()).resolves.toBe(true);
    const sidebar = page.getByRole("complementary", { name: /Sidebar/ });
    for (const group of ["Images", "Tokens", "Strategies"]) {
      const open = page.getByRole("button", { name: `Open Group - ${group}` });
      if (await open.count()) await open.first().click();
    }
    for (const name of ["Upload an image", "List the account's images", "Delete an image", "Issue temporary upload tokens", "List the usable storage strategies"]) {
      await sidebar.getByText(name, { exact: true }).first().waitFor();
    }
    expect(received.some((r) => r.method === "GET" && r.path === "/docs/scalar.js")).toBe(true);
    expect(received.some((r) => r.method === "GET" && r.path === "/api/v1/openapi.json")).toBe(true);
  }, 60_000);

  test("its own client sends an authenticated request to the server", async () => {
    const page = await context.newPage();
    await page.goto(`${origin}/docs#tag/strategies/GET/api/v1/strategies`, { waitUntil: "load" });
    await page.getByRole("button", { name: "Test Request (get /api/v1/strategies)" }).click();
    const client = page.getByRole("dialog");
    await client.waitFor();

    // Authentication is optional here (guests may list when guest upload is on): pick the spec's bearerAuth
    // scheme and type the user's token
    await client.getByRole("button", { name: "Select Auth Type" }).click();
    await page.getByRole("option", { name: /bearerAuth/ }).first().click();
    await client.getByRole("button", { name: /Auth Type/ }).first().click(); // closes the list
    await client.getByPlaceholder("Token").fill(user.token);

    const before = received.length;
    const answered = page.waitForResponse((r) => new URL(r.url()).pathname === "/api/v1/strategies");
    await client.getByRole("button", { name: /^Send/ }).first().click();
    const res = await answered;
    expect(res.status()).toBe(200);
    expect(await res.json()).toEqual({ status: true, message: "success", data: { strategies: [{ id: 1, name: "Local" }] } });

    const sent = received.slice(before).filter((r) => r.path === "/api/v1/strategies");
    expect(sent).toEqual([{ method: "GET", path: "/api/v1/strategies", search: "?q=loc", authorization: `Bearer ${user.token}` }]);
    // and the client shows the answer
    await client.getByText("200 OK").first().waitFor();
  }, 60_000);

  test("requested nothing at all from any other host, not even fonts", () => {
    expect(browserRequests.length).toBeGreaterThan(0);
    expect(foreign).toEqual([]);
    expect(browserRequests.filter((u) => !u.startsWith(`${origin}/`) && !/^(data|blob):/.test(u))).toEqual([]);
  });
});

if (!hasChromium) {
  test.skip(`docs page in Chromium (skipped: ${CHROMIUM} not found)`, () => {});
}
