/**
 * The user center: server-rendered pages (hono/jsx) under /user, one file per page, calling the same services as
 * the API. Plain routes, not OpenAPI ones: they are not part of the v1 contract and stay out of its spec.
 *
 *   /user/login, /user/logout, /user/register   sign-in, sign-out, sign-up (when enabled)
 *   /user/dashboard                              the profile's `url`
 *   /user/images, /user/upload, /user/tokens     images (filter by album, move selected), upload, API tokens
 *   /user/albums                                 create, rename and delete albums
 *   /user/account                                change the password (and revoke the API tokens)
 *
 * Every form post is read by form.ts (64 KB, 30 s, urlencoded or multipart, no control characters).
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { type Context, Hono } from "hono";
import { AppError } from "../errors.ts";
import { failure } from "../http/envelope.ts";
import { logFor } from "../observability/log.ts";
import type { AppEnv } from "../http/types.ts";
import * as account from "./account.tsx";
import * as admin from "./admin/index.ts";
import * as albums from "./albums.tsx";
import * as dashboard from "./dashboard.tsx";
import { ErrorPage } from "./error-page.tsx";
import * as images from "./images.tsx";
import * as integrations from "./integrations.tsx";
import { allAssets } from "./components/index.ts";
import { makeView, negotiate, t, withView } from "./i18n/index.ts";
import * as login from "./login.tsx";
import * as oidc from "./oidc/index.ts";
import * as security from "./security/index.ts";
import * as passwordLink from "./password-link.tsx";
import * as forgotPassword from "./forgot-password.tsx";
import * as verifyEmail from "./verify-email.tsx";
import * as preferences from "./preferences.ts";
import { themeOf } from "./preferences.ts";
import * as site from "./site.ts";
import { identityOf } from "./site.ts";
import { currentSettings } from "../http/auth.ts";
import * as registration from "./register.tsx";
import { BASE, clearSessionCookie, SignInRequired, safeNext, type SignedIn, type WebEnv } from "./session.ts";
import * as tokens from "./tokens.tsx";
import * as upload from "./upload.tsx";
import * as webhooks from "./webhooks.tsx";

/** What a page may load: itself only, and images from wherever the strategies serve them. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob: https: http:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

/** The page's scripts ask for JSON (the upload token); everything else is a page. */
const wantsJson = (accept: string | undefined) => !!accept && accept.includes("application/json") && !accept.includes("text/html");

/** Where an error page leads back to: the page of this site the request came from (its Referer), if another page. */
function backOf(c: Context<WebEnv>): string | undefined {
  const referer = c.req.header("referer");
  if (!referer) return undefined;
  let from: URL;
  try {
    from = new URL(referer);
  } catch {
    return undefined;
  }
  const ours = [new URL(c.req.url).origin, new URL(c.get("deps").config.baseUrl).origin];
  const back = from.pathname + from.search;
  if (!ours.includes(from.origin) || safeNext(back) !== back || (from.pathname === c.req.path && c.req.method === "GET")) return undefined;
  return back;
}

function createWebApp() {
  const web = new Hono<WebEnv>();

  web.use("*", async (c, next) => {
    await next();
    if (!c.res.headers.has("content-security-policy")) c.header("Content-Security-Policy", CONTENT_SECURITY_POLICY);
    c.header("X-Content-Type-Options", "nosniff");
    c.header("X-Frame-Options", "DENY");
    c.header("Referrer-Policy", "same-origin");
    if (!c.res.headers.has("cache-control")) c.header("Cache-Control", "private, no-cache");
  });
  // the request's view: the site's identity, the theme, and the language (the account's, once known: session.ts)
  web.use("*", async (c, next) => {
    if (c.req.path.startsWith(`${BASE}/assets/`)) return next();
    const { site: identity } = identityOf(await currentSettings(c.get("deps")));
    const accept = c.req.header("accept-language");
    const locale = negotiate(null, accept, identity.defaultLocale);
    return withView(makeView(locale, identity, themeOf(c), accept), next);
  });
  for (const file of allAssets()) {
    web.get(`/assets/${file.name}`, (c) => c.body(file.body, 200, { "content-type": file.type, "cache-control": "public, max-age=86400" }));
  }

  web.get("/", (c) => c.redirect(`${BASE}/dashboard`, 303));
  site.register(web);
  login.register(web);
  oidc.register(web);
  security.register(web);
  registration.register(web);
  passwordLink.register(web);
  forgotPassword.register(web);
  verifyEmail.register(web);
  dashboard.register(web);
  images.register(web);
  albums.register(web);
  upload.register(web);
  tokens.register(web);
  integrations.register(web);
  webhooks.register(web);
  account.register(web);
  preferences.register(web);
  admin.register(web);

  web.all("*", () => {
    throw new AppError("not_found", t("common.error.notFoundPage"));
  });

  web.onError((err, c) => {
    const json = wantsJson(c.req.header("accept"));
    if (err instanceof SignInRequired) {
      if (json) return c.json(failure(err.message), 401);
      const next = c.req.method === "GET" ? `?next=${encodeURIComponent(c.req.path + (new URL(c.req.url).search || ""))}` : "";
      if (c.req.method !== "GET") clearSessionCookie(c);
      return c.redirect(`${BASE}/login${next}`, 303);
    }
    const known = err instanceof AppError && err.status !== 500;
    const status = known ? err.status : 500;
    const requestId = c.get("requestId");
    if (!known) logFor(c.get("deps")).error({ err: err instanceof AppError ? (err.cause ?? err) : err }, `${c.req.method} ${c.req.path} failed`);
    const message = known || err instanceof AppError ? err.message : t("common.error.server");
    const headers = err instanceof AppError ? err.headers : undefined;
    if (json) return c.json(known ? failure(message) : { ...failure(message), request_id: requestId }, status, headers);
    const signedIn = (c.var as { signedIn?: SignedIn }).signedIn;
    return c.html(ErrorPage({ status, message, requestId: known ? undefined : requestId, signedIn, back: backOf(c) }), status, headers);
  });

  return web;
}

export function register(app: OpenAPIHono<AppEnv>) {
  // the sub-app's "/" is /user; /user/ is the same place
  app.get(`${BASE}/`, (c) => c.redirect(`${BASE}/dashboard`, 303));
  app.route(BASE, createWebApp());
}
