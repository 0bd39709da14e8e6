/** Sign-in (username or email, and password) and sign-out. */
import type { Context, Hono } from "hono";
import { findUserForSignIn } from "../db/repositories/sessions.ts";
import { AppError } from "../errors.ts";
import { accountGate, clientIp, currentSettings, siteGate } from "../http/auth.ts";
import { FailedAuthThrottle, type ThrottleLimits } from "../http/throttle.ts";
import { lookupCacheFor } from "../services/lookup-cache.ts";
import { verifyPassword } from "../services/passwords.ts";
import { endSession, isFormTokenOf, resolveSession, startSession } from "../services/sessions.ts";
import { Field, Layout, Notice } from "./layout.tsx";
import {
  BASE,
  clearSessionCookie,
  crossSite,
  FORM_TOKEN_FIELD,
  fromThisSite,
  requireThisSite,
  safeNext,
  sessionSecret,
  setSessionCookie,
  type WebEnv,
} from "./session.ts";

/**
 * Failed sign-ins per account, whatever the address: 10 at once, then one every 30 seconds. With the per-address
 * throttle of the API (30 at once, then one every 2 s), guessing a password stays slow from one address and from many.
 */
export const ACCOUNT_SIGN_IN_FAILURES: ThrottleLimits = { burst: 10, perMinute: 2 };

const MAX_LOGIN = 254;
const MAX_PASSWORD = 200;

interface LoginForm {
  login?: string;
  next?: string;
  error?: string;
  info?: string;
  registration: boolean;
}

function LoginPage({ login = "", next, error, info, registration }: LoginForm) {
  return (
    <Layout title="Sign in">
      {error && <Notice kind="error">{error}</Notice>}
      {info && <Notice kind="info">{info}</Notice>}
      <form class="card narrow" method="post" action={`${BASE}/login`}>
        {next && <input type="hidden" name="next" value={next} />}
        <Field label="Username or email" id="login">
          <input id="login" name="login" type="text" value={login} autocomplete="username" required maxlength={MAX_LOGIN} autofocus={!login} />
        </Field>
        <Field label="Password" id="password">
          <input id="password" name="password" type="password" autocomplete="current-password" required maxlength={MAX_PASSWORD} autofocus={!!login} />
        </Field>
        <button type="submit" class="primary">
          Sign in
        </button>
      </form>
      <p class="narrow muted">
        {registration ? (
          <>
            No account yet? <a href={`${BASE}/register`}>Create one</a>.
          </>
        ) : (
          "No account yet? Ask the administrator of this site for one."
        )}
      </p>
    </Layout>
  );
}

const field = (body: Record<string, unknown>, name: string) => (typeof body[name] === "string" ? (body[name] as string) : "");

export function register(web: Hono<WebEnv>) {
  const accountThrottle = new FailedAuthThrottle(ACCOUNT_SIGN_IN_FAILURES);

  const page = async (c: Context<WebEnv>, form: Omit<LoginForm, "registration">, status: 200 | 401 | 403 | 422 | 429 = 200) => {
    const settings = await currentSettings(c.get("deps"));
    return c.html(<LoginPage {...form} registration={settings.registrationEnabled} />, status);
  };

  web.get("/login", async (c) => {
    const deps = c.get("deps");
    const secret = sessionSecret(c);
    const next = c.req.query("next");
    // already signed in: straight on
    if (secret && (await resolveSession(deps.db, secret, deps.clock()))) return c.redirect(safeNext(next), 303);
    const info = c.req.query("signed_out") !== undefined ? "You have signed out." : undefined;
    return page(c, { next: next && safeNext(next), info });
  });

  web.post("/login", requireThisSite, async (c) => {
    const deps = c.get("deps");
    const body = await c.req.parseBody();
    const login = field(body, "login").trim().slice(0, MAX_LOGIN);
    const password = field(body, "password").slice(0, MAX_PASSWORD);
    const next = safeNext(field(body, "next") || undefined);
    if (!login || !password) return page(c, { login, next, error: "Enter your username or email and your password." }, 422);

    // refused before the password is looked at: the address (shared with the API's failed tokens), then the account
    const address = clientIp(c);
    const addressThrottle = c.get("authThrottle");
    const refused = (e: unknown, whose: string) => {
      if (!(e instanceof AppError && e.status === 429)) throw e;
      const seconds = e.headers?.["retry-after"] ?? "60";
      c.header("Retry-After", seconds);
      return page(c, { login, next, error: `Too many failed sign-ins ${whose}: retry in ${seconds} s.` }, 429);
    };
    try {
      addressThrottle.check(address);
    } catch (e) {
      return refused(e, "from your address");
    }
    const found = await findUserForSignIn(deps.db, login);
    const accountKey = found ? `user:${found.user.id}` : `login:${login.toLowerCase()}`;
    try {
      accountThrottle.check(accountKey);
    } catch (e) {
      return refused(e, "on this account");
    }
    if (!(await verifyPassword(password, found?.user.passwordHash ?? null)) || !found) {
      addressThrottle.recordFailure(address);
      accountThrottle.recordFailure(accountKey);
      return page(c, { login, next, error: "Wrong username, email or password." }, 401);
    }
    // the password is right: the account must pass the API's gates to sign in
    try {
      siteGate(await currentSettings(deps));
      accountGate(found.user, found.group);
    } catch (e) {
      if (e instanceof AppError && e.status === 403) return page(c, { login, next, error: e.message }, 403);
      throw e;
    }
    const { secret } = await startSession(deps.db, found.user.id, address, deps.clock());
    setSessionCookie(c, secret);
    return c.redirect(next, 303);
  });

  // signing out needs only the session and its form token: a disabled account may sign out too
  web.post("/logout", async (c) => {
    const deps = c.get("deps");
    const secret = sessionSecret(c);
    if (secret) {
      const found = await resolveSession(deps.db, secret, deps.clock());
      if (found) {
        const body = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
        if (!fromThisSite(c) || !isFormTokenOf(secret, field(body, FORM_TOKEN_FIELD))) throw crossSite();
        await endSession(deps.db, found.session.id);
        // the page's upload tokens went with the session: this instance refuses them at once, the others within 1 s
        lookupCacheFor(deps).forget("token:");
      }
      clearSessionCookie(c);
    }
    return c.redirect(`${BASE}/login?signed_out`, 303);
  });
}
