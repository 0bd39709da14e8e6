/**
 * Sessions of the user center in HTTP terms: the cookie, the gates every signed-in page passes, and the
 * cross-site checks of state-changing requests. The sessions themselves are in services/sessions.ts.
 */
import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Group } from "../db/repositories/groups.ts";
import type { Session } from "../db/repositories/sessions.ts";
import type { User } from "../db/repositories/users.ts";
import { AppError, forbidden } from "../errors.ts";
import { accountGate, currentSettings, siteGate } from "../http/auth.ts";
import type { RequestEnv } from "../http/types.ts";
import { formTokenFor, isFormTokenOf, resolveSession, SESSION_MAX_MS } from "../services/sessions.ts";
import { readForm } from "./form.ts";
import { useAccountLocale } from "./i18n/index.ts";

/** Every page of the user center lives under this path, and so does its cookie: the API and the images never see it. */
export const BASE = "/user";
const COOKIE = "ih_session";
/** The form field and the header that carry the session's form token. */
export const FORM_TOKEN_FIELD = "_csrf";
const FORM_TOKEN_HEADER = "x-csrf-token";

export interface SignedIn {
  secret: string;
  session: Session;
  user: User;
  group: Group;
  /** The session's form token, for the forms and scripts of the page. */
  formToken: string;
}

/** Pages before sign-in. */
export type WebEnv = { Variables: RequestEnv["Variables"] };
/** Pages behind `requireSession`: the account is known, by type. */
export type SignedInEnv = { Variables: RequestEnv["Variables"] & { signedIn: SignedIn } };

/** No live session: a page is redirected to the sign-in page, a script's request answered 401. */
export class SignInRequired extends AppError {
  constructor() {
    super("unauthorized", "Sign in first: your session has ended or you never signed in.");
  }
}

const isHttps = <E extends WebEnv>(c: Context<E>) => c.get("deps").config.baseUrl.startsWith("https:");

/** A cookie of the pages: HttpOnly (no script reads it), SameSite=Lax (no cross-site subrequest or form post carries it), Secure behind https, scoped to the pages. */
export function setPagesCookie<E extends WebEnv>(c: Context<E>, name: string, value: string, maxAgeMs: number) {
  setCookie(c, name, value, { path: BASE, httpOnly: true, sameSite: "Lax", secure: isHttps(c), maxAge: Math.floor(maxAgeMs / 1000) });
}

export const clearPagesCookie = <E extends WebEnv>(c: Context<E>, name: string) =>
  deleteCookie(c, name, { path: BASE, secure: isHttps(c), httpOnly: true, sameSite: "Lax" });

export const setSessionCookie = <E extends WebEnv>(c: Context<E>, secret: string) => setPagesCookie(c, COOKIE, secret, SESSION_MAX_MS);

export const clearSessionCookie = <E extends WebEnv>(c: Context<E>) => clearPagesCookie(c, COOKIE);

export const sessionSecret = <E extends WebEnv>(c: Context<E>) => getCookie(c, COOKIE);

/**
 * Whether a state-changing request comes from a page of this site: its Origin is the site's public address
 * (BASE_URL) or the address it was sent to; a browser that sends no Origin must say `Sec-Fetch-Site: same-origin`.
 * A page of another site cannot forge either header.
 */
export function fromThisSite<E extends WebEnv>(c: Context<E>): boolean {
  const origin = c.req.header("origin");
  if (origin !== undefined) return isThisSite(c, origin);
  return c.req.header("sec-fetch-site") === "same-origin";
}

/** Whether `origin` is the site's public address (BASE_URL) or the address the request was sent to. */
export const isThisSite = <E extends WebEnv>(c: Context<E>, origin: string) =>
  origin === new URL(c.get("deps").config.baseUrl).origin || origin === new URL(c.req.url).origin;

export const crossSite = () => forbidden("This form was sent from another site, or it has expired: reload the page and try again.");

const isSafe = (method: string) => method === "GET" || method === "HEAD";

async function formTokenSent<E extends WebEnv>(c: Context<E>): Promise<string | undefined> {
  const header = c.req.header(FORM_TOKEN_HEADER);
  if (header !== undefined) return header;
  return (await readForm(c))[FORM_TOKEN_FIELD]; // read once, kept for the handler
}

/**
 * A live session of an account that passes the gates of the API (the site-wide switch, the account, its group:
 * the same checks as a token), read from the database on every request so that a sign-out, a disabled account or
 * group counts at once on every instance. A state-changing request must also come from this site and carry the
 * session's form token.
 */
export const requireSession: MiddlewareHandler<SignedInEnv> = (c, next) => signedInOnly(c, next, true);

/**
 * The admin pages: a live session of an administrator. The site-wide API switch does not apply to them, as
 * it does not apply to the admin API (an administrator must be able to turn it back on); the account's own gates do.
 * Anyone else signed in gets a 403 page.
 */
export const requireAdminSession: MiddlewareHandler<SignedInEnv> = async (c, next) =>
  signedInOnly(
    c,
    async () => {
      if (c.get("signedIn").user.role !== "admin") throw forbidden("This page is for administrators.");
      await next();
    },
    false,
  );

async function signedInOnly(c: Context<SignedInEnv>, next: () => Promise<void>, gateSite: boolean) {
  const deps = c.get("deps");
  const secret = sessionSecret(c);
  const found = secret ? await resolveSession(deps.db, secret, deps.clock()) : null;
  if (!secret || !found) {
    if (secret) clearSessionCookie(c);
    throw new SignInRequired();
  }
  const signedIn: SignedIn = { ...found, secret, formToken: formTokenFor(secret) };
  c.set("signedIn", signedIn);
  useAccountLocale(found.user.locale);
  if (gateSite) siteGate(await currentSettings(deps));
  accountGate(found.user, found.group);
  if (!isSafe(c.req.method) && (!fromThisSite(c) || !isFormTokenOf(secret, await formTokenSent(c)))) throw crossSite();
  await next();
}

/** A form of a page before sign-in (sign-in, sign-up): only the Origin check applies, there is no session yet. */
export const requireThisSite: MiddlewareHandler<WebEnv> = async (c, next) => {
  if (!isSafe(c.req.method) && !fromThisSite(c)) throw crossSite();
  await next();
};

/** Where to go after signing in: a page of the user center, never another site. */
export function safeNext(next: string | undefined): string {
  if (next?.startsWith(`${BASE}/`) && !next.startsWith("//") && !/[\\\s]/.test(next) && !next.startsWith(`${BASE}/logout`)) return next;
  return `${BASE}/dashboard`;
}
