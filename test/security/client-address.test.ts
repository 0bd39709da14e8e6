/**
 * Every request knows its client address, whatever reads or replaces its body later: one address's failed
 * authentications never throttle another address, on every route family, and the audit log records the real address
 * of the CLI and of the admin pages. A real socket server; each client binds its own 127.x address.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { main } from "../../src/cli/index.ts";
import { ADMIN_TOKEN, BASE_URL, createTestContext, type TestContext, type TestUser } from "../support/harness.ts";
import { makeImage, multipart } from "../support/images.ts";
import { rawRequest } from "../support/raw-http.ts";

setDefaultTimeout(60_000);

const BURST = 3;
let ctx: TestContext;
let server: ReturnType<typeof Bun.serve>;
let owner: TestUser;
const PASSWORD = "correct horse battery";

beforeAll(async () => {
  // the socket's address is the client's (no proxy trusted); failures refill slowly, as in production but smaller
  ctx = await createTestContext({ trustedProxies: 0, authFailures: { burst: BURST, perMinute: 1 } });
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: ctx.app.fetch });
  owner = await ctx.createUser({ password: PASSWORD });
});
afterAll(async () => {
  await server?.stop(true);
  await ctx?.close();
});

const send = (from: string, init: Parameters<typeof rawRequest>[2]) => rawRequest(server.port!, from, init);
const json = (token: string, body: unknown) => ({
  headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json" },
  body: JSON.stringify(body),
});

/** Sends `attempt` from `from` until it is refused with 429; returns how many were answered before. */
async function exhaust(from: string, attempt: () => Promise<{ status: number }>): Promise<number> {
  for (let i = 0; i < BURST + 5; i++) {
    const { status } = await attempt();
    if (status === 429) return i;
    expect([400, 401, 403, 422]).toContain(status);
  }
  throw new Error(`${from} was never throttled`);
}

const latestAudit = async () => (await ctx.admin("GET", "/api/admin/audit-log?limit=1")).entries[0];

describe("one address's failures never throttle another", () => {
  test("JSON bodies: temporary tokens and the admin API", async () => {
    const attacker = "127.0.0.2";
    const n = await exhaust(attacker, () => send(attacker, { method: "POST", path: "/api/v1/images/tokens", ...json("1|wrong", { num: 1, seconds: 60 }) }));
    expect(n).toBe(BURST);
    await exhaust(attacker, () => send(attacker, { method: "POST", path: "/api/admin/users", ...json("not-the-admin-token", { username: "x" }) }));

    const issued = await send("127.0.0.3", { method: "POST", path: "/api/v1/images/tokens", ...json(owner.token, { num: 1, seconds: 60 }) });
    expect(issued.status).toBe(200);
    // a stranger's first failure is a 401 of its own, not the attacker's 429
    const stranger = await send("127.0.0.4", { method: "POST", path: "/api/v1/images/tokens", ...json("1|wrong", { num: 1, seconds: 60 }) });
    expect(stranger.status).toBe(401);

    const username = `addr_${Math.random().toString(36).slice(2, 8)}`;
    const created = await send("127.0.0.3", { method: "POST", path: "/api/admin/users", ...json(ADMIN_TOKEN, { username, email: `${username}@example.com` }) });
    expect(created.status).toBe(200);
    expect(await latestAudit()).toMatchObject({ action: "POST /api/admin/users", actor: "ADMIN_TOKEN", ip: "127.0.0.3" });
  });

  test("uploads", async () => {
    const attacker = "127.0.0.5";
    const bytes = await makeImage("png", 20, 20);
    const body = (token: string) => {
      const m = multipart([{ name: "file", value: bytes, filename: "a.png", contentType: "image/png" }]);
      return {
        method: "POST",
        path: "/api/v1/upload",
        headers: { authorization: `Bearer ${token}`, "content-type": m.contentType, accept: "application/json" },
        body: m.body,
      };
    };
    await exhaust(attacker, () => send(attacker, body("1|wrong")));
    const uploaded = await send("127.0.0.6", body(owner.token));
    expect(uploaded.status).toBe(200);
    expect(JSON.parse(uploaded.body).status).toBe(true);
  });

  test("forms: sign-in", async () => {
    const attacker = "127.0.0.7";
    const form = (password: string) => ({
      method: "POST",
      path: "/user/login",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: BASE_URL, accept: "text/html" },
      body: new URLSearchParams({ login: owner.username, password }).toString(),
    });
    await exhaust(attacker, async () => {
      const res = await send(attacker, form("wrong password"));
      return { status: res.status === 200 ? 401 : res.status }; // the page answers its form again with the error
    });
    const signedIn = await send("127.0.0.8", form(PASSWORD));
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get("set-cookie")).toBeTruthy();
  });

  test("admin pages: the administrator's in-process API calls are theirs, not a throttled address", async () => {
    // every failure an attacker can make on the admin API, from an address of its own
    const attacker = "127.0.0.9";
    await exhaust(attacker, () => send(attacker, { method: "PATCH", path: "/api/admin/settings", ...json("guess", {}) }));

    const adminName = `adm_${Math.random().toString(36).slice(2, 8)}`;
    await ctx.createUser({ username: adminName, email: `${adminName}@example.com`, password: PASSWORD, role: "admin" });
    const from = "127.0.0.10";
    const login = await send(from, {
      method: "POST",
      path: "/user/login",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: BASE_URL, accept: "text/html" },
      body: new URLSearchParams({ login: adminName, password: PASSWORD }).toString(),
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    const page = await send(from, { path: "/user/admin/users", headers: { cookie, accept: "text/html" } });
    expect(page.status).toBe(200);
    const csrf = /<input type="hidden" name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
    for (let i = 0; i < BURST + 2; i++) {
      const name = `pg_${i}_${Math.random().toString(36).slice(2, 7)}`;
      const created = await send(from, {
        method: "POST",
        path: "/user/admin/users",
        headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: BASE_URL, accept: "text/html" },
        body: new URLSearchParams({ _csrf: csrf, username: name, email: `${name}@example.com`, role: "user" }).toString(),
      });
      expect(created.status).toBe(303);
      const audit = await latestAudit();
      expect(audit).toMatchObject({ action: "POST /api/admin/users", ip: from });
      expect(audit.actor).toMatch(new RegExp(`^${adminName} \\(user \\d+\\)$`));
    }
  });

  test("the CLI's changes are logged with its address", async () => {
    const out: string[] = [];
    const name = `cli_${Math.random().toString(36).slice(2, 8)}`;
    const code = await main(
      ["user", "create", name, "--email", `${name}@example.com`],
      { BASE_URL: `http://127.0.0.1:${server.port}`, ADMIN_TOKEN },
      { out: (s) => out.push(s), err: (s) => out.push(s) },
    );
    expect(code).toBe(0);
    expect(await latestAudit()).toMatchObject({ action: "POST /api/admin/users", actor: "ADMIN_TOKEN", ip: "127.0.0.1" });
  });
});
