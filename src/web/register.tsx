/** Sign-up, when the administrator has enabled it (`registration_enabled`): the account joins the default group. */
import { z } from "@hono/zod-openapi";
import type { Context, Hono } from "hono";
import { getDefaultGroup } from "../db/repositories/groups.ts";
import { isUsernameOrEmailTaken } from "../db/repositories/sessions.ts";
import { createUser } from "../db/repositories/users.ts";
import { AppError, notFound } from "../errors.ts";
import { accountGate, addressBucket, clientIp, currentSettings, siteGate } from "../http/auth.ts";
import { FailedAuthThrottle, type Reservation } from "../http/throttle.ts";
import { hashPassword, PASSWORD_MAX, PASSWORD_MIN } from "../services/passwords.ts";
import { startSession } from "../services/sessions.ts";
import { formField, readForm } from "./form.ts";
import { Field, FieldError, Layout, Notice } from "./components/index.ts";
import { rich, t } from "./i18n/index.ts";
import { BASE, requireThisSite, setSessionCookie, type WebEnv } from "./session.ts";

/** Accounts one address (an IPv6 /64 counting as one) may create: 5 at once, then one every 12 minutes. */
const REGISTRATIONS_PER_ADDRESS = { burst: 5, perMinute: 1 / 12 };

export const USERNAME = /^[A-Za-z0-9_.-]{2,64}$/;

const signUp = () =>
  z.object({
    username: z.string().trim().regex(USERNAME, t("auth.usernameRule")),
    email: z.email(t("auth.emailInvalid")).max(254),
    password: z
      .string()
      .min(PASSWORD_MIN, t("auth.atLeast", { n: PASSWORD_MIN }))
      .max(PASSWORD_MAX, t("auth.atMost", { n: PASSWORD_MAX })),
  });

interface Form {
  username?: string;
  email?: string;
  errors?: Partial<Record<"username" | "email" | "password" | "form", string>>;
}

function RegisterPage({ username = "", email = "", errors = {} }: Form) {
  const invalid = (name: keyof typeof errors) => (errors[name] ? { "aria-invalid": "true", "aria-describedby": `${name}-error` } : {});
  const error = (name: keyof typeof errors) => <FieldError id={name} error={errors[name]} />;
  return (
    <Layout title={t("auth.register")}>
      {errors.form && <Notice kind="error">{errors.form}</Notice>}
      <form class="card narrow" method="post" action={`${BASE}/register`} novalidate>
        <Field label={t("auth.username")} id="username" hint={t("auth.usernameHint")}>
          <input id="username" name="username" type="text" value={username} autocomplete="username" required maxlength={64} {...invalid("username")} />
          {error("username")}
        </Field>
        <Field label={t("auth.email")} id="email">
          <input id="email" name="email" type="email" value={email} autocomplete="email" required maxlength={254} {...invalid("email")} />
          {error("email")}
        </Field>
        <Field label={t("auth.password")} id="password" hint={t("auth.passwordHint", { n: PASSWORD_MIN })}>
          <input
            id="password"
            name="password"
            type="password"
            autocomplete="new-password"
            required
            minlength={PASSWORD_MIN}
            maxlength={PASSWORD_MAX}
            {...invalid("password")}
          />
          {error("password")}
        </Field>
        <button type="submit" class="primary">
          {t("auth.createAccount")}
        </button>
      </form>
      <p class="narrow muted">{rich("auth.haveAccount", { a: (chunks) => <a href={`${BASE}/login`}>{chunks}</a> })}</p>
    </Layout>
  );
}

const isUniqueViolation = (e: unknown) => {
  const err = e as { code?: string; cause?: { code?: string } };
  return err.code === "23505" || err.cause?.code === "23505";
};

export function register(web: Hono<WebEnv>) {
  const registrations = new FailedAuthThrottle(REGISTRATIONS_PER_ADDRESS);

  /** Sign-up answers only while the administrator allows it; otherwise the page does not exist. */
  async function open(c: Context<WebEnv>) {
    const settings = await currentSettings(c.get("deps"));
    if (!settings.registrationEnabled) throw notFound(t("auth.signUpClosed"));
    siteGate(settings);
  }

  web.get("/register", async (c) => {
    await open(c);
    return c.html(<RegisterPage />);
  });

  web.post("/register", requireThisSite, async (c) => {
    await open(c);
    const deps = c.get("deps");
    const body = await readForm(c);
    const text = (name: string) => formField(body, name);
    const username = text("username").trim();
    const email = text("email").trim().toLowerCase();
    const parsed = signUp().safeParse({ username, email, password: text("password") });
    if (!parsed.success) {
      const errors: Form["errors"] = {};
      for (const issue of parsed.error.issues) {
        const name = issue.path[0] as "username" | "email" | "password";
        errors[name] ??= issue.message;
      }
      return c.html(<RegisterPage username={username} email={email} errors={errors} />, 422);
    }
    const address = clientIp(c);
    // one account is reserved against the address before anything is looked at, and given back if none is made:
    // concurrent sign-ups from one address cannot make more than the bound
    let reservation: Reservation;
    try {
      reservation = registrations.reserve(addressBucket(address));
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      c.header("Retry-After", e.headers?.["retry-after"] ?? "600");
      const form = t("auth.tooManyAccounts");
      return c.html(<RegisterPage username={username} email={email} errors={{ form }} />, 429);
    }
    let user;
    let group;
    try {
      if (await isUsernameOrEmailTaken(deps.db, username, email)) {
        reservation.refund();
        const form = t("auth.taken");
        return c.html(<RegisterPage username={username} email={email} errors={{ form }} />, 422);
      }
      group = await getDefaultGroup(deps.db);
      if (!group) throw new AppError("internal", t("auth.noDefaultGroup"));
      user = await createUser(deps.db, {
        username,
        email,
        name: username,
        groupId: group.id,
        passwordHash: await hashPassword(parsed.data.password),
        registeredIp: address,
      });
    } catch (e) {
      reservation.refund(); // no account was made
      if (!isUniqueViolation(e)) throw e;
      const form = t("auth.taken");
      return c.html(<RegisterPage username={username} email={email} errors={{ form }} />, 422);
    }
    accountGate(user, group); // a disabled default group: the account exists, and the error page says why it cannot sign in
    const { secret } = await startSession(deps.db, user.id, address, deps.clock(), c.req.header("user-agent"));
    setSessionCookie(c, secret);
    return c.redirect(`${BASE}/dashboard?welcome`, 303);
  });
}
