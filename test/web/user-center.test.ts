/**
 * The user center's routes, in-process: sessions (sign-in, throttling, expiry, sign-out, password changes), the
 * cross-site checks of every form, the gates shared with the API, and what each page does through the API's services
 * (tokens shown once and working on the API, deletion, registration). The browser's side is test/browser/user-center.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { main } from "../../src/cli/index.ts";
import { sessions, tokens, users } from "../../src/db/schema.ts";
import { SESSION_IDLE_MS, SESSION_MAX_MS } from "../../src/services/sessions.ts";
import { sha256Hex } from "../../src/services/secrets.ts";
import { formatBytes as humanBytes } from "../../src/web/components/index.ts";
import { ADMIN_TOKEN, BASE_URL, createTestContext, type TestContext } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";
import { visitorClass } from "../support/visitor.ts";
import { servicesOf } from "../../src/services/index.ts";

let ctx: TestContext;
let png: Uint8Array;

beforeAll(async () => {
  ctx = await createTestContext();
  png = await makeImage("png", 32, 24);
});
afterAll(() => ctx?.close());

const PASSWORD = "correct horse battery";
let seq = 0;
let addressSeq = 0;
/** Each visitor its own address (X-Forwarded-For; the harness trusts one proxy), so throttles of one test do not reach another. */
const nextAddress = () => `198.51.100.${++addressSeq}`;

/** A user with a password (and a permanent token, from the harness). */
async function userWithPassword(overrides: Record<string, unknown> = {}) {
  const username = `web${++seq}_${Math.random().toString(36).slice(2, 6)}`;
  const user = await ctx.createUser({ username, email: `${username}@example.com`, password: PASSWORD, ...overrides });
  return { ...user, username, email: `${username}@example.com` };
}

/** A browser, in-process (test/support/visitor.ts), on this file's app. */
const Visitor = visitorClass(() => ctx, nextAddress);

async function signedIn(user?: Awaited<ReturnType<typeof userWithPassword>>) {
  const u = user ?? (await userWithPassword());
  const visitor = new Visitor();
  const res = await visitor.signIn(u.username);
  expect(res.status, await res.clone().text()).toBe(303);
  return { user: u, visitor };
}

const location = (res: Response) => res.headers.get("location");
const text = (res: Response) => res.text();
const profileWith = (token: string) => ctx.json("/api/v1/profile", { headers: ctx.bearer(token) });
const uploadPng = (token: string, filename = "a.png") => ctx.upload(token, { bytes: png, filename, contentType: "image/png" });
const newTokenIn = (html: string) => /id="new-token"[^>]*value="([^"]+)"/.exec(html)?.[1];

describe("/ for a browser and for an API client", () => {
  test("Accept: text/html goes to the user center; other clients get today's JSON", async () => {
    const browser = await ctx.request("/", { headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" }, redirect: "manual" });
    expect(browser.status).toBe(303);
    expect(location(browser)).toBe("/user/dashboard");
    expect(browser.headers.get("vary")).toContain("Accept");
    for (const accept of [undefined, "*/*", "application/json"]) {
      const res = await ctx.json("/", { headers: accept ? { accept } : {} });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        status: true,
        message: "success",
        data: { name: "Image Hosting API", api: `${BASE_URL}/api/v1`, docs: `${BASE_URL}/docs`, openapi: `${BASE_URL}/api/v1/openapi.json` },
      });
    }
  });

  test("/user and /user/ lead to the dashboard; an unknown page is an HTML 404", async () => {
    for (const path of ["/user", "/user/"]) expect(location(await new Visitor().get(path))).toBe("/user/dashboard");
    const missing = await new Visitor().get("/user/no-such-page");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toContain("text/html");
    expect(await text(missing)).toContain("There is no such page.");
  });

  test("a signed-out visitor of any page is sent to the sign-in page, and back after signing in", async () => {
    const user = await userWithPassword();
    const visitor = new Visitor();
    const res = await visitor.get("/user/images?per_page=12");
    expect(res.status).toBe(303);
    expect(location(res)).toBe("/user/login?next=%2Fuser%2Fimages%3Fper_page%3D12");
    const page = await visitor.get(location(res)!);
    expect(await text(page)).toContain('name="next" value="/user/images?per_page=12"');
    const signIn = await visitor.post("/user/login", { login: user.username, password: PASSWORD, next: "/user/images?per_page=12" });
    expect(location(signIn)).toBe("/user/images?per_page=12");
    // never to another site
    for (const next of ["https://evil.example/", "//evil.example/", "/\\evil.example", "/api/v1/profile"]) {
      const again = await new Visitor().post("/user/login", { login: user.username, password: PASSWORD, next });
      expect(location(again)).toBe("/user/dashboard");
    }
  });

  test("the pages are HTML with a strict Content-Security-Policy, their scripts and stylesheet are served by the server", async () => {
    const { visitor } = await signedIn();
    const res = await visitor.get("/user/dashboard");
    expect(res.headers.get("content-type")).toContain("text/html");
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    const html = await text(res);
    const assets = [...html.matchAll(/(?:href|src)="(\/user\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBe(2);
    for (const path of [...assets, "/user/assets/upload.en.js", "/user/assets/upload.zh-CN.js"]) {
      const asset = await ctx.request(path);
      expect(asset.status).toBe(200);
      expect(asset.headers.get("cache-control")).toBe("public, max-age=86400");
      expect((await asset.text()).length).toBeGreaterThan(100);
    }
    // the upload page's script carries its words in the page's language
    const uploadPage = await text(await visitor.get("/user/upload"));
    const script = /src="(\/user\/assets\/upload\.en\.js\?v=[0-9a-f]{12})"/.exec(uploadPage)![1]!;
    expect(await (await ctx.request(script)).text()).toContain('"uploaded":"Uploaded."');
    expect(await (await ctx.request("/user/assets/upload.zh-CN.js")).text()).toMatch(/"uploaded":"[^"]*[\u4e00-\u9fff]/);
    // nothing from another host: no CDN, no web fonts
    expect(html).not.toMatch(/(src|href)="https?:\/\//);
  });
});

describe("sign-in", () => {
  test("by username or email (any case) sets an HttpOnly, SameSite=Lax session cookie scoped to /user; only its hash is stored", async () => {
    const user = await userWithPassword();
    for (const login of [user.username, user.email.toUpperCase()]) {
      const visitor = new Visitor();
      const res = await visitor.post("/user/login", { login, password: PASSWORD });
      expect(res.status).toBe(303);
      expect(location(res)).toBe("/user/dashboard");
      const cookie = visitor.lastSetCookie!;
      expect(cookie).toMatch(/^ih_session=[\w-]{43};/);
      expect(cookie).toContain("HttpOnly");
      expect(cookie).toContain("SameSite=Lax");
      expect(cookie).toContain("Path=/user");
      expect(cookie).not.toContain("Secure"); // BASE_URL is http here
      const secret = visitor.cookie!.split("=")[1]!;
      const stored = await ctx.db.select().from(sessions).where(eq(sessions.userId, user.id));
      expect(stored.some((s) => s.secretHash === sha256Hex(secret))).toBe(true);
      expect(JSON.stringify(stored)).not.toContain(secret);
    }
  });

  test("the cookie is Secure when BASE_URL is https", async () => {
    const user = await userWithPassword();
    const saved = ctx.deps.config.baseUrl;
    ctx.deps.config.baseUrl = "https://img.test";
    try {
      const visitor = new Visitor();
      const res = await visitor.post("/user/login", { login: user.username, password: PASSWORD }, { origin: "https://img.test" });
      expect(res.status).toBe(303);
      expect(visitor.lastSetCookie).toContain("Secure");
    } finally {
      ctx.deps.config.baseUrl = saved;
    }
  });

  test("the dashboard shows the figures of GET /api/v1/profile, which now points at it", async () => {
    const { user, visitor } = await signedIn();
    expectStatus(await uploadPng(user.token), 200);
    await ctx.admin("POST", `/api/admin/users/${user.id}/albums`, { name: "Trips" });
    const profile = expectStatus(await profileWith(user.token), 200).data;
    expect(profile.url).toBe(`${BASE_URL}/user/dashboard`);
    const html = await text(await visitor.get("/user/dashboard"));
    expect(html).toContain(`<dd data-testid="image-num">${profile.image_num}</dd>`);
    expect(html).toContain(`<dd data-testid="album-num">${profile.album_num}</dd>`);
    expect(html).toContain('<strong data-testid="capacity">1 GB</strong>'); // 1048576 KB
    expect(profile.capacity).toBe(1048576);
    const usedKb = profile.size as number;
    expect(html).toContain(`<strong data-testid="used">${humanBytes(usedKb * 1024)}</strong>`);
    expect(usedKb).toBeGreaterThan(0);
    expect(html).toContain(`value="${usedKb * 1024}"`); // the meter, in bytes
    expect(html).toContain(user.email);
  });

  test("a wrong password, an unknown account and an account without a password get the same refusal and no session", async () => {
    const user = await userWithPassword();
    const passwordless = await ctx.createUser();
    const answers: string[] = [];
    for (const [login, password] of [
      [user.username, "wrong password"],
      ["nobody-at-all", PASSWORD],
      [passwordless.username, PASSWORD],
    ] as const) {
      const visitor = new Visitor();
      const res = await visitor.post("/user/login", { login, password });
      expect(res.status).toBe(401);
      expect(visitor.cookie).toBeUndefined();
      const html = await text(res);
      answers.push(/<p class="notice error"[^>]*>([^<]+)</.exec(html)![1]!);
      expect(html).toContain(`value="${login}"`); // the login is kept, never the password
      expect(html).not.toContain(password);
    }
    expect(new Set(answers)).toEqual(new Set(["Wrong username, email or password."]));
    expect((await new Visitor().post("/user/login", { login: "", password: "" })).status).toBe(422);
  });

  test("a disabled account, a disabled group, a group without API access and the API switch refuse sign-in (403) after the password", async () => {
    const user = await userWithPassword();
    const signIn = async (password = PASSWORD) => {
      const visitor = new Visitor();
      const res = await visitor.post("/user/login", { login: user.username, password });
      return { status: res.status, html: await text(res), cookie: visitor.cookie };
    };
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { enabled: false });
    let answer = await signIn();
    expect(answer.status).toBe(403);
    expect(answer.html).toContain("Your account is disabled.");
    expect(answer.cookie).toBeUndefined();
    // a wrong password learns nothing about the account's state
    expect((await signIn("wrong password")).html).toContain("Wrong username, email or password.");
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { enabled: true });

    const group = await ctx.admin("POST", "/api/admin/groups", { name: `closed ${seq}`, allow_api: false, strategy_ids: [1] });
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { group_id: group.id });
    answer = await signIn();
    expect(answer.status).toBe(403);
    expect(answer.html).toContain("Your user group is not allowed to use the API.");
    await ctx.admin("PATCH", `/api/admin/groups/${group.id}`, { allow_api: true, enabled: false });
    expect((await signIn()).html).toContain("Your user group is disabled.");
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { group_id: ctx.defaultGroupId });

    await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: false });
    try {
      answer = await signIn();
      expect(answer.status).toBe(403);
      expect(answer.html).toContain("The API is disabled on this site.");
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: true });
    }
    expect((await signIn()).status).toBe(303);
  });

  test("disabling a signed-in account (or its group) ends its sessions: enabling it again does not revive them", async () => {
    // the account
    const { user, visitor } = await signedIn();
    expect((await visitor.get("/user/images")).status).toBe(200);
    const oldCookie = visitor.cookie;
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { enabled: false });
    expect(await ctx.db.select().from(sessions).where(eq(sessions.userId, user.id))).toEqual([]);
    const before = await ctx.db.select().from(tokens).where(eq(tokens.userId, user.id));
    for (const path of ["/user/dashboard", "/user/images", "/user/upload", "/user/tokens"]) {
      const res = await visitor.get(path);
      expect(res.status).toBe(303);
      expect(location(res)).toStartWith("/user/login");
    }
    // no form works either: no token made
    expect((await visitor.post("/user/tokens", { label: "x" })).status).toBe(303);
    expect(await ctx.db.select().from(tokens).where(eq(tokens.userId, user.id))).toEqual(before);
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { enabled: true });
    visitor.cookie = oldCookie;
    const revived = await visitor.get("/user/dashboard");
    expect(revived.status).toBe(303);
    expect(location(revived)).toStartWith("/user/login");

    // its group: every account of the group is signed out, and stays so when the group is enabled again
    const group = await ctx.admin("POST", "/api/admin/groups", { name: `g${++seq}` });
    const member = await userWithPassword({ group_id: group.id });
    const outsider = await signedIn();
    const { visitor: memberVisitor } = await signedIn(member);
    const memberCookie = memberVisitor.cookie;
    expect((await memberVisitor.get("/user/dashboard")).status).toBe(200);
    await ctx.admin("PATCH", `/api/admin/groups/${group.id}`, { enabled: false });
    await ctx.admin("PATCH", `/api/admin/groups/${group.id}`, { enabled: true });
    memberVisitor.cookie = memberCookie;
    expect((await memberVisitor.get("/user/dashboard")).status).toBe(303);
    expect(await ctx.db.select().from(sessions).where(eq(sessions.userId, member.id))).toEqual([]);
    expect((await outsider.visitor.get("/user/dashboard")).status).toBe(200); // another group's account is untouched
    // losing API access is refused as disabling is
    const { visitor: again } = await signedIn(member);
    await ctx.admin("PATCH", `/api/admin/groups/${group.id}`, { allow_api: false });
    await ctx.admin("PATCH", `/api/admin/groups/${group.id}`, { allow_api: true });
    expect((await again.get("/user/dashboard")).status).toBe(303);
  });
});

describe("throttling failed sign-ins", () => {
  test("per address: after the burst, 429 with Retry-After even with the right password; another address is not slowed", async () => {
    const throttled = await createTestContext({ authFailures: { burst: 3, perMinute: 1 } });
    try {
      await throttled.admin("POST", "/api/admin/users", { username: "tina", email: "tina@example.com", password: PASSWORD });
      const post = (login: string, password: string, address: string) =>
        throttled.request("/user/login", {
          method: "POST",
          headers: { origin: BASE_URL, "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": address },
          body: new URLSearchParams({ login, password }).toString(),
          redirect: "manual",
        });
      for (let i = 0; i < 3; i++) expect((await post("tina", `wrong ${i}`, "203.0.113.9")).status).toBe(401);
      const refused = await post("tina", PASSWORD, "203.0.113.9");
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(await refused.text()).toContain("Too many failed sign-ins from your address");
      expect(refused.headers.get("set-cookie")).toBeNull();
      // the address's budget is the API's too: its tokens are refused before they are looked at
      expect((await throttled.json("/api/v1/profile", { headers: { authorization: "Bearer wrong", "x-forwarded-for": "203.0.113.9" } })).status).toBe(429);
      expect((await post("tina", PASSWORD, "203.0.113.10")).status).toBe(303);
    } finally {
      await throttled.close();
    }
  });

  test("per login: failures from many addresses refuse that login (429) whatever the address; other accounts sign in", async () => {
    const user = await userWithPassword();
    const other = await userWithPassword();
    for (let i = 0; i < 10; i++) expect((await new Visitor().post("/user/login", { login: user.username, password: `guess ${i}` })).status).toBe(401);
    // the same login in another case is the same key
    const refused = await new Visitor().post("/user/login", { login: user.username.toUpperCase(), password: PASSWORD });
    expect(refused.status).toBe(429);
    expect(await refused.clone().text()).toContain("Too many failed sign-ins with this username or email");
    const retry = Number(refused.headers.get("retry-after"));
    expect(retry > 0 && retry <= 30).toBe(true); // one failure earned back every 30 s
    expect((await new Visitor().post("/user/login", { login: other.username, password: PASSWORD })).status).toBe(303);
  });

  test("a throttled username does not reveal its email: the email answers as an unknown email does", async () => {
    const user = await userWithPassword();
    for (let i = 0; i < 10; i++) expect((await new Visitor().post("/user/login", { login: user.username, password: `guess ${i}` })).status).toBe(401);
    expect((await new Visitor().post("/user/login", { login: user.username, password: "guess 10" })).status).toBe(429);
    // the account's email and a stranger's email get the same answer to a wrong password: 401, not 429
    const byEmail = await new Visitor().post("/user/login", { login: user.email, password: "wrong" });
    const stranger = await new Visitor().post("/user/login", { login: `nobody${seq}@example.com`, password: "wrong" });
    expect([byEmail.status, stranger.status]).toEqual([401, 401]);
    expect((await byEmail.text()).replace(user.email, "X")).toBe((await stranger.text()).replace(`nobody${seq}@example.com`, "X"));
    // and an unknown login is throttled exactly as a known one: 10 failures, then 429
    const unknown = `ghost${seq}@example.com`;
    for (let i = 0; i < 10; i++) expect((await new Visitor().post("/user/login", { login: unknown, password: `guess ${i}` })).status).toBe(401);
    const ghostRefused = await new Visitor().post("/user/login", { login: unknown, password: "guess" });
    expect(ghostRefused.status).toBe(429);
  });

  test("successful sign-ins are never throttled", async () => {
    const user = await userWithPassword();
    const visitor = new Visitor();
    for (let i = 0; i < 15; i++) expect((await visitor.post("/user/login", { login: user.username, password: PASSWORD })).status).toBe(303);
  });
});

describe("sessions", () => {
  test("a session ends after a week without use; use moves the end on, never beyond 30 days after sign-in", async () => {
    const { user, visitor } = await signedIn();
    const day = 86_400_000;
    // used every six days: alive until the absolute end
    let elapsed = 0;
    try {
      while (elapsed + 6 * day < SESSION_MAX_MS) {
        ctx.advance(6 * day);
        elapsed += 6 * day;
        expect((await visitor.get("/user/dashboard")).status).toBe(200);
      }
      ctx.advance(SESSION_MAX_MS - elapsed + 1000);
      elapsed = SESSION_MAX_MS + 1000;
      const ended = await visitor.get("/user/dashboard");
      expect(ended.status).toBe(303);
      expect(location(ended)).toStartWith("/user/login");
      expect(visitor.cookie).toBeUndefined(); // the dead cookie is cleared

      // idle for more than a week
      const again = await signedIn(user);
      ctx.advance(SESSION_IDLE_MS - day);
      elapsed += SESSION_IDLE_MS - day;
      expect((await again.visitor.get("/user/images")).status).toBe(200);
      ctx.advance(SESSION_IDLE_MS + 1000);
      elapsed += SESSION_IDLE_MS + 1000;
      expect((await again.visitor.get("/user/images")).status).toBe(303);
    } finally {
      ctx.advance(-elapsed);
    }
  });

  test("signing out ends the session on the server: the old cookie is refused, and the page's upload token with it", async () => {
    const { user, visitor } = await signedIn();
    const issued = await visitor.post(
      "/user/upload/token",
      {},
      { headers: { accept: "application/json", "x-csrf-token": visitor.formToken! }, formToken: null },
    );
    expect(issued.status).toBe(200);
    const body = (await issued.json()) as { data: { token: string } };
    expectStatus(await uploadPng(body.data.token), 200);
    const oldCookie = visitor.cookie!;
    const out = await visitor.post("/user/logout");
    expect(out.status).toBe(303);
    expect(visitor.lastSetCookie).toMatch(/ih_session=;.*Max-Age=0/);
    expectStatus(await uploadPng(body.data.token), 401);
    const replay = await ctx.request("/user/dashboard", { headers: { cookie: oldCookie }, redirect: "manual" });
    expect(replay.status).toBe(303);
    expect(await ctx.db.select().from(sessions).where(eq(sessions.userId, user.id))).toEqual([]);
    // the account's API token is untouched
    expectStatus(await profileWith(user.token), 200);
  });

  test("a forged or unknown session cookie is no session", async () => {
    for (const cookie of ["ih_session=x", `ih_session=${"A".repeat(43)}`, "ih_session=' or 1=1 --"]) {
      const res = await ctx.request("/user/tokens", { headers: { cookie }, redirect: "manual" });
      expect(res.status).toBe(303);
    }
  });

  test("a new password from the administrator ends the account's sessions; the new one signs in, the old one not", async () => {
    const { user, visitor } = await signedIn();
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { password: "a brand new secret" });
    expect((await visitor.get("/user/dashboard")).status).toBe(303);
    expect((await new Visitor().signIn(user.username, PASSWORD)).status).toBe(401);
    expect((await new Visitor().signIn(user.username, "a brand new secret")).status).toBe(303);
    // null removes the password: no sign-in at all
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { password: null });
    expect((await new Visitor().signIn(user.username, "a brand new secret")).status).toBe(401);
    const [row] = await ctx.db.select().from(users).where(eq(users.id, user.id));
    expect(row!.passwordHash).toBeNull();
  });
});

describe("cross-site requests", () => {
  test("a form post from another site, or without the session's form token, is refused and changes nothing", async () => {
    const { user, visitor } = await signedIn();
    const uploaded = expectStatus(await uploadPng(user.token), 200).data;
    const count = async () => (await ctx.db.select().from(tokens).where(eq(tokens.userId, user.id))).length;
    const before = await count();
    const attempts: Response[] = [
      await visitor.post("/user/tokens", { label: "evil" }, { origin: "https://evil.example" }),
      await visitor.post("/user/tokens", { label: "evil" }, { origin: "null" }),
      await visitor.post("/user/tokens", { label: "evil" }, { origin: null }), // no Origin, no Sec-Fetch-Site
      await visitor.post("/user/tokens", { label: "evil" }, { origin: null, headers: { "sec-fetch-site": "cross-site" } }),
      await visitor.post("/user/tokens", { label: "evil" }, { formToken: null }),
      await visitor.post("/user/tokens", { label: "evil" }, { formToken: "A".repeat(43) }),
      await visitor.post("/user/tokens/temporary", { num: "1", seconds: "60" }, { origin: "https://evil.example" }),
      await visitor.post(`/user/images/${uploaded.key}/delete`, { confirmed: "1" }, { origin: "https://evil.example" }),
      await visitor.post(`/user/images/${uploaded.key}/delete`, { confirmed: "1" }, { formToken: null }),
      await visitor.post("/user/upload/token", {}, { origin: "https://evil.example", headers: { accept: "application/json" } }),
      await visitor.post("/user/logout", {}, { origin: "https://evil.example" }),
    ];
    for (const res of attempts) {
      expect(res.status).toBe(403);
      expect(await res.text()).toMatch(/another site, or it has expired/);
    }
    expect(await count()).toBe(before);
    expectStatus(await ctx.json(`/api/v1/images?per_page=1`, { headers: ctx.bearer(user.token) }), 200);
    expect((await visitor.get("/user/dashboard")).status).toBe(200); // still signed in
    // another session's form token does not fit this session
    const other = await signedIn();
    expect((await visitor.post("/user/tokens", { label: "x" }, { formToken: other.visitor.formToken })).status).toBe(403);
    // the same form from this site, and Sec-Fetch-Site: same-origin without Origin, are accepted
    expect((await visitor.post("/user/tokens", { label: "mine" })).status).toBe(200);
    expect((await visitor.post("/user/tokens", { label: "mine" }, { origin: null, headers: { "sec-fetch-site": "same-origin" } })).status).toBe(200);
  });

  test("sign-in and sign-up from another site are refused", async () => {
    const user = await userWithPassword();
    const res = await new Visitor().post("/user/login", { login: user.username, password: PASSWORD }, { origin: "https://evil.example" });
    expect(res.status).toBe(403);
    expect(res.headers.get("set-cookie")).toBeNull();
    await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
    try {
      const signUp = await new Visitor().post(
        "/user/register",
        { username: "mallory", email: "m@example.com", password: PASSWORD },
        { origin: "https://evil.example" },
      );
      expect(signUp.status).toBe(403);
      expect(await ctx.db.select().from(users).where(eq(users.username, "mallory"))).toEqual([]);
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: false });
    }
  });
});

describe("API tokens page", () => {
  test("a token created on the page works on the API, is shown once and never again; revoking it makes it 401", async () => {
    const { user, visitor } = await signedIn();
    await visitor.get("/user/tokens");
    const created = await visitor.post("/user/tokens", { label: "my laptop uploader" });
    expect(created.status).toBe(200);
    expect(created.headers.get("cache-control")).toBe("no-store");
    const html = await text(created);
    const token = newTokenIn(html)!;
    expect(token).toMatch(/^\d+\|[\w-]{40}$/);
    expect(html).toContain("shown only this once");
    const profile = expectStatus(await profileWith(token), 200).data;
    expect(profile.username).toBe(user.username);
    expectStatus(await profileWith(token.split("|")[1]!), 200); // the raw part alone, as the API accepts

    const listed = await text(await visitor.get("/user/tokens"));
    expect(listed).toContain("my laptop uploader");
    expect(listed).not.toContain(token.split("|")[1]!);
    expect(listed).not.toContain(sha256Hex(token.split("|")[1]!));
    expect(listed).not.toContain('id="new-token"');

    // last used: written off the request's path, at most once a minute
    const id = Number(token.split("|")[0]);
    const lastUsed = async () => (await ctx.db.select({ at: tokens.lastUsedAt }).from(tokens).where(eq(tokens.id, id)))[0]!.at;
    for (let i = 0; i < 50 && !(await lastUsed()); i++) await Bun.sleep(20);
    const first = await lastUsed();
    expect(first).not.toBeNull();
    expect(await text(await visitor.get("/user/tokens"))).toMatch(
      /my laptop uploader <span class="muted">#\d+<\/span><\/td><td data-label="Kind">permanent<\/td>.*?data-label="Last used"><time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/time><\/td>/,
    );
    expectStatus(await profileWith(token), 200);
    await Bun.sleep(50);
    expect((await lastUsed())!.getTime()).toBe(first!.getTime()); // within the minute: not written again

    const revoked = await visitor.post(`/user/tokens/${id}/revoke`, { confirmed: "1" });
    expect(revoked.status).toBe(303);
    expect(location(revoked)).toBe("/user/tokens?revoked");
    expectStatus(await profileWith(token), 401);
    expect(await text(await visitor.get("/user/tokens"))).not.toContain("my laptop uploader");
  });

  test("another account's token cannot be revoked from the page (404), and stays valid", async () => {
    const { visitor } = await signedIn();
    const other = await userWithPassword();
    const otherId = Number(other.token.split("|")[0]);
    const res = await visitor.post(`/user/tokens/${otherId}/revoke`, { confirmed: "1" });
    expect(res.status).toBe(404);
    expect((await visitor.post(`/user/tokens/${otherId}/revoke`)).status).toBe(404); // nor its confirmation page
    for (const id of ["0", "abc", "99999999999"]) expect((await visitor.post(`/user/tokens/${id}/revoke`, { confirmed: "1" })).status).toBe(404);
    expectStatus(await profileWith(other.token), 200);
  });

  test("a label is optional and bounded; a token without one is listed as such", async () => {
    const { visitor } = await signedIn();
    await visitor.get("/user/tokens");
    const plain = await visitor.post("/user/tokens", {});
    expect(newTokenIn(await text(plain))).toBeDefined();
    const id = Number(/action="\/user\/tokens\/(\d+)\/revoke"/.exec(await text(await visitor.get("/user/tokens")))![1]);
    expect(await text(await visitor.get("/user/tokens"))).toMatch(
      new RegExp(`Token #${id}, created <time datetime="[^"]+">\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC</time>`),
    );
    const long = await visitor.post("/user/tokens", { label: "x".repeat(101) });
    expect(long.status).toBe(422);
    expect(newTokenIn(await text(long))).toBeUndefined();
  });

  test("a batch of temporary upload tokens, shown once: they upload, and cannot read the profile", async () => {
    const { visitor } = await signedIn();
    await visitor.get("/user/tokens");
    const res = await visitor.post("/user/tokens/temporary", { num: "2", seconds: "120" });
    expect(res.status).toBe(200);
    const html = await text(res);
    const issued = [...html.matchAll(/<code>([\w-]{40})<\/code>/g)].map((m) => m[1]!);
    expect(issued.length).toBe(2);
    expectStatus(await uploadPng(issued[0]!), 200);
    expectStatus(await profileWith(issued[1]!), 403);
    expect(await text(await visitor.get("/user/tokens"))).not.toContain(issued[0]!);
    // the API's bounds
    for (const [num, seconds] of [
      ["0", "60"],
      ["101", "60"],
      ["1", "0"],
      ["1", "2626561"],
      ["x", "60"],
    ]) {
      expect((await visitor.post("/user/tokens/temporary", { num: num!, seconds: seconds! })).status).toBe(422);
    }
  });

  test("temporary token lifetimes are presets (an hour, a day, 30 days) or a custom amount, sent as the API's seconds", async () => {
    const { user, visitor } = await signedIn();
    const page = await text(await visitor.get("/user/tokens"));
    expect(page).not.toContain("2626560");
    expect(page).toContain(">1 live token<"); // the account's own, counted plural-aware
    for (const [value, words] of [
      ["3600", "1 hour"],
      ["86400", "1 day"],
      ["2592000", "30 days"],
    ]) {
      expect(page).toContain(`<option value="${value}"${value === "3600" ? ' selected=""' : ""}>${words}</option>`);
    }
    const lifetimes = async () => {
      const rows = await ctx.db.select().from(tokens).where(eq(tokens.userId, user.id));
      return rows
        .filter((r) => r.kind === "temporary")
        .map((r) => Math.round((r.expiredAt!.getTime() - r.createdAt.getTime()) / 1000))
        .sort((a, b) => a - b);
    };
    const issue = (fields: Record<string, string>) => visitor.post("/user/tokens/temporary", { num: "1", ...fields });
    expect((await issue({ seconds_preset: "86400", seconds_custom: "", seconds_unit: "minutes" })).status).toBe(200);
    expect((await issue({ seconds_preset: "custom", seconds_custom: "90", seconds_unit: "minutes" })).status).toBe(200);
    const custom = await issue({ seconds_preset: "custom", seconds_custom: "2", seconds_unit: "days" });
    expect(custom.status).toBe(200);
    expect(await text(custom)).toContain('<option value="days" selected="">days</option>'); // the choice is kept
    const lived = await lifetimes();
    expect(lived.length).toBe(3);
    for (const [i, seconds] of [5400, 86_400, 172_800].entries()) expect(Math.abs(lived[i]! - seconds)).toBeLessThanOrEqual(1);
    // beyond the API's bound, or not a number: the form's 422, nothing issued
    for (const fields of [
      { seconds_preset: "custom", seconds_custom: "31", seconds_unit: "days" },
      { seconds_preset: "custom", seconds_custom: "soon", seconds_unit: "hours" },
      { seconds_preset: "custom", seconds_custom: "", seconds_unit: "hours" },
    ]) {
      const refused = await issue(fields);
      expect(refused.status).toBe(422);
      const html = await text(refused);
      expect(html).toContain('id="seconds-error"');
      expect(html).toContain("Choose a lifetime from one second to about 30 days.");
    }
    expect((await lifetimes()).length).toBe(3);
    expect(await text(await visitor.get("/user/tokens"))).toContain(">4 live tokens<");
  });
});

describe("images page", () => {
  test("newest first, the API's pagination, the API's snippets on the copy buttons", async () => {
    const { user, visitor } = await signedIn();
    for (const name of ["one.png", "two.png", "three.png"]) {
      expectStatus(await uploadPng(user.token, name), 200);
      ctx.advance(1000);
    }
    const api = expectStatus(await ctx.json("/api/v1/images?per_page=2&page=1", { headers: ctx.bearer(user.token) }), 200).data;
    const html = await text(await visitor.get("/user/images?per_page=2"));
    const names = [...html.matchAll(/<p class="filename"[^>]*>([^<]+)</g)].map((m) => m[1]);
    expect(names).toEqual(["three.png", "two.png"]);
    expect(html).toContain("Page 1 of 2");
    expect(html).toContain('href="/user/images?page=2&amp;per_page=2"');
    const first = api.data[0];
    for (const field of ["url", "html", "bbcode", "markdown", "markdown_with_link"]) {
      const escaped = Bun.escapeHTML(first[field]);
      expect(html).toContain(`data-copy="${escaped}"`);
    }
    expect(html).toContain(`src="${first.thumbnail_url}"`);
    const page2 = await text(await visitor.get("/user/images?per_page=2&page=2"));
    expect([...page2.matchAll(/<p class="filename"[^>]*>([^<]+)</g)].map((m) => m[1])).toEqual(["one.png"]);
    // out-of-range parameters fall back to the API's defaults
    expect((await visitor.get("/user/images?per_page=0&page=-1")).status).toBe(200);
  });

  test("delete: unconfirmed asks first, confirmed deletes as the API does; another account's image is 404", async () => {
    const { user, visitor } = await signedIn();
    const image = expectStatus(await uploadPng(user.token, "doomed.png"), 200).data;
    await visitor.get("/user/images");
    const ask = await visitor.post(`/user/images/${image.key}/delete`, { confirmed: "0", page: "1", per_page: "30" });
    expect(ask.status).toBe(200);
    expect(await text(ask)).toContain("Delete <strong>doomed.png</strong>?");
    expectStatus(await ctx.json(`/api/v1/images?per_page=1`, { headers: ctx.bearer(user.token) }), 200);
    const done = await visitor.post(`/user/images/${image.key}/delete`, { confirmed: "1", page: "1", per_page: "30" });
    expect(done.status).toBe(303);
    expect(location(done)).toBe("/user/images?page=1&deleted=1");
    expect(await text(await visitor.get(location(done)!))).toContain("Image deleted.");
    const after = expectStatus(await profileWith(user.token), 200).data;
    expect([after.image_num, after.size]).toEqual([0, 0]);
    expect((await ctx.request(image.url.replace(BASE_URL, ""))).status).toBe(404);
    expectStatus(await ctx.json(`/api/v1/images/${image.key}`, { method: "DELETE", headers: ctx.bearer(user.token) }), 404);

    const other = await userWithPassword();
    const theirs = expectStatus(await uploadPng(other.token), 200).data;
    const refused = await visitor.post(`/user/images/${theirs.key}/delete`, { confirmed: "1" });
    expect(refused.status).toBe(404);
    expect(await text(refused)).toContain("Image not found.");
    expect(expectStatus(await profileWith(other.token), 200).data.image_num).toBe(1);
  });
});

describe("upload page", () => {
  test("lists the group's strategies and the account's albums; its token uploads through the API, with the API's refusals", async () => {
    const { user, visitor } = await signedIn();
    await ctx.admin("POST", `/api/admin/users/${user.id}/albums`, { name: "Holidays" });
    const page = await text(await visitor.get("/user/upload"));
    expect(page).toContain('<option value="1">Local</option>');
    expect(page).toMatch(/<option value="\d+">Holidays<\/option>/);
    expect(page).toContain('accept=".jpg,.jpeg,.png,.gif,.webp,.avif"');

    const res = await visitor.post("/user/upload/token", {}, { formToken: null, headers: { accept: "application/json", "x-csrf-token": visitor.formToken! } });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = (await res.json()) as any;
    expect(body.data.expires_in).toBe(900);
    const token = body.data.token as string;
    expectStatus(await profileWith(token), 403); // upload only
    const stored = expectStatus(await ctx.upload(token, { bytes: png, filename: "page.png", contentType: "image/png" }, { permission: "0" }), 200).data;
    expect(stored.is_public).toBe(false);
    const refused = expectStatus(await ctx.upload(token, { bytes: new TextEncoder().encode("<svg/>"), filename: "x.svg" }), 400);
    expect(refused.message).toContain("Unsupported format .svg");
    // not on the tokens page, which lists only the account's own permanent token: the upload token belongs to the page
    const listed = await text(await visitor.get("/user/tokens"));
    expect([...listed.matchAll(/\/revoke"/g)].length).toBe(1);
    expect(listed).toContain(`action="/user/tokens/${user.token.split("|")[0]}/revoke"`);
  });

  test("without a session the token endpoint answers 401 in JSON", async () => {
    const res = await ctx.request("/user/upload/token", { method: "POST", headers: { accept: "application/json", origin: BASE_URL } });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ status: false, data: null });
  });
});

describe("registration", () => {
  test("closed by default: the page does not exist and the sign-in page does not offer it", async () => {
    expect((await new Visitor().get("/user/register")).status).toBe(404);
    expect((await new Visitor().post("/user/register", { username: "eve", email: "eve@example.com", password: PASSWORD })).status).toBe(404);
    expect(await text(await new Visitor().get("/user/login"))).not.toContain("/user/register");
    expect(await ctx.admin("GET", "/api/admin/settings")).toMatchObject({ registration_enabled: false });
  });

  test("when enabled: the account joins the default group, records the address, is signed in; duplicates and bad fields refused", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
    try {
      expect(await text(await new Visitor().get("/user/login"))).toContain('href="/user/register"');
      const visitor = new Visitor("192.0.2.44");
      expect((await visitor.get("/user/register")).status).toBe(200);
      const res = await visitor.post("/user/register", { username: "newbie", email: "Newbie@Example.com", password: PASSWORD });
      expect(res.status).toBe(303);
      expect(location(res)).toBe("/user/dashboard?welcome");
      expect(await text(await visitor.get("/user/dashboard?welcome"))).toContain("Your account is ready");
      const [row] = await ctx.db.select().from(users).where(eq(users.username, "newbie"));
      expect(row).toMatchObject({ email: "newbie@example.com", groupId: ctx.defaultGroupId, registeredIp: "192.0.2.44", enabled: true });
      expect(row!.passwordHash).toStartWith("$argon2id$");

      // the account works like any other: a token from its page, the profile from the API
      await visitor.get("/user/tokens");
      const token = newTokenIn(await text(await visitor.post("/user/tokens", {})))!;
      expect(expectStatus(await profileWith(token), 200).data).toMatchObject({ username: "newbie", registered_ip: "192.0.2.44" });

      for (const [fields, message] of [
        [{ username: "NEWBIE", email: "other@example.com", password: PASSWORD }, "already taken"],
        [{ username: "other", email: "newbie@example.com", password: PASSWORD }, "already taken"],
        [{ username: "a b", email: "ab@example.com", password: PASSWORD }, "letters, digits"],
        [{ username: "shorty", email: "not-an-email", password: PASSWORD }, "valid email"],
        [{ username: "shorty", email: "shorty@example.com", password: "short" }, "at least 8"],
      ] as const) {
        const refused = await new Visitor().post("/user/register", fields);
        expect(refused.status).toBe(422);
        expect(await text(refused)).toContain(message);
      }
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: false });
    }
  });

  test("one address may create a few accounts, then 429", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
    try {
      const address = "192.0.2.99";
      for (let i = 0; i < 5; i++) {
        const res = await new Visitor(address).post("/user/register", { username: `burst${i}`, email: `burst${i}@example.com`, password: PASSWORD });
        expect(res.status).toBe(303);
      }
      const refused = await new Visitor(address).post("/user/register", { username: "burst5", email: "burst5@example.com", password: PASSWORD });
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBeTruthy();
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: false });
    }
  });
});

describe("administration of the user center", () => {
  let server: ReturnType<typeof Bun.serve>;
  let url: string;
  beforeAll(() => {
    server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: ctx.app.fetch });
    url = `http://127.0.0.1:${server.port}`;
  });
  afterAll(() => server.stop(true));

  async function cli(args: string[], stdin?: string) {
    const out: string[] = [];
    const err: string[] = [];
    const prompts: string[] = [];
    const io = {
      out: (s: string) => out.push(s),
      err: (s: string) => err.push(s),
      ...(stdin === undefined ? {} : { readSecret: async (prompt: string) => (prompts.push(prompt), stdin) }),
    };
    const code = await main(args, { BASE_URL: url, ADMIN_TOKEN }, io);
    return { code, stdout: out.join("\n"), stderr: err.join("\n"), prompts };
  }

  test("cli user set-password reads the password from standard input, never from the command line", async () => {
    const user = await ctx.createUser();
    const visitor = new Visitor();
    const r = await cli(["user", "set-password", user.username], "typed at the prompt");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.prompts).toEqual([`New password for ${user.username}: `]);
    expect(r.stdout).toContain(`Password set for ${user.username}`);
    expect((await visitor.signIn(user.username, "typed at the prompt")).status).toBe(303);

    const tooShort = await cli(["user", "set-password", user.username], "short");
    expect(tooShort.code).toBe(1);
    expect(tooShort.stderr).toContain("password");
    expect((await cli(["user", "set-password", user.username], "")).stderr).toContain("no password given");
    // the old password still works: nothing changed
    expect((await new Visitor().signIn(user.username, "typed at the prompt")).status).toBe(303);
    // an extra argument is not taken for the password
    const argv = await cli(["user", "set-password", user.username, "on-the-command-line"], "x");
    expect(argv.code).toBe(1);
    expect(argv.stderr).toContain("usage");
    const create = await cli(["user", "create", "pat", "--email", "pat@example.com", "--password", "on-the-command-line"]);
    expect(create.code).toBe(1);
    expect(create.stderr).toContain("takes no --password");
    expect((await cli(["--help"])).stdout).toContain("user set-password <user>");
  });

  test("cli settings set registration_enabled true opens sign-up", async () => {
    const r = await cli(["settings", "set", "registration_enabled", "true"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^registration_enabled: +true$/m);
    try {
      expect((await new Visitor().get("/user/register")).status).toBe(200);
    } finally {
      expect((await cli(["settings", "set", "registration_enabled", "false"])).code).toBe(0);
    }
    expect((await new Visitor().get("/user/register")).status).toBe(404);
  });

  test("a revoked token is refused at once on this instance after the page revokes it (the lookup cache is cleared)", async () => {
    const { user, visitor } = await signedIn();
    expectStatus(await profileWith(user.token), 200); // cached now
    await visitor.get("/user/tokens");
    const res = await visitor.post(`/user/tokens/${user.token.split("|")[0]}/revoke`, { confirmed: "1" });
    expect(res.status).toBe(303);
    expectStatus(await profileWith(user.token), 401);
    servicesOf(ctx.deps).lookups.clear();
  });
});
