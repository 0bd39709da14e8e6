/**
 * Sign-in through OpenID Connect providers (docs/single-sign-on.md, docs/decisions/oidc-sign-in.md):
 *
 *   GET  /user/oidc/<slug>/start      the sign-in page's button: a flow for this browser, then the provider
 *   GET  /user/oidc/<slug>/callback   the redirect URI: checks the answer (services/oidc/client.ts), finds the account
 *   GET  /user/oidc/link              a new identity whose verified email an account has: confirm with its password
 *   POST /user/oidc/link
 *
 * The browser is named by the `ih_oidc` cookie (a random secret; HttpOnly, SameSite=Lax so that it comes back with
 * the provider's top-level redirect, scoped to /user/oidc, ten minutes): a flow and a link request answer only in the
 * browser that started them. Every sign-in ends in completeSignIn (../sign-in.ts): the gates, a second factor when
 * due, a new session whose secret is made then, and the end of any session the browser held before.
 */
import type { Context, Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { findLinkRequest, findOidcProviderBySlug, failLinkRequest, type OidcProvider, putLinkRequest, takeLinkRequest } from "../../db/repositories/oidc.ts";
import { getUser } from "../../db/repositories/users.ts";
import { AppError } from "../../errors.ts";
import { addressBucket, clientIp } from "../../http/auth.ts";
import { FailedAuthThrottle, type Reservation, type ThrottleLimits } from "../../http/throttle.ts";
import { linkIdentity, resolveIdentity } from "../../services/oidc/accounts.ts";
import { beginSignIn, FLOW_TTL_MS, finishSignIn, type RefusalReason, SignInRefused } from "../../services/oidc/client.ts";
import { verifyPassword } from "../../services/passwords.ts";
import { formTokenFor, resolveSession } from "../../services/sessions.ts";
import { randomToken, sha256Hex } from "../../services/secrets.ts";
import { logFor } from "../../observability/log.ts";
import { formField, readForm } from "../form.ts";
import { type MessageKey, t } from "../i18n/index.ts";
import { completeSignIn } from "../sign-in.ts";
import { BASE, requireSession, requireThisSite, safeNext, sessionSecret, type WebEnv } from "../session.ts";
import { LinkPage, RefusedPage } from "./pages.tsx";

const COOKIE = "ih_oidc";
const COOKIE_PATH = `${BASE}/oidc`;
/**
 * Sign-ins started per client address: 20 at once, then one every 6 seconds. Each start stores a flow for ten
 * minutes; the bound keeps one address from filling the table.
 */
const STARTS_PER_ADDRESS: ThrottleLimits = { burst: 20, perMinute: 10 };
/** Wrong passwords a link request takes before it ends. */
const LINK_FAILURES_MAX = 5;
const MAX_PASSWORD = 200;

const isHttps = (c: Context<WebEnv>) => c.get("deps").config.baseUrl.startsWith("https:");
const browserSecretOf = (c: Context<WebEnv>) => {
  const value = getCookie(c, COOKIE);
  return value && /^[\w-]{40,60}$/.test(value) ? value : null;
};

/** The browser's secret, made (and its cookie set) when it has none; a live one is kept so that two tabs both finish. */
function ensureBrowserSecret(c: Context<WebEnv>): string {
  const secret = browserSecretOf(c) ?? randomToken(32);
  setCookie(c, COOKIE, secret, { path: COOKIE_PATH, httpOnly: true, sameSite: "Lax", secure: isHttps(c), maxAge: Math.floor(FLOW_TTL_MS / 1000) });
  return secret;
}

const STATUS: Record<RefusalReason, 400 | 403 | 503> = {
  unreachable: 503,
  denied: 403,
  expired: 400,
  invalid: 400,
  no_email: 403,
  unverified_email: 403,
  no_account: 403,
  already_linked: 403,
  email_taken: 403,
};

function refused(c: Context<WebEnv>, reason: RefusalReason, provider?: OidcProvider, detail?: string) {
  // the page says what happened in the reader's words; the log keeps what the library said, for the administrator
  logFor(c.get("deps")).warn({ provider: provider?.slug, reason, detail }, "provider sign-in refused");
  return c.html(RefusedPage({ message: t(`oidc.refused.${reason}` as MessageKey) }), STATUS[reason]);
}

async function enabledProvider(c: Context<WebEnv>): Promise<OidcProvider> {
  const provider = await findOidcProviderBySlug(c.get("deps").db, c.req.param("slug") ?? "");
  if (!provider?.enabled) throw new AppError("not_found", t("oidc.unknownProvider"));
  return provider;
}

export function register(web: Hono<WebEnv>) {
  const starts = new FailedAuthThrottle(STARTS_PER_ADDRESS, Date.now, (seconds) => t("oidc.tooManyStarts", { seconds }));

  web.get("/oidc/:slug/start", async (c) => {
    const provider = await enabledProvider(c);
    const next = safeNext(c.req.query("next"));
    try {
      starts.reserve(addressBucket(clientIp(c)));
    } catch (e) {
      if (!(e instanceof AppError && e.status === 429)) throw e;
      c.header("Retry-After", e.headers?.["retry-after"] ?? "60");
      return c.html(RefusedPage({ message: e.message }), 429);
    }
    try {
      const url = await beginSignIn(c.get("deps"), provider, ensureBrowserSecret(c), next);
      return c.redirect(url.href, 303);
    } catch (e) {
      if (e instanceof SignInRefused) return refused(c, e.reason, provider, e.message);
      throw e;
    }
  });

  web.get("/oidc/:slug/callback", async (c) => {
    const deps = c.get("deps");
    const provider = await enabledProvider(c);
    const browser = browserSecretOf(c);
    try {
      if (!browser) throw new SignInRefused("expired", "no flow cookie");
      const { claims, next } = await finishSignIn(deps, provider, browser, new URL(c.req.url).searchParams);
      const found = await resolveIdentity(deps, provider, claims, clientIp(c));
      if (found.kind === "link") {
        await putLinkRequest(
          deps.db,
          {
            browserHash: sha256Hex(browser),
            providerId: provider.id,
            issuer: claims.issuer,
            subject: claims.subject,
            email: found.email,
            userId: found.userId,
            next,
            // the service's clock, as the sessions' (a session begun since then confirms the link)
            createdAt: deps.clock(),
            expiresAt: new Date(deps.clock().getTime() + FLOW_TTL_MS),
          },
          deps.clock(),
        );
        return c.redirect(`${BASE}/oidc/link`, 303);
      }
      return completeSignIn(c, found.user, `oidc:${provider.slug}`, { next });
    } catch (e) {
      if (e instanceof SignInRefused) return refused(c, e.reason, provider, e.message);
      throw e;
    }
  });

  const linkPage = async (c: Context<WebEnv>, error?: string, status: 200 | 401 | 429 = 200) => {
    const deps = c.get("deps");
    const browser = browserSecretOf(c);
    const found = browser ? await findLinkRequest(deps.db, sha256Hex(browser), deps.clock()) : null;
    if (!found) return c.html(RefusedPage({ message: t("oidc.link.none") }), 400);
    // signed in to that very account since the request was made (a passkey, say): a button confirms the link
    const secret = sessionSecret(c);
    const session = secret ? await resolveSession(deps.db, secret, deps.clock()) : null;
    const fresh = session && freshFor(session.session, found.request) ? formTokenFor(secret!) : undefined;
    return c.html(LinkPage({ provider: found.label, email: found.request.email, username: found.username, error, formToken: fresh }), status);
  };

  web.get("/oidc/link", (c) => linkPage(c));

  web.post("/oidc/link", requireThisSite, async (c) => {
    const deps = c.get("deps");
    const password = formField(await readForm(c), "password").slice(0, MAX_PASSWORD);
    const browser = browserSecretOf(c);
    const found = browser ? await findLinkRequest(deps.db, sha256Hex(browser), deps.clock()) : null;
    if (!found) return c.html(RefusedPage({ message: t("oidc.link.none") }), 400);
    const user = await getUser(deps.db, found.request.userId);
    if (!user?.passwordHash) return c.html(RefusedPage({ message: t("oidc.link.noPassword") }), 403);
    // a wrong password is charged to the address (shared with the sign-in page and the API) and to this request
    let fromAddress: Reservation;
    try {
      fromAddress = c.get("authThrottle").reserve(addressBucket(clientIp(c)));
    } catch (e) {
      if (!(e instanceof AppError && e.status === 429)) throw e;
      c.header("Retry-After", e.headers?.["retry-after"] ?? "60");
      return linkPage(c, t("auth.tooMany", { whose: "address", seconds: e.headers?.["retry-after"] ?? "60" }), 429);
    }
    if (!(await verifyPassword(password, user.passwordHash))) {
      const failures = await failLinkRequest(deps.db, found.request.id, LINK_FAILURES_MAX);
      if (failures >= LINK_FAILURES_MAX) return c.html(RefusedPage({ message: t("oidc.refused.expired") }), 401);
      return linkPage(c, t("oidc.link.wrong"), 401);
    }
    fromAddress.refund();
    const request = await takeLinkRequest(deps.db, found.request.id);
    if (!request) return c.html(RefusedPage({ message: t("oidc.refused.expired") }), 400);
    try {
      const linked = await linkIdentity(deps, { id: request.providerId, slug: found.slug }, request, clientIp(c));
      return completeSignIn(c, linked, `oidc:${found.slug}`, { next: request.next });
    } catch (e) {
      if (e instanceof SignInRefused) return refused(c, e.reason, undefined, e.message);
      throw e;
    }
  });

  // the other confirmation: this browser signed in to the account after the request was made, by any of its sign-in
  // methods (a passkey…); the person presses Link on the page that says what is linked (a form with the session's token)
  web.post("/oidc/link/session", requireSession, async (c) => {
    const deps = c.get("deps");
    const { session } = c.get("signedIn");
    const browser = browserSecretOf(c as unknown as Context<WebEnv>);
    const found = browser ? await findLinkRequest(deps.db, sha256Hex(browser), deps.clock()) : null;
    if (!found || !freshFor(session, found.request)) return c.html(RefusedPage({ message: t("oidc.link.none") }), 400);
    const request = await takeLinkRequest(deps.db, found.request.id);
    if (!request) return c.html(RefusedPage({ message: t("oidc.refused.expired") }), 400);
    try {
      await linkIdentity(deps, { id: request.providerId, slug: found.slug }, request, clientIp(c));
    } catch (e) {
      if (e instanceof SignInRefused) return c.html(RefusedPage({ message: t(`oidc.refused.${e.reason}` as MessageKey) }), STATUS[e.reason]);
      throw e;
    }
    return c.redirect(safeNext(request.next), 303);
  });
}

/** A session proves the link when it is the account's and began after the request was made (in the same browser). */
const freshFor = (session: { userId: number; createdAt: Date }, request: { userId: number; createdAt: Date }) =>
  session.userId === request.userId && session.createdAt.getTime() >= request.createdAt.getTime();
