/**
 * Sign-in through OpenID Connect, in-process against a real provider (panva's oidc-provider on loopback) and, for
 * the tokens a real provider will not mint, a fake issuer whose token endpoint answers crafted ID tokens.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import { auditLog, oidcFlows, oidcIdentities, oidcProviders, sessions, users } from "../../src/db/schema.ts";
import { BASE_URL, createTestContext, type TestContext } from "../support/harness.ts";
import { CookieJar, driveProvider, type FakeIssuer, type RunningProvider, signJwt, startFakeIssuer, startOidcProvider } from "../support/oidc.ts";

let ctx: TestContext;
let idp: RunningProvider;
let fake: FakeIssuer;
let addressSeq = 0;

const PASSWORD = "correct horse battery";

const people = {
  alice: { email: "alice@idp.test", email_verified: true, preferred_username: "alice", name: "Alice", groups: ["staff"] },
  boss: { email: "boss@idp.test", email_verified: true, preferred_username: "boss", name: "Boss", groups: ["staff", "image-admins"] },
  carol: { email: "carol@idp.test", email_verified: true, preferred_username: "carol" },
  bob: { email: "bob@example.com", email_verified: true, preferred_username: "bobby" },
  bob2: { email: "bob@example.com", email_verified: true, preferred_username: "bob-two" },
  mallory: { email: "dave@example.com", email_verified: false, preferred_username: "mallory" },
  nomail: { preferred_username: "nomail" },
  fay: { email: "fay@example.com", email_verified: true, preferred_username: "fay-idp" },
};

/** A browser in-process: the site's cookies, this site's Origin on posts, its own address. */
class Browser {
  jar = new CookieJar();
  address = `198.51.100.${++addressSeq}`;
  async get(url: string) {
    const full = url.startsWith("http") ? url : `${BASE_URL}${url}`;
    const cookie = this.jar.header(full);
    const res = await ctx.request(full, {
      headers: { accept: "text/html", "x-forwarded-for": this.address, ...(cookie ? { cookie } : {}) },
      redirect: "manual",
    });
    this.jar.keep(full, res);
    return res;
  }
  async post(path: string, fields: Record<string, string>) {
    const full = `${BASE_URL}${path}`;
    const cookie = this.jar.header(full);
    const res = await ctx.request(full, {
      method: "POST",
      headers: {
        accept: "text/html",
        "content-type": "application/x-www-form-urlencoded",
        origin: BASE_URL,
        "x-forwarded-for": this.address,
        ...(cookie ? { cookie } : {}),
      },
      body: new URLSearchParams(fields).toString(),
      redirect: "manual",
    });
    this.jar.keep(full, res);
    return res;
  }
  /** Presses the provider's button: answers the provider's authorization URL. */
  async start(slug: string, next?: string) {
    const res = await this.get(`/user/oidc/${slug}/start${next ? `?next=${encodeURIComponent(next)}` : ""}`);
    expect(res.status, await res.clone().text()).toBe(303);
    return res.headers.get("location")!;
  }
  /** The whole walk: button, provider login as `login`, back to the callback; answers the callback's response. */
  async signInAs(slug: string, login: string) {
    const callback = await driveProvider(await this.start(slug), login);
    return { callback, res: await this.get(callback) };
  }
  hasSession = () => /ih_session=/.test(this.jar.header(BASE_URL) ?? "");
}

async function addProvider(body: Record<string, unknown>) {
  return ctx.admin("POST", "/api/admin/oidc-providers", body);
}

const userNamed = async (username: string) => (await ctx.db.select().from(users).where(eq(users.username, username)))[0];
const identitiesOf = (userId: number) => ctx.db.select().from(oidcIdentities).where(eq(oidcIdentities.userId, userId));

beforeAll(async () => {
  ctx = await createTestContext();
  idp = await startOidcProvider({
    redirectUris: [`${BASE_URL}/user/oidc/corp/callback`, `${BASE_URL}/user/oidc/strict/callback`],
    people,
  });
  fake = await startFakeIssuer();
});

afterAll(async () => {
  await idp?.close();
  await fake?.close();
  await ctx?.close();
});

describe("the admin API of providers", () => {
  test("adds a provider: the secret is stored sealed and answered only as set", async () => {
    const made = await addProvider({
      slug: "corp",
      label: "Sign in with Corp",
      issuer: idp.issuer,
      client_id: idp.clientId,
      client_secret: idp.clientSecret,
      scopes: "openid profile email groups",
      groups_claim: "groups",
      admin_group: "image-admins",
      auto_provision: true,
    });
    expect(made).toEqual({
      id: expect.any(Number),
      slug: "corp",
      label: "Sign in with Corp",
      issuer: idp.issuer,
      client_id: idp.clientId,
      client_secret_set: true,
      scopes: "openid profile email groups",
      username_claim: "preferred_username",
      email_claim: "email",
      groups_claim: "groups",
      admin_group: "image-admins",
      group_map: [],
      auto_provision: true,
      enabled: true,
      redirect_uri: `${BASE_URL}/user/oidc/corp/callback`,
      identities: 0,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
    });
    expect(JSON.stringify(made)).not.toContain(idp.clientSecret);
    const [row] = await ctx.db.select().from(oidcProviders).where(eq(oidcProviders.slug, "corp"));
    expect(row!.clientSecret).toStartWith("v1:");
    expect(row!.clientSecret).not.toContain(idp.clientSecret);
    const [audit] = await ctx.db.select().from(auditLog).where(eq(auditLog.action, "POST /api/admin/oidc-providers"));
    expect(audit!.detail.client_secret).toBe("(set)");
    expect((await ctx.admin("GET", "/api/admin/oidc-providers")).providers.map((p: { slug: string }) => p.slug)).toEqual(["corp"]);
  });

  test("refuses a plain-http issuer off loopback, a taken slug, scopes without openid, an unknown group", async () => {
    const base = { label: "X", client_id: "x" };
    const refusal = async (body: Record<string, unknown>) => {
      const res = await ctx.json("/api/admin/oidc-providers", {
        method: "POST",
        headers: { authorization: "Bearer test-admin-token-0123456789", "content-type": "application/json" },
        body: JSON.stringify({ ...base, ...body }),
      });
      expect(res.status).toBe(422);
      return res.body.errors as Record<string, string[]>;
    };
    expect((await refusal({ slug: "a", issuer: "http://auth.example.com" })).issuer).toEqual([
      "The issuer field is invalid: it must use https (plain http only on a loopback address).",
    ]);
    expect((await refusal({ slug: "corp", issuer: "https://auth.example.com" })).slug).toEqual(["Another provider has this slug."]);
    expect((await refusal({ slug: "b", issuer: "https://auth.example.com", scopes: "profile email" })).scopes).toEqual([
      "The scopes field is invalid: the scopes must include openid.",
    ]);
    expect((await refusal({ slug: "c", issuer: "https://auth.example.com", group_map: [{ value: "x", group_id: 2 }] })).group_map).toEqual([
      "Entry 1: group 2 is not an existing, non-guest group.",
    ]);
    expect((await refusal({ slug: "Bad Slug", issuer: "https://auth.example.com" })).slug).toHaveLength(1);
  });

  test("PATCH keeps the secret when omitted, removes it with an empty string", async () => {
    const made = await addProvider({ slug: "tmp", label: "Tmp", issuer: "https://auth.example.com", client_id: "t", client_secret: "s" });
    expect((await ctx.admin("PATCH", `/api/admin/oidc-providers/${made.id}`, { label: "Tmp 2" })).client_secret_set).toBe(true);
    expect((await ctx.admin("PATCH", `/api/admin/oidc-providers/${made.id}`, { client_secret: "" })).client_secret_set).toBe(false);
    expect(await ctx.admin("DELETE", `/api/admin/oidc-providers/${made.id}`)).toBeNull();
    const res = await ctx.json(`/api/admin/oidc-providers/${made.id}`, { headers: { authorization: "Bearer test-admin-token-0123456789" } });
    expect(res.status).toBe(404);
  });
});

describe("signing in with a real provider", () => {
  test("the sign-in page shows the provider's button", async () => {
    const res = await new Browser().get("/user/login");
    const html = await res.text();
    expect(html).toContain('href="/user/oidc/corp/start"');
    expect(html).toContain("Sign in with Corp");
    expect(html).toContain('name="password"');
  });

  test("a new person gets an account (auto-provisioning), with the identity keyed by issuer and subject", async () => {
    const browser = new Browser();
    const auth = new URL(await browser.start("corp", "/user/images"));
    // the request carries PKCE (S256), state and nonce; the flow is stored hashed, bound to this browser
    expect(auth.searchParams.get("code_challenge_method")).toBe("S256");
    expect(auth.searchParams.get("state")).toMatch(/^[\w-]{40,}$/);
    expect(auth.searchParams.get("nonce")).toMatch(/^[\w-]{40,}$/);
    expect(auth.searchParams.get("redirect_uri")).toBe(`${BASE_URL}/user/oidc/corp/callback`);
    expect(auth.searchParams.get("scope")).toBe("openid profile email groups");
    const [flow] = await ctx.db.select().from(oidcFlows);
    expect(flow!.stateHash).not.toBe(auth.searchParams.get("state"));
    const res = await browser.get(await driveProvider(auth.href, "alice"));
    expect(res.status, await res.clone().text()).toBe(303);
    expect(res.headers.get("location")).toBe("/user/images");
    expect(browser.hasSession()).toBe(true);
    const alice = await userNamed("alice");
    expect(alice).toMatchObject({ email: "alice@idp.test", name: "Alice", passwordHash: null, role: "user", groupId: ctx.defaultGroupId });
    expect((await identitiesOf(alice!.id)).map((i) => ({ issuer: i.issuer, subject: i.subject, email: i.email }))).toEqual([
      { issuer: idp.issuer, subject: "alice", email: "alice@idp.test" },
    ]);
    const [session] = await ctx.db.select().from(sessions).where(eq(sessions.userId, alice!.id));
    expect(session!.method).toBe("oidc:corp");
    // the flow was used up
    expect(await ctx.db.select().from(oidcFlows)).toHaveLength(0);
    // the dashboard opens
    expect((await browser.get("/user/dashboard")).status).toBe(200);
  });

  test("the same person again signs in to the same account", async () => {
    const before = (await ctx.db.select().from(users)).length;
    const { res } = await new Browser().signInAs("corp", "alice");
    expect(res.status).toBe(303);
    expect((await ctx.db.select().from(users)).length).toBe(before);
  });

  test("the groups claim makes an administrator, and a username taken here gets a suffix", async () => {
    await ctx.admin("POST", "/api/admin/users", { username: "carol", email: "carol@local.test" });
    const { res } = await new Browser().signInAs("corp", "carol");
    expect(res.status).toBe(303);
    expect((await userNamed("carol-2"))!.email).toBe("carol@idp.test");
    expect((await userNamed("carol"))!.email).toBe("carol@local.test");
    const boss = await new Browser().signInAs("corp", "boss");
    expect(boss.res.status).toBe(303);
    expect((await userNamed("boss"))!.role).toBe("admin");
  });

  test("a replayed callback, a wrong state and another browser's callback sign nobody in", async () => {
    const browser = new Browser();
    const callback = await driveProvider(await browser.start("corp"), "alice");
    // another browser (no flow cookie of its own, or another one) cannot use this browser's answer
    const thief = new Browser();
    await thief.start("corp");
    const stolen = await thief.get(callback);
    expect(stolen.status).toBe(400);
    expect(await stolen.text()).toContain("This sign-in has expired or was already used");
    expect(thief.hasSession()).toBe(false);
    // a wrong state
    const forged = new URL(callback);
    forged.searchParams.set("state", "x".repeat(43));
    expect((await browser.get(forged.href)).status).toBe(400);
    expect(browser.hasSession()).toBe(false);
    // the real answer, once
    expect((await browser.get(callback)).status).toBe(303);
    expect(browser.hasSession()).toBe(true);
    const again = new Browser();
    again.jar = browser.jar;
    expect((await again.get(callback)).status).toBe(400);
  });

  test("session fixation: a session the browser carried before a provider sign-in is ended, never reused", async () => {
    // the browser carries a live session of another account (planted, or its own earlier one)
    const other = await ctx.admin("POST", "/api/admin/users", { username: "planted", email: "planted@example.com" });
    await ctx.admin("PATCH", `/api/admin/users/${other.id}`, { password: PASSWORD });
    const browser = new Browser();
    expect((await browser.post("/user/login", { login: "planted", password: PASSWORD })).status).toBe(303);
    const planted = /ih_session=([^;]+)/.exec(browser.jar.header(BASE_URL)!)![1]!;
    const { res } = await browser.signInAs("corp", "alice");
    expect(res.status).toBe(303);
    const now = /ih_session=([^;]+)/.exec(browser.jar.header(BASE_URL)!)![1]!;
    expect(now).not.toBe(planted);
    expect(await ctx.db.select().from(sessions).where(eq(sessions.userId, other.id))).toHaveLength(0);
    // the planted cookie opens nothing any more; the new one is alice's
    const stale = await ctx.request(`${BASE_URL}/user/dashboard`, { headers: { cookie: `ih_session=${planted}` }, redirect: "manual" });
    expect(stale.status).toBe(303);
    expect(await (await browser.get("/user/dashboard")).text()).toContain("alice");
  });

  test("an unknown person is refused when auto-provisioning is off; a provider that gives no email is refused", async () => {
    const strict = await addProvider({ slug: "strict", label: "Strict", issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret });
    const before = (await ctx.db.select().from(users)).length;
    const { res } = await new Browser().signInAs("strict", "alice");
    // alice is known through this issuer already: the identity, not the provider row, decides
    expect(res.status).toBe(303);
    const stranger = await new Browser().signInAs("strict", "nomail");
    expect(stranger.res.status).toBe(403);
    expect(await stranger.res.text()).toContain("The identity provider gave no email address");
    await ctx.admin("PATCH", `/api/admin/oidc-providers/${strict.id}`, { auto_provision: false });
    expect((await ctx.db.select().from(users)).length).toBe(before);
  });
});

describe("linking to an existing account", () => {
  let bobId: number;
  beforeAll(async () => {
    const bob = await ctx.admin("POST", "/api/admin/users", { username: "bob", email: "bob@example.com" });
    await ctx.admin("PATCH", `/api/admin/users/${bob.id}`, { password: PASSWORD });
    bobId = bob.id;
    await ctx.admin("POST", "/api/admin/users", { username: "dave", email: "dave@example.com" });
  });

  test("an unverified email never links", async () => {
    const { res } = await new Browser().signInAs("corp", "mallory");
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("does not say it is verified");
    const dave = await userNamed("dave");
    expect(await identitiesOf(dave!.id)).toHaveLength(0);
  });

  test("a verified email links once the person signs in to the account with its password", async () => {
    const browser = new Browser();
    const { res } = await browser.signInAs("corp", "bob");
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/user/oidc/link");
    expect(browser.hasSession()).toBe(false);
    const page = await (await browser.get("/user/oidc/link")).text();
    expect(page).toContain("<b>bob</b>");
    // another browser has no link to confirm
    expect((await new Browser().post("/user/oidc/link", { password: PASSWORD })).status).toBe(400);
    const wrong = await browser.post("/user/oidc/link", { password: "not the password" });
    expect(wrong.status).toBe(401);
    expect(await identitiesOf(bobId)).toHaveLength(0);
    const right = await browser.post("/user/oidc/link", { password: PASSWORD });
    expect(right.status, await right.clone().text()).toBe(303);
    expect(right.headers.get("location")).toBe("/user/dashboard");
    expect(browser.hasSession()).toBe(true);
    expect((await identitiesOf(bobId)).map((i) => i.subject)).toEqual(["bob"]);
    const [audit] = await ctx.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.action, "oidc.link"), eq(auditLog.targetId, String(bobId))));
    expect(audit!.actor).toBe("oidc:corp");
    // from now on the provider signs in straight to bob
    const later = await new Browser().signInAs("corp", "bob");
    expect(later.res.headers.get("location")).toBe("/user/dashboard");
  });

  test("signing in to the account another way (a passkey, say) since the request confirms the link, with a button", async () => {
    const fay = await ctx.admin("POST", "/api/admin/users", { username: "fay", email: "fay@example.com" });
    await ctx.admin("PATCH", `/api/admin/users/${fay.id}`, { password: PASSWORD });
    // a session begun before the link request proves nothing
    const early = new Browser();
    expect((await early.post("/user/login", { login: "fay", password: PASSWORD })).status).toBe(303);
    expect((await early.signInAs("corp", "fay")).res.headers.get("location")).toBe("/user/oidc/link");
    const stale = await (await early.get("/user/oidc/link")).text();
    expect(stale).not.toContain("/user/oidc/link/session");
    const token = /<input type="hidden" name="_csrf" value="([^"]+)"/.exec(await (await early.get("/user/dashboard")).text())![1]!;
    expect((await early.post("/user/oidc/link/session", { _csrf: token })).status).toBe(400);
    expect(await identitiesOf(fay.id)).toHaveLength(0);
    // a sign-in to fay after the request, in the same browser: the page offers Link
    const browser = new Browser();
    expect((await browser.signInAs("corp", "fay")).res.headers.get("location")).toBe("/user/oidc/link");
    expect((await browser.post("/user/login", { login: "fay", password: PASSWORD })).status).toBe(303);
    const page = await (await browser.get("/user/oidc/link")).text();
    expect(page).toContain('action="/user/oidc/link/session"');
    expect(page).toContain("You are signed in as <b>fay</b>");
    const formToken = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    // without the session's form token: refused
    expect((await browser.post("/user/oidc/link/session", {})).status).toBe(403);
    const linked = await browser.post("/user/oidc/link/session", { _csrf: formToken });
    expect(linked.status).toBe(303);
    expect((await identitiesOf(fay.id)).map((i) => i.subject)).toEqual(["fay"]);
    // used once
    expect((await browser.post("/user/oidc/link/session", { _csrf: formToken })).status).toBe(400);
  });

  test("two identities racing for one account: exactly one is linked", async () => {
    const erin = await ctx.admin("POST", "/api/admin/users", { username: "erin", email: "erin@example.com" });
    await ctx.admin("PATCH", `/api/admin/users/${erin.id}`, { password: PASSWORD });
    // two people at the provider claim erin's verified address
    const idp2 = await startOidcProvider({
      redirectUris: [`${BASE_URL}/user/oidc/race/callback`],
      people: { erin1: { email: "erin@example.com", email_verified: true }, erin2: { email: "erin@example.com", email_verified: true } },
    });
    try {
      await addProvider({ slug: "race", label: "Race", issuer: idp2.issuer, client_id: idp2.clientId, client_secret: idp2.clientSecret });
      const [one, two] = [new Browser(), new Browser()];
      for (const [b, who] of [
        [one, "erin1"],
        [two, "erin2"],
      ] as const) {
        const { res } = await b.signInAs("race", who);
        expect(res.headers.get("location")).toBe("/user/oidc/link");
      }
      const answers = await Promise.all([one.post("/user/oidc/link", { password: PASSWORD }), two.post("/user/oidc/link", { password: PASSWORD })]);
      expect(answers.map((r) => r.status).sort()).toEqual([303, 403]);
      const loser = answers.find((r) => r.status === 403)!;
      expect(await loser.text()).toContain("already linked to another identity at this provider");
      expect(await identitiesOf(erin.id)).toHaveLength(1);
    } finally {
      await idp2.close();
    }
  });
});

describe("tokens a real provider would not mint", () => {
  let slug: string;
  beforeAll(async () => {
    slug = "fake";
    await addProvider({ slug, label: "Fake", issuer: fake.issuer, client_id: "image-host", client_secret: "s", auto_provision: true });
  });

  const claimsFor = (auth: URLSearchParams, extra: Record<string, unknown> = {}) => {
    const now = Math.floor(Date.now() / 1000);
    return {
      iss: fake.issuer,
      aud: "image-host",
      sub: "fake-1",
      iat: now,
      exp: now + 300,
      nonce: auth.get("nonce"),
      email: "fake1@idp.test",
      email_verified: true,
      ...extra,
    };
  };

  async function signInWith(mint: FakeIssuer["mint"]) {
    fake.mint = mint;
    const browser = new Browser();
    const auth = await browser.start(slug);
    const back = await fetch(auth, { redirect: "manual" });
    const res = await browser.get(back.headers.get("location")!);
    return { browser, res };
  }

  test("a good token signs in (the fake issuer is a fair test)", async () => {
    const { res, browser } = await signInWith((auth) => ({ id_token: signJwt(claimsFor(auth), fake.key) }));
    expect(res.status, await res.clone().text()).toBe(303);
    expect(browser.hasSession()).toBe(true);
  });

  const refusedCases: [string, FakeIssuer["mint"]][] = [
    ["an unsigned token (alg: none)", (auth) => ({ id_token: signJwt(claimsFor(auth), null) })],
    ["a token signed with a key the issuer does not publish", (auth) => ({ id_token: signJwt(claimsFor(auth), fake.strangerKey) })],
    ["a token of another issuer", (auth) => ({ id_token: signJwt(claimsFor(auth, { iss: "https://evil.example" }), fake.key) })],
    ["a token for another client", (auth) => ({ id_token: signJwt(claimsFor(auth, { aud: "someone-else" }), fake.key) })],
    [
      "an expired token",
      (auth) => ({ id_token: signJwt(claimsFor(auth, { iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 }), fake.key) }),
    ],
  ];
  for (const [name, mint] of refusedCases) {
    test(`${name} signs nobody in`, async () => {
      const sessionsBefore = (await ctx.db.select().from(sessions)).length;
      const { res, browser } = await signInWith(mint);
      expect(res.status).toBe(400);
      expect(await res.text()).toContain("failed its checks");
      expect(browser.hasSession()).toBe(false);
      expect((await ctx.db.select().from(sessions)).length).toBe(sessionsBefore);
    });
  }

  test("a replayed nonce: a token minted for an earlier sign-in is refused in a new one", async () => {
    let first: URLSearchParams | null = null;
    await signInWith((auth) => {
      first = auth;
      return { id_token: signJwt(claimsFor(auth, { sub: "fake-2", email: "fake2@idp.test" }), fake.key) };
    });
    const { res, browser } = await signInWith(() => ({ id_token: signJwt(claimsFor(first!, { sub: "fake-2", email: "fake2@idp.test" }), fake.key) }));
    expect(res.status).toBe(400);
    expect(browser.hasSession()).toBe(false);
  });
});

describe("provider-only sign-in", () => {
  test("with password sign-in off the page shows only the buttons, and a password signs nobody in", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { password_sign_in: false });
    try {
      const browser = new Browser();
      const page = await (await browser.get("/user/login")).text();
      expect(page).not.toContain('name="password"');
      expect(page).toContain("Sign in with Corp");
      const res = await browser.post("/user/login", { login: "bob", password: PASSWORD });
      expect(res.status).toBe(403);
      expect(await res.text()).toContain("Password sign-in is switched off");
      expect(browser.hasSession()).toBe(false);
      // sign-up makes password accounts: refused too, even while registration is open
      await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
      const signUp = await new Browser().get("/user/register");
      expect(signUp.status).toBe(403);
      expect(await signUp.text()).toContain("Sign-up with a password is off");
      expect((await new Browser().post("/user/register", { username: "newcomer", email: "newcomer@example.com", password: PASSWORD })).status).toBe(403);
      expect(await userNamed("newcomer")).toBeUndefined();
      // the providers still sign in
      expect((await browser.signInAs("corp", "alice")).res.status).toBe(303);
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { password_sign_in: true, registration_enabled: false });
    }
    expect((await ctx.admin("GET", "/api/admin/settings")).password_sign_in).toBe(true);
  });
});

describe("the admin page of providers", () => {
  let admin: Browser;
  let formToken: string;
  const adminPost = (path: string, fields: Record<string, string>) => admin.post(path, { _csrf: formToken, ...fields });

  beforeAll(async () => {
    const made = await ctx.admin("POST", "/api/admin/users", { username: "root", email: "root@example.com", role: "admin" });
    await ctx.admin("PATCH", `/api/admin/users/${made.id}`, { password: PASSWORD });
    admin = new Browser();
    expect((await admin.post("/user/login", { login: "root", password: PASSWORD })).status).toBe(303);
    const page = await (await admin.get("/user/admin/sign-in")).text();
    formToken = /<input type="hidden" name="_csrf" value="([^"]+)"/.exec(page)![1]!;
  });

  test("lists the providers with their redirect URI, adds, changes and removes one through the admin API", async () => {
    const page = await (await admin.get("/user/admin/sign-in")).text();
    expect(page).toContain("Sign in with Corp");
    expect(page).toContain(`${BASE_URL}/user/oidc/corp/callback`);
    expect(page).not.toContain(idp.clientSecret);

    const refused = await adminPost("/user/admin/sign-in", {
      label: "Bad",
      slug: "bad",
      issuer: "http://auth.example.com",
      client_id: "x",
      scopes: "openid",
      username_claim: "preferred_username",
      email_claim: "email",
    });
    expect(refused.status).toBe(422);
    expect(await refused.text()).toContain("it must use https");

    const made = await adminPost("/user/admin/sign-in", {
      label: "Keycloak",
      slug: "keycloak",
      issuer: "https://sso.example.com/realms/home",
      client_id: "images",
      client_secret: "kc-secret",
      scopes: "openid  profile email",
      username_claim: "preferred_username",
      email_claim: "email",
      groups_claim: "realm_access.roles",
      admin_group: "image-admin",
      group_map: `family = ${ctx.defaultGroupId}`,
      enabled: "1",
    });
    expect(made.status, await made.clone().text()).toBe(303);
    const editUrl = made.headers.get("location")!;
    const { providers } = await ctx.admin("GET", "/api/admin/oidc-providers");
    const kc = providers.find((p: { slug: string }) => p.slug === "keycloak");
    expect(kc).toMatchObject({
      label: "Keycloak",
      issuer: "https://sso.example.com/realms/home",
      client_secret_set: true,
      scopes: "openid profile email",
      groups_claim: "realm_access.roles",
      admin_group: "image-admin",
      group_map: [{ value: "family", group_id: ctx.defaultGroupId }],
      auto_provision: false,
      enabled: true,
    });
    const edit = await (await admin.get(editUrl)).text();
    expect(edit).toContain("Provider saved.");
    expect(edit).not.toContain("kc-secret");

    // an empty secret field keeps the secret
    const changed = await adminPost(`/user/admin/sign-in/${kc.id}`, {
      label: "Keycloak (home)",
      slug: "keycloak",
      issuer: kc.issuer,
      client_id: "images",
      client_secret: "",
      scopes: "openid profile email",
      username_claim: "preferred_username",
      email_claim: "email",
      groups_claim: "",
      admin_group: "",
      group_map: "",
    });
    expect(changed.status).toBe(303);
    expect(await ctx.admin("GET", `/api/admin/oidc-providers/${kc.id}`)).toMatchObject({
      label: "Keycloak (home)",
      client_secret_set: true,
      groups_claim: null,
      admin_group: null,
      group_map: [],
      enabled: false,
    });

    const removed = await adminPost(`/user/admin/sign-in/${kc.id}/delete`, { confirmed: "1" });
    expect(removed.status).toBe(303);
    const gone = await ctx.json(`/api/admin/oidc-providers/${kc.id}`, { headers: { authorization: "Bearer test-admin-token-0123456789" } });
    expect(gone.status).toBe(404);
  });

  test("the Settings page switches password sign-in", async () => {
    const page = await (await admin.get("/user/admin/settings")).text();
    expect(page).toContain('name="password_sign_in"');
    const saved = await adminPost("/user/admin/settings", { api_enabled: "1", registration_enabled: "", guest_upload_enabled: "" });
    expect(saved.status).toBe(303);
    expect((await ctx.admin("GET", "/api/admin/settings")).password_sign_in).toBe(false);
    await adminPost("/user/admin/settings", { api_enabled: "1", password_sign_in: "1" });
    expect((await ctx.admin("GET", "/api/admin/settings")).password_sign_in).toBe(true);
  });
});

describe("bounds", () => {
  test("one address starts at most 20 sign-ins at once, then 429 with Retry-After", async () => {
    const browser = new Browser();
    const answers = [];
    for (let i = 0; i < 21; i++) answers.push((await browser.get("/user/oidc/corp/start")).status);
    expect(answers.slice(0, 20).every((s) => s === 303)).toBe(true);
    const refused = await browser.get("/user/oidc/corp/start");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await refused.text()).toContain("Too many sign-ins started from your address");
    // another address is not affected
    expect((await new Browser().get("/user/oidc/corp/start")).status).toBe(303);
  });

  test("the pages of a provider sign-in are in Chinese for a zh-CN browser", async () => {
    const zh = async (path: string) => {
      const res = await ctx.request(`${BASE_URL}${path}`, { headers: { "accept-language": "zh-CN", "x-forwarded-for": "198.51.100.250" } });
      return res.text();
    };
    const login = await zh("/user/login");
    expect(login).toContain("或");
    expect(login).toContain("Sign in with Corp"); // the administrator's own label
    const none = await zh("/user/oidc/link");
    expect(none).toContain("此浏览器中没有待确认的关联");
    expect(none).not.toContain("There is no link to confirm");
  });
});
