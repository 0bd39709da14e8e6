/**
 * The site as the browser tests see it: the app (test harness) served on a loopback port that is also its BASE_URL,
 * one user with a password, and Debian's Chromium through playwright-core with every request that leaves loopback
 * blocked and recorded, and the pages' script errors recorded. Suites skip themselves where /usr/bin/chromium is
 * missing (`apt-get install chromium`; .ci/run installs it).
 */
import { mkdirSync, rmSync, existsSync } from "node:fs";
import type { Browser, BrowserContext } from "playwright-core";
import { ADMIN_TOKEN, createTestContext, type TestContext } from "./harness.ts";
import { guardLostBindings } from "./lost-bindings.ts";

export const CHROMIUM = "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);
/** One step of a browser test (a click, a navigation) on a busy 2-core machine. */
export const STEP_MS = 20_000;
export const PASSWORD = "a long enough password";

const isLoopback = (url: URL) => /^127\.\d+\.\d+\.\d+$/.test(url.hostname) || url.hostname === "localhost" || url.hostname === "[::1]";
const isLocalScheme = (url: string) => /^(data|blob|about):/.test(url);

export interface BrowserSite {
  ctx: TestContext;
  server: ReturnType<typeof Bun.serve>;
  origin: string;
  browser: Browser;
  context: BrowserContext;
  /** Requests that tried to leave loopback. */
  foreign: string[];
  /** Errors the pages' scripts threw, and what they logged as errors. */
  pageErrors: string[];
  admin(method: string, path: string, body?: unknown): Promise<any>;
  /** Another browser context (another window size, another device scale) with the same blocking. */
  newContext(options: Parameters<Browser["newContext"]>[0]): Promise<BrowserContext>;
  close(): Promise<void>;
}

/**
 * Starts the site and the browser. `artifacts`: the screenshot folder, emptied. `user`: made as the README tells an
 * administrator (create, then set a password). `ignoreConsole`: console errors that are a page's expected refusals.
 */
export async function startBrowserSite(options: {
  artifacts: string;
  user: { username: string; email: string; name: string };
  ignoreConsole?: RegExp;
}): Promise<BrowserSite> {
  rmSync(options.artifacts, { recursive: true, force: true });
  mkdirSync(options.artifacts, { recursive: true });
  const ctx = await createTestContext();
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req, srv) => ctx.app.fetch(req, srv) });
  const origin = `http://127.0.0.1:${server.port}`;
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${origin}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as { data: any };
    if (res.status !== 200) throw new Error(`admin ${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
    return json.data;
  };
  // a deployment's BASE_URL is the address it is served on; the local strategy serves its images from there
  ctx.deps.config.baseUrl = origin;
  await admin("PATCH", "/api/admin/strategies/1", { config: { url: `${origin}/i` } });
  await admin("POST", "/api/admin/users", options.user);
  const [user] = (await admin("GET", `/api/admin/users?username=${options.user.username}`)).users;
  await admin("PATCH", `/api/admin/users/${user.id}`, { password: PASSWORD });

  const { chromium } = await import("playwright-core");
  const reportLostBindings = guardLostBindings(chromium);
  const browser = await chromium.launch({
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
  const foreign: string[] = [];
  const pageErrors: string[] = [];
  const newContext = async (contextOptions: Parameters<Browser["newContext"]>[0]) => {
    const c = await browser.newContext({ serviceWorkers: "block", ...contextOptions });
    c.setDefaultTimeout(STEP_MS);
    await c.route("**/*", (route) => {
      const url = new URL(route.request().url());
      if (isLoopback(url) || isLocalScheme(url.href)) return route.continue();
      foreign.push(`${route.request().method()} ${url.href}`);
      return route.abort("blockedbyclient");
    });
    return c;
  };
  const context = await newContext({ viewport: { width: 1280, height: 860 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin });
  context.on("page", (p) => {
    p.on("pageerror", (e) => pageErrors.push(`${p.url()}: ${e.message}`));
    p.on("console", (m) => {
      if (m.type() === "error" && !options.ignoreConsole?.test(m.text())) pageErrors.push(`${p.url()}: console: ${m.text()}`);
    });
  });
  return {
    ctx,
    server,
    origin,
    browser,
    context,
    foreign,
    pageErrors,
    admin,
    newContext,
    async close() {
      await browser.close().catch(() => {});
      reportLostBindings(options.artifacts);
      await server.stop(true);
      await ctx.close();
    },
  };
}
