/**
 * Per-caller bounds: temporary tokens per account, one bounded reader for every user-center form, throttles that
 * reserve before the work, IPv6 addresses counted by their /64, and the Account page's password change. Each attack
 * reproduced at CI scale, asserting the bound itself (rows of tokens, sessions and users; password verifications;
 * page sizes), not only the status.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import { sessions, tokens, users } from "../../src/db/schema.ts";
import { addressBucket } from "../../src/http/auth.ts";
import { passwordVerifications } from "../../src/services/passwords.ts";
import { SESSIONS_PER_ACCOUNT } from "../../src/services/sessions.ts";
import { sweepExpired } from "../../src/services/sweeper.ts";
import { TOKEN_LIMITS } from "../../src/services/tokens.ts";
import { formLimits } from "../../src/web/form.ts";
import { BASE_URL, createTestContext, quietly, type TestContext } from "../support/harness.ts";
import { makeImage, multipart } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

setDefaultTimeout(120_000);

let ctx: TestContext;
let png: Uint8Array;

beforeAll(async () => {
  ctx = await createTestContext();
  png = await makeImage("png", 8, 8);
});
afterAll(() => ctx?.close());

const PASSWORD = "correct horse battery";
let seq = 0;
let addressSeq = 0;
const nextAddress = () => `198.51.100.${++addressSeq}`;

async function userWithPassword(c: TestContext = ctx) {
  const username = `h2u${++seq}_${Math.random().toString(36).slice(2, 6)}`;
  const user = await c.createUser({ username, email: `${username}@example.com`, password: PASSWORD });
  return { ...user, username, email: `${username}@example.com` };
}

const formTokenIn = (html: string) => /<input type="hidden" name="_csrf" value="([^"]+)"/.exec(html)?.[1];

/** A browser in-process (cookie, form token, this site's Origin). */
class Visitor {
  cookie: string | undefined;
  formToken: string | undefined;
  constructor(
    readonly address = nextAddress(),
    readonly c: TestContext = ctx,
  ) {}
  headers(extra: Record<string, string> = {}) {
    return { accept: "text/html", "x-forwarded-for": this.address, ...(this.cookie ? { cookie: this.cookie } : {}), ...extra };
  }
  keep(res: Response) {
    const set = res.headers.get("set-cookie");
    if (!set) return;
    const [pair] = set.split(";");
    this.cookie = pair!.slice(pair!.indexOf("=") + 1) && !/Max-Age=0/i.test(set) ? pair : undefined;
  }
  async get(path: string) {
    const res = await this.c.request(path, { headers: this.headers(), redirect: "manual" });
    this.keep(res);
    const html = res.headers.get("content-type")?.includes("text/html") ? await res.clone().text() : "";
    this.formToken = formTokenIn(html) ?? this.formToken;
    return res;
  }
  async post(path: string, fields: Record<string, string> = {}, headers: Record<string, string> = {}) {
    const body = new URLSearchParams({ ...(this.formToken ? { _csrf: this.formToken } : {}), ...fields });
    const res = await this.c.request(path, {
      method: "POST",
      headers: this.headers({ "content-type": "application/x-www-form-urlencoded", origin: BASE_URL, ...headers }),
      body: body.toString(),
      redirect: "manual",
    });
    this.keep(res);
    return res;
  }
  /** A raw body with this visitor's cookie and Origin. */
  send(path: string, body: BodyInit, contentType: string) {
    return this.c.request(path, { method: "POST", headers: this.headers({ "content-type": contentType, origin: BASE_URL }), body, redirect: "manual" });
  }
  async signIn(login: string, password = PASSWORD) {
    const res = await this.post("/user/login", { login, password });
    if (res.status === 303 && this.cookie) await this.get("/user/dashboard");
    return res;
  }
}

async function signedIn(c: TestContext = ctx) {
  const user = await userWithPassword(c);
  const visitor = new Visitor(nextAddress(), c);
  expect((await visitor.signIn(user.username)).status).toBe(303);
  return { user, visitor };
}

const issue = (c: TestContext, token: string, num: number, seconds = 3600) =>
  c.json("/api/v1/images/tokens", {
    method: "POST",
    headers: { ...c.bearer(token), "content-type": "application/json" },
    body: JSON.stringify({ num, seconds }),
  });

const count = async (where: ReturnType<typeof and>, c: TestContext = ctx) =>
  (await c.db.select({ n: sql<number>`count(*)::int` }).from(tokens).where(where))[0]!.n;

describe("temporary tokens are bounded per account", () => {
  test("a concurrent burst issues at most the per-minute rate (400 + Retry-After, as every failed check of a known caller); then the live cap holds (400), atomically", async () => {
    const user = await ctx.createUser();
    const live = () => count(and(eq(tokens.userId, user.id), eq(tokens.kind, "temporary"), isNull(tokens.revokedAt)));
    // 12 simultaneous batches of 100: the rate (600 a minute) lets exactly 6 through
    const burst = await Promise.all(Array.from({ length: 12 }, () => issue(ctx, user.token, 100)));
    const statuses = burst.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200).length).toBe(TOKEN_LIMITS.temporaryPerMinute / 100);
    expect(statuses.filter((s) => s === 400).length).toBe(12 - TOKEN_LIMITS.temporaryPerMinute / 100);
    const refused = burst.find((r) => r.status === 400)!;
    expect(refused.body).toMatchObject({ status: false, data: null });
    expect(refused.body.message).toContain(`${TOKEN_LIMITS.temporaryPerMinute} temporary tokens a minute`);
    const retry = Number(refused.headers.get("retry-after"));
    expect(retry >= 1 && retry <= 60).toBe(true);
    expect(await live()).toBe(TOKEN_LIMITS.temporaryPerMinute);

    // a minute on: the live cap (1000) lets 4 of 10 simultaneous batches through, the rest are 400 and issue nothing
    ctx.advance(61_000);
    const more = await Promise.all(Array.from({ length: 10 }, () => issue(ctx, user.token, 100)));
    expect(more.filter((r) => r.status === 200).length).toBe((TOKEN_LIMITS.liveTemporary - TOKEN_LIMITS.temporaryPerMinute) / 100);
    const capped = more.filter((r) => r.status === 400);
    expect(capped.length).toBe(6);
    expect(capped[0]!.body.message).toContain(`at most ${TOKEN_LIMITS.liveTemporary} live temporary tokens`);
    expect(await live()).toBe(TOKEN_LIMITS.liveTemporary);
    ctx.advance(61_000);
    expect((await issue(ctx, user.token, 1)).status).toBe(400);
    expect(await live()).toBe(TOKEN_LIMITS.liveTemporary);

    // the user center's form is bounded by the same count
    const { visitor } = await (async () => {
      const u = await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { password: PASSWORD });
      const v = new Visitor();
      expect((await v.signIn(u.username)).status).toBe(303);
      return { visitor: v };
    })();
    const page = await visitor.post("/user/tokens/temporary", { num: "1", seconds: "60" });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain("live temporary tokens");
    expect(await live()).toBe(TOKEN_LIMITS.liveTemporary);

    // the list of them is a page: the API Tokens page shows 50 of the 1000 and says how many pages there are
    const list = await (await visitor.get("/user/tokens")).text();
    expect((list.match(/<tr>/g) ?? []).length).toBeLessThanOrEqual(51); // 50 rows and the header
    expect(list).toContain("Page 1 of 21");
    const admin = await ctx.admin("GET", `/api/admin/users/${user.id}/tokens`);
    expect(admin.tokens.length).toBe(100);
    expect(admin.total).toBe(TOKEN_LIMITS.liveTemporary + 1);
    expect((await ctx.json(`/api/admin/users/${user.id}/tokens?per_page=501`, { headers: ctx.bearer("test-admin-token-0123456789") })).status).toBe(422);
    expect((await ctx.admin("GET", `/api/admin/users/${user.id}/tokens?page=11&per_page=100`)).tokens.length).toBe(1);

    // once they expire and an hour has passed, the sweeper forgets them: the table does not keep growing
    ctx.advance(3600_000 + TOKEN_LIMITS.keepDeadMs + 1000);
    await sweepExpired(ctx.deps);
    expect(await count(and(eq(tokens.userId, user.id), eq(tokens.kind, "temporary")))).toBe(0);
    expectStatus(await issue(ctx, user.token, 100), 200);
  });

  test("permanent tokens: at most 100 unrevoked per account (400 on the page and the admin API)", async () => {
    const user = await ctx.createUser(); // holds 1
    await Promise.all(
      Array.from({ length: TOKEN_LIMITS.livePermanent + 10 }, () =>
        ctx.json(`/api/admin/users/${user.id}/tokens`, { method: "POST", headers: ctx.bearer("test-admin-token-0123456789") }),
      ),
    );
    expect(await count(and(eq(tokens.userId, user.id), eq(tokens.kind, "permanent")))).toBe(TOKEN_LIMITS.livePermanent);
    const refused = await ctx.json(`/api/admin/users/${user.id}/tokens`, { method: "POST", headers: ctx.bearer("test-admin-token-0123456789") });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain("permanent tokens");
  });

  test("sessions: at most 20 per account, concurrent sign-ins included; the oldest end first, with their upload tokens", async () => {
    const user = await userWithPassword();
    const first = new Visitor();
    expect((await first.signIn(user.username)).status).toBe(303);
    const pageToken = expectStatus(
      await ctx.json("/user/upload/token", {
        method: "POST",
        headers: first.headers({ accept: "application/json", "x-csrf-token": first.formToken!, origin: BASE_URL }),
      }),
      200,
    ).data.token;
    // 30 sign-ins, 6 at a time (at most 10 of one login are verified at once: the throttle reserves before hashing)
    for (let round = 0; round < 5; round++) {
      const results = await Promise.all(Array.from({ length: 6 }, () => new Visitor().post("/user/login", { login: user.username, password: PASSWORD })));
      expect(results.map((r) => r.status)).toEqual(Array(6).fill(303));
    }
    const rows = await ctx.db.select().from(sessions).where(eq(sessions.userId, user.id));
    expect(rows.length).toBe(SESSIONS_PER_ACCOUNT);
    // the first session is among those that ended, and its page token with it
    expect((await first.get("/user/dashboard")).status).toBe(303);
    expect((await ctx.upload(pageToken, { bytes: png, filename: "a.png", contentType: "image/png" })).status).toBe(401);
  });

  test("the upload page's tokens: a session keeps its 10 newest however often it asks", async () => {
    const { user, visitor } = await signedIn();
    const ask = () =>
      ctx.json("/user/upload/token", {
        method: "POST",
        headers: visitor.headers({ accept: "application/json", "x-csrf-token": visitor.formToken!, origin: BASE_URL }),
      });
    const issued = [];
    for (let i = 0; i < 25; i++) issued.push(expectStatus(await ask(), 200).data.token as string);
    expect(await count(and(eq(tokens.userId, user.id), isNotNull(tokens.sessionId)))).toBe(TOKEN_LIMITS.perSession);
    expect((await ctx.upload(issued.at(-1)!, { bytes: png, filename: "a.png", contentType: "image/png" })).status).toBe(200);
    expect((await ctx.upload(issued[0]!, { bytes: png, filename: "a.png", contentType: "image/png" })).status).toBe(401);
  });
});

describe("every user-center form is read by one bounded reader (4xx, never 500)", () => {
  test("a NUL in login, in a sign-up field, in a delete key: 422, nothing logged as an error", async () => {
    const { logged, result } = await quietly(async () => {
      const login = await new Visitor().post("/user/login", { login: "bob\u0000", password: PASSWORD });
      const key = await (async () => {
        const { visitor } = await signedIn();
        return visitor.post("/user/images/abc%00def/delete", { confirmed: "1" });
      })();
      const label = await (async () => {
        const { visitor } = await signedIn();
        return visitor.post("/user/tokens", { label: "a\u0000b" });
      })();
      return [login.status, key.status, label.status];
    });
    expect(result).toEqual([422, 422, 422]);
    expect(logged.filter((l) => l.level === "error" || l.level === 50)).toEqual([]);
  });

  test("multipart with a missing or a bad boundary on sign-in and sign-up: 400", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
    try {
      const good = multipart([
        { name: "login", value: "x" },
        { name: "password", value: "y" },
      ]);
      const { result, logged } = await quietly(async () => {
        const out: number[] = [];
        for (const path of ["/user/login", "/user/register"]) {
          out.push((await new Visitor().send(path, good.body, "multipart/form-data")).status);
          out.push((await new Visitor().send(path, good.body, "multipart/form-data; boundary=nope")).status);
          out.push((await new Visitor().send(path, "garbage", `multipart/form-data; boundary=x`)).status);
        }
        // a well-formed multipart form still works
        const user = await userWithPassword();
        const ok = multipart([
          { name: "login", value: user.username },
          { name: "password", value: PASSWORD },
        ]);
        out.push((await new Visitor().send("/user/login", ok.body, ok.contentType)).status);
        return out;
      });
      expect(result).toEqual([400, 400, 400, 400, 400, 400, 303]);
      expect(logged.filter((l) => l.level === "error" || l.level === 50)).toEqual([]);
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: false });
    }
  });

  test("a form body larger than 64 KB is 400, a body that stops arriving is 408 at the deadline, a client that goes away is 400", async () => {
    const big = new Visitor().send("/user/login", `login=${"a".repeat(formLimits.bytes)}&password=x`, "application/x-www-form-urlencoded");
    expect((await big).status).toBe(400);
    // no Content-Length: counted as it arrives
    const chunks = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 20; i++) controller.enqueue(new TextEncoder().encode("a".repeat(8 * 1024)));
        controller.close();
      },
    });
    expect((await new Visitor().send("/user/login", chunks, "application/x-www-form-urlencoded")).status).toBe(400);

    const saved = formLimits.deadlineMs;
    formLimits.deadlineMs = 300;
    try {
      let cancelled = false;
      const slow = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("login=a"));
        },
        cancel() {
          cancelled = true;
        },
      });
      const started = Date.now();
      const res = await new Visitor().send("/user/login", slow, "application/x-www-form-urlencoded");
      expect(res.status).toBe(408);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(cancelled).toBe(true);
    } finally {
      formLimits.deadlineMs = saved;
    }

    const gone = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("login=a"));
        setTimeout(() => controller.error(new Error("connection reset")), 10);
      },
    });
    const { result, logged } = await quietly(() => new Visitor().send("/user/login", gone, "application/x-www-form-urlencoded"));
    expect(result.status).toBe(400);
    expect(logged.filter((l) => l.level === "error" || l.level === 50)).toEqual([]);
  });
});

describe("throttles reserve before the work", () => {
  test("40 simultaneous sign-ups from one address create 5 accounts", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
    try {
      const before = (await ctx.db.select({ n: sql<number>`count(*)::int` }).from(users))[0]!.n;
      const address = "192.0.2.140";
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          new Visitor(address).post("/user/register", { username: `flood${i}`, email: `flood${i}@example.com`, password: PASSWORD }),
        ),
      );
      expect(results.filter((r) => r.status === 303).length).toBe(5);
      expect(results.filter((r) => r.status === 429).length).toBe(35);
      const after = (await ctx.db.select({ n: sql<number>`count(*)::int` }).from(users))[0]!.n;
      expect(after - before).toBe(5);
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: false });
    }
  });

  test("60 simultaneous wrong passwords on one account: 10 verified, 50 refused before any hashing", async () => {
    const user = await userWithPassword();
    const before = passwordVerifications.count;
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => new Visitor().post("/user/login", { login: user.username, password: `guess ${i}` })),
    );
    expect(results.filter((r) => r.status === 401).length).toBe(10);
    expect(results.filter((r) => r.status === 429).length).toBe(50);
    expect(passwordVerifications.count - before).toBe(10);
  });

  test("API token failures from one address: a concurrent burst gets the burst's worth of 401s, the rest 429 before any lookup", async () => {
    const throttled = await createTestContext({ authFailures: { burst: 5, perMinute: 1 } });
    try {
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          throttled.json("/api/v1/profile", { headers: { authorization: `Bearer wrong${i}`, "x-forwarded-for": "203.0.113.77" } }),
        ),
      );
      expect(results.filter((r) => r.status === 401).length).toBe(5);
      expect(results.filter((r) => r.status === 429).length).toBe(25);
      // a valid token costs nothing: its unit is given back
      const user = await throttled.createUser();
      for (let i = 0; i < 10; i++) {
        expect((await throttled.json("/api/v1/profile", { headers: { ...throttled.bearer(user.token), "x-forwarded-for": "203.0.113.78" } })).status).toBe(200);
      }
    } finally {
      await throttled.close();
    }
  });
});

describe("IPv6 addresses are bounded by their /64", () => {
  test("addressBucket", () => {
    expect(addressBucket("192.0.2.1")).toBe("192.0.2.1");
    expect(addressBucket("2001:db8:1:2:3:4:5:6")).toBe("2001:db8:1:2::/64");
    expect(addressBucket("2001:DB8:1:2::ffff")).toBe("2001:db8:1:2::/64");
    expect(addressBucket("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(addressBucket("[2001:db8::1]")).toBe("2001:db8:0:0::/64");
    expect(addressBucket("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(addressBucket("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(addressBucket("::ffff:c000:207")).toBe("192.0.2.7");
    expect(addressBucket("::1")).toBe("0:0:0:0::/64");
    expect(addressBucket("")).toBe("");
    expect(addressBucket("not an address")).toBe("not an address");
    expect(addressBucket("1:2:3:4:5:6:7:8:9")).toBe("1:2:3:4:5:6:7:8:9");
  });

  test("sign-ups from many addresses of one /64 share one bound; another /64 has its own", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
    try {
      const made = [];
      for (let i = 0; i < 6; i++) {
        made.push(
          (
            await new Visitor(`2001:db8:aa:1::${(i + 1).toString(16)}`).post("/user/register", {
              username: `six${i}`,
              email: `six${i}@example.com`,
              password: PASSWORD,
            })
          ).status,
        );
      }
      expect(made).toEqual([303, 303, 303, 303, 303, 429]);
      expect((await new Visitor("2001:db8:aa:2::1").post("/user/register", { username: "six6", email: "six6@example.com", password: PASSWORD })).status).toBe(
        303,
      );
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: false });
    }
  });

  test("failed tokens from many addresses of one /64 share one bucket", async () => {
    const throttled = await createTestContext({ authFailures: { burst: 3, perMinute: 1 } });
    try {
      const statuses = [];
      for (let i = 1; i <= 5; i++) {
        statuses.push(
          (await throttled.json("/api/v1/profile", { headers: { authorization: "Bearer wrong", "x-forwarded-for": `2001:db8:bb:1:${i}::1` } })).status,
        );
      }
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
      expect((await throttled.json("/api/v1/profile", { headers: { authorization: "Bearer wrong", "x-forwarded-for": "2001:db8:bb:2::1" } })).status).toBe(401);
    } finally {
      await throttled.close();
    }
  });
});

describe("notices and the password change", () => {
  test("/user/images?deleted=<text> never echoes the text", async () => {
    const { visitor } = await signedIn();
    const html = await (await visitor.get(`/user/images?deleted=${encodeURIComponent("Your account is suspended: call +1 555 0100")}`)).text();
    expect(html).not.toContain("suspended");
    expect(html).toContain("Image deleted.");
  });

  test("changing the password on the Account page ends the other sessions and, when asked, revokes every API token", async () => {
    const { user, visitor } = await signedIn();
    const elsewhere = new Visitor();
    expect((await elsewhere.signIn(user.username)).status).toBe(303);
    // a stolen session minted tokens
    const stolen = expectStatus(await issue(ctx, user.token, 3), 200).data.tokens as { token: string }[];
    expect((await visitor.get("/user/account")).status).toBe(200);

    const wrong = await visitor.post("/user/account/password", {
      current_password: "nope",
      new_password: "a new password 1",
      new_password_again: "a new password 1",
    });
    expect(wrong.status).toBe(401);
    const differ = await visitor.post("/user/account/password", {
      current_password: PASSWORD,
      new_password: "a new password 1",
      new_password_again: "another",
    });
    expect(differ.status).toBe(422);

    const done = await visitor.post("/user/account/password", {
      current_password: PASSWORD,
      new_password: "a new password 1",
      new_password_again: "a new password 1",
      revoke_tokens: "1",
    });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain("API tokens were revoked");
    // this session goes on; the other one ended
    expect((await visitor.get("/user/dashboard")).status).toBe(200);
    expect((await elsewhere.get("/user/dashboard")).status).toBe(303);
    expect((await ctx.db.select().from(sessions).where(eq(sessions.userId, user.id))).length).toBe(1);
    // every token is revoked: the permanent one and those it minted
    expect(await count(and(eq(tokens.userId, user.id), isNull(tokens.revokedAt), isNull(tokens.sessionId)))).toBe(0);
    expect((await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) })).status).toBe(401);
    expect((await ctx.upload(stolen[0]!.token, { bytes: png, filename: "a.png", contentType: "image/png" })).status).toBe(401);
    // the new password signs in, the old one not
    expect((await new Visitor().signIn(user.username, "a new password 1")).status).toBe(303);
    expect((await new Visitor().signIn(user.username)).status).toBe(401);
  });

  test("without the checkbox the tokens keep working; wrong current passwords are throttled before they are verified", async () => {
    const { user, visitor } = await signedIn();
    const ok = await visitor.post("/user/account/password", {
      current_password: PASSWORD,
      new_password: "a new password 2",
      new_password_again: "a new password 2",
    });
    expect(ok.status).toBe(200);
    expect((await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) })).status).toBe(200);
    const before = passwordVerifications.count;
    const results = await Promise.all(
      Array.from({ length: 12 }, () =>
        visitor.post("/user/account/password", { current_password: "guess", new_password: "a new password 3", new_password_again: "a new password 3" }),
      ),
    );
    expect(results.filter((r) => r.status === 401).length).toBe(5);
    expect(results.filter((r) => r.status === 429).length).toBe(7);
    expect(passwordVerifications.count - before).toBe(5);
  });
});

describe("the upload page's snippet route", () => {
  test("answers the owner's image only: another account's and a missing key are the same 404; a stranger is sent to sign in", async () => {
    const { user: owner, visitor } = await signedIn();
    const { visitor: other } = await signedIn();
    const uploaded = expectStatus(await ctx.upload(owner.token, { bytes: png, filename: "mine.png", contentType: "image/png" }), 200).data;

    const mine = await visitor.get(`/user/upload/snippets/${uploaded.key}`);
    const body = expectStatus({ status: mine.status, body: await mine.json() }, 200);
    expect(body.data.responsive_html).toStartWith("<picture>");
    expect(body.data.responsive_html).toContain(`alt="mine.png"`);
    expect(mine.headers.get("cache-control")).toBe("no-store");

    const theirs = await other.get(`/user/upload/snippets/${uploaded.key}`);
    const missing = await other.get("/user/upload/snippets/no-such-key");
    expect([theirs.status, missing.status]).toEqual([404, 404]);
    expect(await theirs.text()).toBe(await missing.text());

    const stranger = await new Visitor().get(`/user/upload/snippets/${uploaded.key}`);
    expect(stranger.status).toBe(303);
    expect(stranger.headers.get("location")).toContain("/user/login");
  });
});
