/**
 * The pages' languages and identity: both catalogs hold every key (and parse as ICU messages), the language follows
 * the account, then Accept-Language, then the site's default; the theme and the site's identity reach the pages.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { parse } from "@formatjs/icu-messageformat-parser";
import { settings, users } from "../../src/db/schema.ts";
import { servicesOf } from "../../src/services/index.ts";
import { catalogs, fromAcceptLanguage, LOCALES, negotiate } from "../../src/web/i18n/index.ts";
import { accentStylesheet } from "../../src/web/site.ts";
import { createTestContext, type TestContext } from "../support/harness.ts";
import { visitorClass } from "../support/visitor.ts";

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx?.close());

let addressSeq = 0;
const Visitor = visitorClass(
  () => ctx,
  () => `198.51.100.${++addressSeq}`,
);
const PASSWORD = "correct horse battery";
async function signedIn() {
  const username = `lang${++addressSeq}`;
  const user = await ctx.createUser({ username, email: `${username}@example.com`, password: PASSWORD });
  const visitor = new Visitor();
  expect((await visitor.signIn(username)).status).toBe(303);
  return { user, visitor };
}
const get = (visitor: InstanceType<typeof Visitor>, path: string, headers: Record<string, string>) =>
  ctx.request(path, { headers: { accept: "text/html", "x-forwarded-for": visitor.address, cookie: visitor.cookie ?? "", ...headers }, redirect: "manual" });

describe("catalogs", () => {
  test("every key is in every language, and every message parses as ICU with the English one's arguments", () => {
    const keys = Object.keys(catalogs.en).sort();
    expect(keys.length).toBeGreaterThan(50);
    for (const locale of LOCALES) {
      const catalog = catalogs[locale] as Record<string, string>;
      expect(Object.keys(catalog).sort(), locale).toEqual(keys);
      for (const key of keys) {
        expect(typeof catalog[key], `${locale} ${key}`).toBe("string");
        expect(catalog[key]!.trim().length, `${locale} ${key} is empty`).toBeGreaterThan(0);
        expect(() => parse(catalog[key]!), `${locale} ${key}`).not.toThrow();
      }
    }
    // the arguments a message takes are the same in both languages
    const args = (message: string) =>
      [...new Set([...message.matchAll(/\{\s*([A-Za-z_]\w*)\s*[,}]/g)].map((m) => m[1]))].filter((a) => a !== "count" && a !== "#").sort();
    for (const key of keys) {
      const en = args((catalogs.en as Record<string, string>)[key]!);
      const zh = args((catalogs["zh-CN"] as Record<string, string>)[key]!);
      for (const a of zh) expect(en, `${key}: zh-CN uses {${a}} that English does not`).toContain(a);
    }
  });
});

describe("which language", () => {
  test("Accept-Language: q-values and order; any Chinese is zh-CN; the account's choice wins, then the browser, then the site", () => {
    expect(fromAcceptLanguage("zh-TW,zh;q=0.9,en;q=0.8")).toBe("zh-CN");
    expect(fromAcceptLanguage("fr-FR,fr;q=0.9,en-US;q=0.8,zh;q=0.7")).toBe("en");
    expect(fromAcceptLanguage("en;q=0.1, zh-Hans;q=0.9")).toBe("zh-CN");
    expect(fromAcceptLanguage("fr, de")).toBeNull();
    expect(fromAcceptLanguage("zh;q=0")).toBeNull();
    expect(negotiate("zh-CN", "en", "en")).toBe("zh-CN");
    expect(negotiate(null, "zh", "en")).toBe("zh-CN");
    expect(negotiate(null, "fr", "zh-CN")).toBe("zh-CN");
    expect(negotiate("xx", undefined, "nope")).toBe("en");
  });

  test("pages: <html lang> follows the browser, the account's choice in the account menu, and the site's default", async () => {
    const { user, visitor } = await signedIn();
    let html = await (await get(visitor, "/user/dashboard", { "accept-language": "zh-CN,zh;q=0.9" })).text();
    expect(html).toContain('<html lang="zh-CN"');
    expect(html).toContain("<title>概览 · Picshelf</title>");
    html = await (await get(visitor, "/user/dashboard", { "accept-language": "en-GB" })).text();
    expect(html).toContain('<html lang="en"');
    // the account's choice, saved on the account, wins over the browser
    const saved = await visitor.post("/user/preferences", { theme: "system", locale: "zh-CN", back: "/user/images?page=2" });
    expect([saved.status, saved.headers.get("location")]).toEqual([303, "/user/images?page=2"]);
    const [row] = await ctx.db.select().from(users).where(eq(users.id, user.id));
    expect(row!.locale).toBe("zh-CN");
    html = await (await get(visitor, "/user/dashboard", { "accept-language": "en" })).text();
    expect(html).toContain('<html lang="zh-CN"');
    // the site's default, for a browser that asks for none of ours
    await visitor.post("/user/preferences", { theme: "system", locale: "" });
    await ctx.db.update(settings).set({ defaultLocale: "zh-CN" });
    servicesForget();
    html = await (await ctx.request("/user/login", { headers: { accept: "text/html", "accept-language": "fr" } })).text();
    expect(html).toContain('<html lang="zh-CN"');
    await ctx.db.update(settings).set({ defaultLocale: "en" });
    servicesForget();
    // a bad choice is refused, nothing saved
    expect((await visitor.post("/user/preferences", { theme: "sepia", locale: "" })).status).toBe(422);
    expect((await visitor.post("/user/preferences", { theme: "dark", locale: "fr" })).status).toBe(422);
    // the API's messages stay English whatever the browser asks
    const api = await ctx.json("/api/v1/profile", { headers: { "accept-language": "zh-CN" } });
    expect(api.status).toBe(401);
    expect(api.body.message).toMatch(/^[\x20-\x7e]+$/);
  });

  test("the theme: a cookie the server reads, rendered as <html data-theme>; system leaves it to the device", async () => {
    const { visitor } = await signedIn();
    const res = await get(visitor, "/user/account", {});
    expect(await res.text()).toContain('<html lang="en">');
    const saved = await ctx.request("/user/preferences", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: "http://img.test", cookie: visitor.cookie!, "x-forwarded-for": visitor.address },
      body: new URLSearchParams({ _csrf: visitor.formToken!, theme: "dark", locale: "" }).toString(),
      redirect: "manual",
    });
    expect(saved.status).toBe(303);
    const cookie = saved.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^ih_theme=dark; Max-Age=\d+; Path=\/user; HttpOnly; SameSite=Lax$/);
    const dark = await (await get(visitor, "/user/account", { cookie: `${visitor.cookie}; ih_theme=dark` })).text();
    expect(dark).toContain('<html lang="en" data-theme="dark">');
    // the account menu's switch: on, and it turns dark mode off (a remembered light theme)
    expect(dark).toContain('<button name="theme" value="light" aria-pressed="true">Dark mode</button>');
    const light = await (await get(visitor, "/user/account", { cookie: `${visitor.cookie}; ih_theme=light` })).text();
    expect(light).toContain('<html lang="en" data-theme="light">');
    expect(light).toContain('<button name="theme" value="dark" aria-pressed="false">Dark mode</button>');
    // the account menu sends one choice: the other stays; the answer goes back to the page it was used on
    const menu = (fields: Record<string, string>, referer?: string) =>
      ctx.request("/user/preferences", {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          origin: "http://img.test",
          cookie: `${visitor.cookie}; ih_theme=dark`,
          "x-forwarded-for": visitor.address,
          ...(referer ? { referer } : {}),
        },
        body: new URLSearchParams({ _csrf: visitor.formToken!, ...fields }).toString(),
        redirect: "manual",
      });
    const language = await menu({ locale: "zh-CN" }, "http://img.test/user/images?page=2");
    expect([language.status, language.headers.get("location"), language.headers.get("set-cookie")]).toEqual([303, "/user/images?page=2", null]);
    expect(await (await get(visitor, "/user/account", { cookie: `${visitor.cookie}; ih_theme=dark` })).text()).toContain(
      '<html lang="zh-CN" data-theme="dark">',
    );
    const themeOnly = await menu({ theme: "light" }, "http://img.test/user/albums");
    expect([themeOnly.status, themeOnly.headers.get("location")]).toEqual([303, "/user/albums"]);
    expect(themeOnly.headers.get("set-cookie")).toMatch(/^ih_theme=light;/);
    expect(await (await get(visitor, "/user/account", { cookie: `${visitor.cookie}; ih_theme=light` })).text()).toContain(
      '<html lang="zh-CN" data-theme="light">',
    );
    // a Referer of another site, or outside the pages, is not followed
    for (const referer of ["https://evil.example/user/albums", "http://img.test/api/v1/profile", "http://img.test/user/logout"])
      expect((await menu({ locale: "en" }, referer)).headers.get("location")).toBe("/user/dashboard");
    // another origin cannot set it
    const forged = await visitor.post("/user/preferences", { theme: "dark", locale: "" }, { origin: "https://evil.example" });
    expect(forged.status).toBe(403);
  });
});

/** The settings row is cached a second (lookups); these tests change it under the cache. */
const servicesForget = () => servicesOf(ctx.deps).lookups.clear();

describe("the site's identity", () => {
  test("name, accent, logo and favicon from the settings: in the header, the titles, the sign-in page and the API reference", async () => {
    const png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    await ctx.db.update(settings).set({ siteName: "Cat Pictures", accentColor: "#ffcc00", siteLogo: png, siteFavicon: png });
    servicesForget();
    const login = await (await new Visitor().get("/user/login")).text();
    expect(login).toContain("<title>Sign in · Cat Pictures</title>");
    const logo = /<a class="brand" href="\/user\/login"><img src="(\/user\/site\/logo\?v=[0-9a-f]{12})" alt="" height="28"\/>Cat Pictures<\/a>/.exec(
      login,
    )?.[1];
    const icon = /<link rel="icon" href="(\/user\/site\/favicon\?v=[0-9a-f]{12})"/.exec(login)?.[1];
    const accent = /<link rel="stylesheet" href="(\/user\/site\/accent\.css\?v=[0-9a-f]{12})"/.exec(login)?.[1];
    expect([logo, icon, accent].every(Boolean)).toBe(true);
    for (const href of [logo!, icon!]) {
      const res = await ctx.request(href);
      expect([res.status, res.headers.get("content-type")]).toEqual([200, "image/png"]);
      expect(
        Buffer.from(await res.arrayBuffer())
          .subarray(1, 4)
          .toString(),
      ).toBe("PNG");
    }
    const css = await (await ctx.request(accent!)).text();
    expect(css).toContain("--accent:");
    const docs = await (await ctx.request("/docs")).text();
    expect(docs).toContain("<title>Cat Pictures API</title>");
    await ctx.db.update(settings).set({ siteName: "", accentColor: "", siteLogo: null, siteFavicon: null });
    servicesForget();
    const plain = await (await new Visitor().get("/user/login")).text();
    expect(plain).toContain("<title>Sign in · Picshelf</title>");
    // the default mark is the stylesheet's, before the name
    expect(plain).toContain('<a class="brand" href="/user/login">Picshelf</a>');
    expect(plain).not.toContain("/user/site/");
  });

  test("an accent colour is adjusted until text in it reads at 4.5:1 on the light and the dark background", () => {
    const lum = (hex: string) => {
      const c = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16) / 255).map((s) => (s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4));
      return 0.2126 * c[0]! + 0.7152 * c[1]! + 0.0722 * c[2]!;
    };
    const ratio = (a: string, b: string) => {
      const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
      return (x! + 0.05) / (y! + 0.05);
    };
    for (const colour of ["#ffcc00", "#000080", "#ff0000", "#777777", "#ffffff", "#000000"]) {
      const css = accentStylesheet(colour);
      const [light, dark] = [...css.matchAll(/--accent: (#[0-9a-f]{6})/g)].map((m) => m[1]!);
      expect(ratio(light!, "#f6f7f9"), colour).toBeGreaterThanOrEqual(4.5);
      expect(ratio(light!, "#ffffff"), colour).toBeGreaterThanOrEqual(4.5);
      expect(ratio(dark!, "#15181c"), colour).toBeGreaterThanOrEqual(4.5);
    }
  });
});
