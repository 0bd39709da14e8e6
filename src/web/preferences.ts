/**
 * The account menu's preferences: the theme (a cookie of this browser, so that every page is rendered in it with no
 * flash) and the language (saved on the account, so that it follows the account to any browser).
 */
import type { Context, Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { updateUser } from "../db/repositories/users.ts";
import { validationError } from "../errors.ts";
import { formField, readForm } from "./form.ts";
import { isLocale, type Theme, THEMES } from "./i18n/index.ts";
import { BASE, isThisSite, requireSession, safeNext, type WebEnv } from "./session.ts";

const THEME_COOKIE = "ih_theme";
const YEAR = 365 * 86_400;

/** The theme this browser chose; "system" follows the device (prefers-color-scheme). */
export function themeOf<E extends WebEnv>(c: Context<E>): Theme {
  const value = getCookie(c, THEME_COOKIE);
  return value === "light" || value === "dark" ? value : "system";
}

export function register(web: Hono<WebEnv>) {
  web.post("/preferences", requireSession, async (c) => {
    const deps = c.get("deps");
    const { user } = c.get("signedIn");
    const form = await readForm(c);
    // each choice is optional: the account menu sends one, the account page both
    const theme = Object.hasOwn(form, "theme") ? (formField(form, "theme") as Theme) : undefined;
    const locale = Object.hasOwn(form, "locale") ? formField(form, "locale") : undefined;
    if (theme !== undefined && !THEMES.includes(theme)) throw validationError({ theme: ["Choose system, light or dark."] });
    if (locale !== undefined && locale !== "" && !isLocale(locale)) throw validationError({ locale: ["Choose a language of this site."] });
    const secure = deps.config.baseUrl.startsWith("https:");
    if (theme !== undefined && theme !== themeOf(c))
      setCookie(c, THEME_COOKIE, theme, { path: BASE, sameSite: "Lax", secure, httpOnly: true, maxAge: theme === "system" ? 0 : YEAR });
    if (locale !== undefined && (user.locale ?? "") !== locale) await updateUser(deps.db, user.id, { locale: locale || null });
    return c.redirect(safeNext(formField(form, "back") || sameSitePage(c)), 303);
  });
}

/** The page the menu was used on, from the Referer the pages send to their own site (Referrer-Policy: same-origin). */
function sameSitePage<E extends WebEnv>(c: Context<E>): string | undefined {
  const referer = c.req.header("referer");
  if (!referer) return undefined;
  try {
    const from = new URL(referer);
    return isThisSite(c, from.origin) ? from.pathname + from.search : undefined;
  } catch {
    return undefined;
  }
}
