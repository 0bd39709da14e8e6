/** Sign-in (username or email, and password) and sign-out. */
import type { Context, Hono } from "hono";
import type { OidcProvider } from "../db/repositories/oidc.ts";
import { findUserForSignIn } from "../db/repositories/sessions.ts";
import { AppError } from "../errors.ts";
import { addressBucket, clientIp, currentSettings } from "../http/auth.ts";
import { FailedAuthThrottle, type Reservation, type ThrottleLimits } from "../http/throttle.ts";
import { signInProvidersOf } from "../services/oidc/providers.ts";
import { verifyPassword } from "../services/passwords.ts";
import { endSession, isFormTokenOf, resolveSession } from "../services/sessions.ts";
import { formField, readForm } from "./form.ts";
import { rich, t } from "./i18n/index.ts";
import { Field, Layout, Notice } from "./components/index.ts";
import { BASE, clearSessionCookie, crossSite, FORM_TOKEN_FIELD, fromThisSite, requireThisSite, safeNext, sessionSecret, type WebEnv } from "./session.ts";
import { completeSignIn } from "./sign-in.ts";
import { ProviderButtons } from "./oidc/buttons.tsx";
import { servicesOf } from "../services/index.ts";

/**
 * Failed sign-ins per login, whatever the address: 10 at once, then one every 30 seconds. With the per-address
 * throttle of the API (30 at once, then one every 2 s), guessing a password stays slow from one address and from many.
 */
const ACCOUNT_SIGN_IN_FAILURES: ThrottleLimits = { burst: 10, perMinute: 2 };

/**
 * The key of the per-account throttle: the login as typed, trimmed and lower-cased (sign-in ignores the case of
 * both), for a known account and an unknown one alike. Throttling by the account found would answer 429 for the
 * other spelling of a throttled account (its email after its username) and 401 for strangers, telling which
 * username owns which email; keyed by what was typed, a known and an unknown login answer the same way. An account
 * can be guessed at through its two spellings: 20 failures at once, then 2 every 30 seconds.
 */
const accountKey = (login: string) => `login:${login.trim().toLowerCase()}`;

const MAX_LOGIN = 254;
const MAX_PASSWORD = 200;

interface LoginForm {
  login?: string;
  next?: string;
  error?: string;
  info?: string;
  registration: boolean;
  /** The identity providers offered (docs/single-sign-on.md). */
  providers: Pick<OidcProvider, "slug" | "label">[];
  /** Off: the site signs in through its providers only, and the password form is not shown. */
  passwordSignIn: boolean;
}

function LoginPage({ login = "", next, error, info, registration, providers, passwordSignIn }: LoginForm) {
  if (!passwordSignIn) {
    return (
      <Layout title={t("auth.signIn")}>
        {error && <Notice kind="error">{error}</Notice>}
        {info && <Notice kind="info">{info}</Notice>}
        <p class="narrow muted">{t("oidc.passwordOff")}</p>
        {providers.length ? <ProviderButtons providers={providers} next={next} /> : <Notice kind="info">{t("oidc.noProviders")}</Notice>}
      </Layout>
    );
  }
  return (
    <Layout title={t("auth.signIn")}>
      {error && <Notice kind="error">{error}</Notice>}
      {info && <Notice kind="info">{info}</Notice>}
      <form class="card narrow" method="post" action={`${BASE}/login`}>
        {next && <input type="hidden" name="next" value={next} />}
        <Field label={t("auth.login")} id="login">
          <input id="login" name="login" type="text" value={login} autocomplete="username" required maxlength={MAX_LOGIN} autofocus={!login} />
        </Field>
        <Field label={t("auth.password")} id="password">
          <input id="password" name="password" type="password" autocomplete="current-password" required maxlength={MAX_PASSWORD} autofocus={!!login} />
        </Field>
        <button type="submit" class="primary">
          {t("auth.signIn")}
        </button>
      </form>
      {providers.length > 0 && <p class="narrow muted or">{t("oidc.or")}</p>}
      <ProviderButtons providers={providers} next={next} />
      <p class="narrow">
        <a href={`${BASE}/forgot`}>{t("mail.forgot.link")}</a> · <a href={`${BASE}/login/passkey`}>{t("security.passkeys.signIn")}</a>
      </p>
      <p class="narrow muted">
        {registration ? rich("auth.noAccountOpen", { a: (chunks) => <a href={`${BASE}/register`}>{chunks}</a> }) : t("auth.noAccountClosed")}
      </p>
    </Layout>
  );
}

export function register(web: Hono<WebEnv>) {
  const accountThrottle = new FailedAuthThrottle(ACCOUNT_SIGN_IN_FAILURES);

  const page = async (
    c: Context<WebEnv>,
    form: Omit<LoginForm, "registration" | "providers" | "passwordSignIn">,
    status: 200 | 401 | 403 | 422 | 429 = 200,
  ) => {
    const settings = await currentSettings(c.get("deps"));
    const providers = await signInProvidersOf(c.get("deps"));
    return c.html(<LoginPage {...form} registration={settings.registrationEnabled} providers={providers} passwordSignIn={settings.passwordSignIn} />, status);
  };

  web.get("/login", async (c) => {
    const deps = c.get("deps");
    const secret = sessionSecret(c);
    const next = c.req.query("next");
    // already signed in: straight on
    if (secret && (await resolveSession(deps.db, secret, deps.clock()))) return c.redirect(safeNext(next), 303);
    const info = c.req.query("signed_out") !== undefined ? t("auth.signedOut") : undefined;
    return page(c, { next: next && safeNext(next), info });
  });

  web.post("/login", requireThisSite, async (c) => {
    const deps = c.get("deps");
    const body = await readForm(c);
    const login = formField(body, "login").trim().slice(0, MAX_LOGIN);
    const password = formField(body, "password").slice(0, MAX_PASSWORD);
    const next = safeNext(formField(body, "next") || undefined);
    // provider-only: no password is looked at (an administrator's way back is the CLI: docs/single-sign-on.md)
    if (!(await currentSettings(deps)).passwordSignIn) return page(c, { next, error: t("oidc.passwordOffRefused") }, 403);
    if (!login || !password) return page(c, { login, next, error: t("auth.enterBoth") }, 422);

    // a failure is reserved before the password is looked at, against the address (shared with the API's failed
    // tokens), then the login as typed; a right password gives both back
    const refused = (e: unknown, whose: "address" | "login") => {
      if (!(e instanceof AppError && e.status === 429)) throw e;
      const seconds = e.headers?.["retry-after"] ?? "60";
      c.header("Retry-After", seconds);
      return page(c, { login, next, error: t("auth.tooMany", { whose, seconds }) }, 429);
    };
    let fromAddress: Reservation;
    let onLogin: Reservation;
    try {
      fromAddress = c.get("authThrottle").reserve(addressBucket(clientIp(c)));
    } catch (e) {
      return refused(e, "address");
    }
    try {
      onLogin = accountThrottle.reserve(accountKey(login));
    } catch (e) {
      fromAddress.refund();
      return refused(e, "login");
    }
    let found: Awaited<ReturnType<typeof findUserForSignIn>>;
    let right: boolean;
    try {
      found = await findUserForSignIn(deps.db, login);
      right = (await verifyPassword(password, found?.user.passwordHash ?? null)) && found !== null;
    } catch (e) {
      // not a failed guess (the database or the hashing queue refused): nothing is charged
      fromAddress.refund();
      onLogin.refund();
      throw e;
    }
    if (!right || !found) return page(c, { login, next, error: t("auth.wrong") }, 401);
    fromAddress.refund();
    onLogin.refund();
    // the password is right: the sign-in core checks the API's gates, then asks for a second factor or signs in
    try {
      return await completeSignIn(c, found.user, "password", { next });
    } catch (e) {
      if (e instanceof AppError && e.status === 403) return page(c, { login, next, error: e.message }, 403);
      throw e;
    }
  });

  // signing out needs only the session and its form token: a disabled account may sign out too
  web.post("/logout", async (c) => {
    const deps = c.get("deps");
    const secret = sessionSecret(c);
    if (secret) {
      const found = await resolveSession(deps.db, secret, deps.clock());
      if (found) {
        if (!fromThisSite(c) || !isFormTokenOf(secret, formField(await readForm(c), FORM_TOKEN_FIELD))) throw crossSite();
        await endSession(deps.db, found.session.id);
        // the page's upload tokens went with the session: this instance refuses them at once, the others within 1 s
        servicesOf(deps).lookups.forget("token:");
      }
      clearSessionCookie(c);
    }
    return c.redirect(`${BASE}/login?signed_out`, 303);
  });
}
