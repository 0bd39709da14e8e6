/**
 * The Account page's routes, in-process: the User-Agent a session keeps, the email change, the list of
 * the account's sessions and ending one or all the others, the authorization of each new form, the no-script revoke
 * confirmation of the API tokens page, and the upload page's limits handed to its script.
 * The browser's side is test/browser/account.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { sessions, users } from "../../src/db/schema.ts";
import { describeUserAgent } from "../../src/services/sessions.ts";
import { createTestContext, type TestContext } from "../support/harness.ts";
import { expectStatus } from "../support/status.ts";
import { visitorClass } from "../support/visitor.ts";

let ctx: TestContext;

beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx?.close());

const PASSWORD = "correct horse battery";
let seq = 0;
let addressSeq = 0;
const nextAddress = () => `203.0.113.${++addressSeq}`;

const CHROME_LINUX = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const SAFARI_IPHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1";

async function userWithPassword() {
  const username = `acct${++seq}_${Math.random().toString(36).slice(2, 6)}`;
  const user = await ctx.createUser({ username, email: `${username}@example.com`, password: PASSWORD });
  return { ...user, username, email: `${username}@example.com` };
}

const Visitor = visitorClass(() => ctx, nextAddress);

/** Signs in as a browser with this User-Agent would, and reads the form token. */
async function signInAs(username: string, userAgent?: string, password = PASSWORD) {
  const visitor = new Visitor();
  const res = await visitor.post(
    "/user/login",
    { login: username, password },
    { formToken: null, headers: userAgent === undefined ? {} : { "user-agent": userAgent } },
  );
  expect(res.status, await res.clone().text()).toBe(303);
  expect((await visitor.get("/user/account")).status).toBe(200);
  return visitor;
}

async function signedIn(userAgent = CHROME_LINUX) {
  const user = await userWithPassword();
  return { user, visitor: await signInAs(user.username, userAgent) };
}

const sessionsOf = (userId: number) => ctx.db.select().from(sessions).where(eq(sessions.userId, userId));
const emailOf = async (userId: number) => (await ctx.db.select().from(users).where(eq(users.id, userId)))[0]!.email;
const location = (res: Response) => res.headers.get("location");

describe("the User-Agent of a session", () => {
  test("sign-in keeps it, control characters removed and at most 300 characters; none is an empty one", async () => {
    const user = await userWithPassword();
    await signInAs(user.username, CHROME_LINUX);
    await signInAs(user.username, `Agent\twith a tab ${"x".repeat(400)}`);
    await signInAs(user.username, "");
    const kept = (await sessionsOf(user.id)).map((s) => s.userAgent);
    expect(kept).toContain(CHROME_LINUX);
    const long = kept.find((ua) => ua.startsWith("Agent"))!;
    expect(long.length).toBe(300);
    expect(long).toStartWith("Agentwith a tab x");
    expect(kept).toContain("");
  });

  test("sign-up keeps it too", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
    try {
      const username = `signup${++seq}`;
      const visitor = new Visitor();
      const res = await visitor.post(
        "/user/register",
        { username, email: `${username}@example.com`, password: PASSWORD },
        { formToken: null, headers: { "user-agent": SAFARI_IPHONE } },
      );
      expect(res.status).toBe(303);
      const [row] = await ctx.db.select().from(users).where(eq(users.username, username));
      expect((await sessionsOf(row!.id)).map((s) => s.userAgent)).toEqual([SAFARI_IPHONE]);
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: false });
    }
  });

  test("described in plain words", () => {
    expect(describeUserAgent(CHROME_LINUX)).toBe("Chrome on Linux");
    expect(describeUserAgent(SAFARI_IPHONE)).toBe("Safari on iPhone");
    expect(describeUserAgent("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0")).toBe("Firefox on Windows");
    expect(
      describeUserAgent("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0"),
    ).toBe("Edge on macOS");
    expect(describeUserAgent("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36")).toBe(
      "Chrome on Android",
    );
    expect(describeUserAgent("curl/8.5.0")).toBe("Unknown browser");
    expect(describeUserAgent("")).toBe("Unknown browser");
  });
});

describe("changing the email", () => {
  test("with the current password: stored in lower case, shown, and it signs in", async () => {
    const { user, visitor } = await signedIn();
    const email = `New.${user.username}@Example.org`;
    const res = await visitor.post("/user/account/email", { email, current_password: PASSWORD });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain(`Your email address is now ${email.toLowerCase()}.`);
    expect(html).toContain(`data-testid="current-email">${email.toLowerCase()}<`);
    expect(await emailOf(user.id)).toBe(email.toLowerCase());
    expect(expectStatus(await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) }), 200).data.email).toBe(email.toLowerCase());
    expect((await new Visitor().signIn(email.toLowerCase())).status).toBe(303);
    // the session that changed it goes on
    expect((await visitor.get("/user/dashboard")).status).toBe(200);
  });

  test("a wrong or missing current password: 401 / 422 on the page, nothing changed", async () => {
    const { user, visitor } = await signedIn();
    const wrong = await visitor.post("/user/account/email", { email: `other-${user.email}`, current_password: "not my password" });
    expect(wrong.status).toBe(401);
    const html = await wrong.text();
    expect(html).toContain("This is not your current password.");
    expect(html).toContain('aria-describedby="email_password-hint email_password-error"');
    expect(html).toContain(`value="other-${user.email}"`); // kept for another try
    const missing = await visitor.post("/user/account/email", { email: `other-${user.email}` });
    expect(missing.status).toBe(422);
    expect(await missing.text()).toContain("Enter your current password.");
    expect(await emailOf(user.id)).toBe(user.email);
  });

  test("a taken email is a 422 that does not say whose; the case does not matter", async () => {
    const { user, visitor } = await signedIn();
    const otherName = `owner${++seq}_${Math.random().toString(36).slice(2, 6)}`;
    const other = {
      ...(await ctx.createUser({ username: otherName, email: `mailbox${seq}@example.net` })),
      username: otherName,
      email: `mailbox${seq}@example.net`,
    };
    for (const email of [other.email, other.email.toUpperCase()]) {
      const res = await visitor.post("/user/account/email", { email, current_password: PASSWORD });
      expect(res.status).toBe(422);
      const html = await res.text();
      expect(html).toContain("This email address is already used by another account.");
      expect(html).not.toContain(other.username);
    }
    expect(await emailOf(user.id)).toBe(user.email);
    expect(await emailOf(other.id)).toBe(other.email);
  });

  test("an invalid, empty, too long or unchanged email is a 422 with the field's error", async () => {
    const { user, visitor } = await signedIn();
    for (const [email, message] of [
      ["not an email", "Enter a valid email address"],
      ["a@b", "Enter a valid email address"],
      ["", "Enter the new email address."],
      [`${"x".repeat(250)}@example.com`, "Use at most 254 characters."],
      [user.email.toUpperCase(), "This is already your email address."],
    ] as const) {
      const res = await visitor.post("/user/account/email", { email, current_password: PASSWORD });
      expect(res.status, email).toBe(422);
      const html = await res.text();
      expect(html).toContain(message);
      expect(html).toContain('id="email-error"');
      expect(html).toContain('aria-invalid="true"');
    }
    // a control character is the forms' 422
    expect((await visitor.post("/user/account/email", { email: "a\u0001@example.com", current_password: PASSWORD })).status).toBe(422);
    expect(await emailOf(user.id)).toBe(user.email);
  });

  test("wrong current passwords count with those of the password form: 5, then 429", async () => {
    const { visitor, user } = await signedIn();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await visitor.post("/user/account/email", { email: `x${i}@example.com`, current_password: "guess" })).status);
    for (let i = 0; i < 3; i++) {
      statuses.push(
        (await visitor.post("/user/account/password", { current_password: "guess", new_password: "a new password 9", new_password_again: "a new password 9" }))
          .status,
      );
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    const throttled = await visitor.post("/user/account/email", { email: "y@example.com", current_password: PASSWORD });
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get("retry-after")).toBeTruthy();
    expect(await emailOf(user.id)).toBe(user.email);
  });
});

describe("the account's sessions", () => {
  test("are listed with device, address, dates in UTC; this one is marked", async () => {
    const { user, visitor } = await signedIn(CHROME_LINUX);
    const phone = await signInAs(user.username, SAFARI_IPHONE);
    const curl = await signInAs(user.username, "curl/8.5.0");
    const html = await (await visitor.get("/user/account")).text();
    expect(html).toContain("<strong>Chrome on Linux</strong>");
    expect(html).toContain("<strong>Safari on iPhone</strong>");
    expect(html).toContain("<strong>Unknown browser</strong>");
    for (const address of [visitor.address, phone.address, curl.address]) expect(html).toContain(`<td data-label="Address">${address}</td>`);
    expect([...html.matchAll(/this session</g)].length).toBe(1);
    // this session's row signs out; the others end
    const mine = (await sessionsOf(user.id)).find((s) => s.ip === visitor.address)!;
    const row = new RegExp(`<tr data-session="${mine.id}" class="current">.*?</tr>`).exec(html)![0];
    expect(row).toContain("this session");
    expect(row).toContain('action="/user/logout"');
    expect([...html.matchAll(/action="\/user\/account\/sessions\/\d+\/end"/g)].length).toBe(2);
    expect(html).toContain("Sign out everywhere else (2 other sessions)");
    // every date says its zone, with the instant in datetime for the page's script
    const times = [...html.matchAll(/<time datetime="([^"]+)">([^<]+)<\/time>/g)];
    expect(times.length).toBe(6);
    for (const [, iso, shown] of times) {
      expect(iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(shown).toBe(`${iso!.slice(0, 10)} ${iso!.slice(11, 16)} UTC`);
    }
    // no id twice on the page
    const ids = [...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("ending another session signs that browser out; another account's session is 404 and goes on", async () => {
    const { user, visitor } = await signedIn();
    const phone = await signInAs(user.username, SAFARI_IPHONE);
    const theirs = await signedIn();
    const phoneSession = (await sessionsOf(user.id)).find((s) => s.ip === phone.address)!;
    const res = await visitor.post(`/user/account/sessions/${phoneSession.id}/end`);
    expect(res.status).toBe(303);
    expect(location(res)).toBe("/user/account?ended");
    expect(await (await visitor.get("/user/account?ended")).text()).toContain("That session has ended");
    const after = await phone.get("/user/dashboard");
    expect(after.status).toBe(303);
    expect(location(after)).toStartWith("/user/login");
    expect((await sessionsOf(user.id)).map((s) => s.ip)).toEqual([visitor.address]);
    // again, or an unknown id, or another account's session: 404, and theirs still works
    expect((await visitor.post(`/user/account/sessions/${phoneSession.id}/end`)).status).toBe(404);
    const [other] = await sessionsOf(theirs.user.id);
    expect((await visitor.post(`/user/account/sessions/${other!.id}/end`)).status).toBe(404);
    for (const id of ["0", "abc", "99999999999", "-1"]) expect((await visitor.post(`/user/account/sessions/${id}/end`)).status).toBe(404);
    expect((await theirs.visitor.get("/user/dashboard")).status).toBe(200);
    expect((await visitor.get("/user/dashboard")).status).toBe(200);
  });

  test("ending this session is signing out", async () => {
    const { user, visitor } = await signedIn();
    const [mine] = await sessionsOf(user.id);
    const res = await visitor.post(`/user/account/sessions/${mine!.id}/end`);
    expect(res.status).toBe(303);
    expect(location(res)).toBe("/user/login?signed_out");
    expect(visitor.cookie).toBeUndefined();
    expect(await sessionsOf(user.id)).toEqual([]);
  });

  test("signing out everywhere else keeps this session only", async () => {
    const { user, visitor } = await signedIn();
    const others = [await signInAs(user.username, SAFARI_IPHONE), await signInAs(user.username, "curl/8.5.0")];
    const res = await visitor.post("/user/account/sessions/end-others");
    expect(res.status).toBe(303);
    expect(location(res)).toBe("/user/account?ended_all");
    const html = await (await visitor.get("/user/account?ended_all")).text();
    expect(html).toContain("Every other session has ended");
    expect(html).toContain("You are signed in nowhere else.");
    for (const other of others) expect((await other.get("/user/dashboard")).status).toBe(303);
    expect((await sessionsOf(user.id)).map((s) => s.ip)).toEqual([visitor.address]);
  });

  test("changing the password still ends the other sessions", async () => {
    const { user, visitor } = await signedIn();
    const phone = await signInAs(user.username, SAFARI_IPHONE);
    const res = await visitor.post("/user/account/password", {
      current_password: PASSWORD,
      new_password: "a new password 1",
      new_password_again: "a new password 1",
    });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain("you were signed out everywhere else");
    expect(html).not.toContain("Safari on iPhone");
    expect((await phone.get("/user/dashboard")).status).toBe(303);
  });
});

describe("the account's language and theme", () => {
  test("the page's form is the account menu's preferences: the language is saved on the account, the theme in this browser", async () => {
    const { user, visitor } = await signedIn();
    const page = await (await visitor.get("/user/account")).text();
    const form = /<form method="post" action="\/user\/preferences">((?:(?!<\/form>)[\s\S])*?id="account-theme"[\s\S]*?)<\/form>/.exec(page)![1]!;
    expect(form).toContain('<input type="hidden" name="back" value="/user/account?preferences"/>');
    expect(form).toContain('<option value="" selected="">As the browser says (English)</option>');
    expect(form).toContain('<option value="zh-CN" lang="zh-CN">简体中文</option>');
    expect(form).toContain('<option value="system" selected="">As the device</option>');

    const session = visitor.cookie;
    const saved = await visitor.post("/user/preferences", { locale: "zh-CN", theme: "dark", back: "/user/account?preferences" });
    expect(saved.status).toBe(303);
    expect(location(saved)).toBe("/user/account?preferences");
    expect(saved.headers.get("set-cookie")).toContain("ih_theme=dark");
    expect((await ctx.db.select().from(users).where(eq(users.id, user.id)))[0]!.locale).toBe("zh-CN");
    const res = await ctx.request("/user/account?preferences", {
      headers: { accept: "text/html", "accept-language": "en", "x-forwarded-for": visitor.address, cookie: `${session}; ih_theme=dark` },
    });
    const html = await res.text();
    expect(html).toContain('<html lang="zh-CN" data-theme="dark"');
    expect(html).toContain("你的偏好设置已保存。");
    expect(html).toContain('<option value="zh-CN" selected="" lang="zh-CN">简体中文</option>');
    expect(html).toContain('<option value="dark" selected="">深色</option>');
    // how each session signed in, in the page's language
    expect(html).toContain('<td data-label="登录方式">密码</td>');
  });
});

describe("authorization of the Account page's forms", () => {
  const forms = async (userId: number) => {
    const [session] = await sessionsOf(userId);
    return [
      ["/user/account/email", { email: "changed@example.com", current_password: PASSWORD }],
      [`/user/account/sessions/${session?.id ?? 1}/end`, {}],
      ["/user/account/sessions/end-others", {}],
    ] as const;
  };

  test("anonymous: 303 to the sign-in page, nothing changes", async () => {
    const { user } = await signedIn();
    const other = await signInAs(user.username, SAFARI_IPHONE);
    for (const [path, fields] of await forms(user.id)) {
      const res = await new Visitor().post(path, fields, { formToken: null });
      expect(res.status, path).toBe(303);
      expect(location(res)).toBe("/user/login");
    }
    expect((await sessionsOf(user.id)).length).toBe(2);
    expect(await emailOf(user.id)).toBe(user.email);
    expect((await other.get("/user/dashboard")).status).toBe(200);
  });

  test("from another site, or without the form token: 403, nothing changes", async () => {
    const { user, visitor } = await signedIn();
    const phone = await signInAs(user.username, SAFARI_IPHONE);
    const phoneSession = (await sessionsOf(user.id)).find((s) => s.ip === phone.address)!;
    const paths = [
      ["/user/account/email", { email: "changed@example.com", current_password: PASSWORD }],
      [`/user/account/sessions/${phoneSession.id}/end`, {}],
      ["/user/account/sessions/end-others", {}],
    ] as const;
    for (const [path, fields] of paths) {
      for (const options of [{ origin: "https://evil.example" }, { origin: null }, { formToken: null }, { formToken: phone.formToken }]) {
        const res = await visitor.post(path, fields, options);
        expect(res.status, `${path} ${JSON.stringify(options)}`).toBe(403);
        expect(await res.text()).toMatch(/another site, or it has expired/);
      }
    }
    expect((await sessionsOf(user.id)).length).toBe(2);
    expect(await emailOf(user.id)).toBe(user.email);
    expect((await phone.get("/user/dashboard")).status).toBe(200);
  });

  test("with the site's API switch off: 403, nothing changes", async () => {
    const { user, visitor } = await signedIn();
    const phone = await signInAs(user.username, SAFARI_IPHONE);
    const list = await forms(user.id);
    await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: false });
    try {
      for (const [path, fields] of list) {
        const res = await visitor.post(path, fields);
        expect(res.status, path).toBe(403);
        expect(await res.text()).toContain("The API is disabled on this site.");
      }
      expect((await visitor.get("/user/account")).status).toBe(403);
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: true });
    }
    expect((await sessionsOf(user.id)).length).toBe(2);
    expect(await emailOf(user.id)).toBe(user.email);
    expect((await phone.get("/user/dashboard")).status).toBe(200);
  });

  test("a disabled account: its sessions end, and its forms are sent to sign in", async () => {
    const { user, visitor } = await signedIn();
    await signInAs(user.username, SAFARI_IPHONE);
    const list = await forms(user.id);
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { enabled: false });
    try {
      expect(await sessionsOf(user.id)).toEqual([]);
      for (const [path, fields] of list) {
        const res = await visitor.post(path, fields);
        expect(res.status, path).toBe(303);
        expect(location(res)).toBe("/user/login");
      }
      expect(await emailOf(user.id)).toBe(user.email);
    } finally {
      await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { enabled: true });
    }
    expect((await visitor.get("/user/account")).status).toBe(303); // enabling it again does not revive them
  });
});

describe("API tokens: telling them apart", () => {
  test("a token without a label is 'Token #id, created <date>' in the list, the script's confirmation and the no-script one", async () => {
    const { visitor } = await signedIn();
    await visitor.get("/user/tokens");
    expect((await visitor.post("/user/tokens", {})).status).toBe(200);
    expect((await visitor.post("/user/tokens", { label: "laptop" })).status).toBe(200);
    const html = await (await visitor.get("/user/tokens")).text();
    const ids = [...html.matchAll(/action="\/user\/tokens\/(\d+)\/revoke"/g)].map((m) => Number(m[1]));
    const [labelled, unlabelled] = ids; // newest first
    const name = new RegExp(`Token #${unlabelled}, created \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC`);
    expect(html).toMatch(new RegExp(`Token #${unlabelled}, created <time datetime="[^"]+">\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC</time>`));
    const confirm = (id: number) => new RegExp(`action="/user/tokens/${id}/revoke" data-confirm="([^"]+)"`).exec(html)![1]!;
    expect(confirm(unlabelled!)).toMatch(name);
    expect(confirm(labelled!)).toContain(`“laptop” (#${labelled})`);
    expect(html).toContain(`aria-label="Revoke “laptop” (#${labelled})"`);

    // without script the form says confirmed=0: the server asks, naming the token, and revokes nothing yet
    const ask = await visitor.post(`/user/tokens/${unlabelled}/revoke`, { confirmed: "0" });
    expect(ask.status).toBe(200);
    const page = await ask.text();
    expect(page).toMatch(new RegExp(`data-testid="token-name">Token #${unlabelled}, created \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC<`));
    expect(page).toContain('name="confirmed" value="1"');
    expect(await (await visitor.get("/user/tokens")).text()).toContain(`Token #${unlabelled}, created`);
    const done = await visitor.post(`/user/tokens/${unlabelled}/revoke`, { confirmed: "1" });
    expect(done.status).toBe(303);
    expect(await (await visitor.get("/user/tokens")).text()).not.toContain(`Token #${unlabelled},`);
    // a revoked one has no confirmation page
    expect((await visitor.post(`/user/tokens/${unlabelled}/revoke`, { confirmed: "0" })).status).toBe(404);
  });
});

describe("the upload page's limits", () => {
  test("the group's size limit and extensions are handed to the script, the limit written in the page's one unit", async () => {
    const { visitor } = await signedIn();
    const group = await ctx.admin("POST", "/api/admin/groups", {
      name: `small ${++seq}`,
      strategy_ids: [1],
      max_file_size_kb: 1536,
      allowed_extensions: ["png", "jpg"],
    });
    const { user: small } = await signedIn();
    await ctx.admin("PATCH", `/api/admin/users/${small.id}`, { group_id: group.id });
    const smallVisitor = await signInAs(small.username, CHROME_LINUX);
    const html = await (await smallVisitor.get("/user/upload")).text();
    expect(html).toContain(`data-max-bytes="${1536 * 1024}"`);
    expect(html).toContain('data-extensions="png,jpg"');
    expect(html).toContain('data-size-unit="MB"');
    expect(html).toContain('data-testid="max-size">1.5 MB<');
    // the default group: 10 MB
    const defaults = await (await visitor.get("/user/upload")).text();
    expect(defaults).toContain('data-size-unit="MB"');
    expect(defaults).toMatch(/data-testid="max-size">\d+\.\d MB</);
  });
});
