/**
 * Sign-up, when the administrator has enabled it (`registration_enabled`): the account joins the default group. With
 * an invitation (services/invitations.ts) sign-up works while registration is closed too, and the account joins the
 * invitation's group; its use is charged in the transaction that makes the account. While email verification is on,
 * the new account is asked to confirm its address before its first upload (services/mail/verification.ts).
 */
import { z } from "@hono/zod-openapi";
import type { Context, Hono } from "hono";
import { getDefaultGroup, getGroup } from "../db/repositories/groups.ts";
import { isUsernameOrEmailTaken } from "../db/repositories/sessions.ts";
import { createUser } from "../db/repositories/users.ts";
import { AppError, forbidden, notFound } from "../errors.ts";
import { accountGate, addressBucket, clientIp, currentSettings, siteGate } from "../http/auth.ts";
import { FailedAuthThrottle, type Reservation } from "../http/throttle.ts";
import { hashPassword, PASSWORD_MAX, PASSWORD_MIN } from "../services/passwords.ts";
import { chargeInvitation, findLiveInvitation } from "../services/invitations.ts";
import { queueEmailVerification } from "./mail/send.ts";
import { formField, readForm } from "./form.ts";
import { Field, FieldError, Layout, Notice, PasswordInput } from "./components/index.ts";
import { rich, t } from "./i18n/index.ts";
import { BASE, requireThisSite, type WebEnv } from "./session.ts";
import { completeSignIn } from "./sign-in.ts";

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
  /** The invitation code, and the name of the group it leads to. */
  invite?: string;
  inviteGroup?: string;
  errors?: Partial<Record<"username" | "email" | "password" | "invite" | "form", string>>;
}

function RegisterPage({ username = "", email = "", invite = "", inviteGroup, errors = {} }: Form) {
  const invalid = (name: keyof typeof errors) => (errors[name] ? { "aria-invalid": "true", "aria-describedby": `${name}-error` } : {});
  const error = (name: keyof typeof errors) => <FieldError id={name} error={errors[name]} />;
  return (
    <Layout title={t("auth.register")}>
      {errors.form && <Notice kind="error">{errors.form}</Notice>}
      {inviteGroup && <p class="narrow">{rich("mail.invite.joining", { b: (chunks) => <strong>{chunks}</strong>, group: inviteGroup })}</p>}
      <form class="card narrow" method="post" action={`${BASE}/register`} novalidate>
        <Field label={t("auth.username")} id="username" hint={t("auth.usernameHint")}>
          <input id="username" name="username" type="text" value={username} autocomplete="username" required maxlength={64} {...invalid("username")} />
          {error("username")}
        </Field>
        <Field label={t("auth.email")} id="email">
          <input id="email" name="email" type="email" value={email} autocomplete="email" required maxlength={254} {...invalid("email")} />
          {error("email")}
        </Field>
        <PasswordInput name="password" label={t("auth.password")} error={errors.password} purpose="new" />
        <Field label={t("mail.invite.code")} id="invite" hint={t("mail.invite.codeHint")}>
          <input id="invite" name="invite" type="text" value={invite} autocomplete="off" maxlength={100} {...invalid("invite")} />
          {error("invite")}
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

  /**
   * Sign-up answers only while the administrator allows it, or with a live invitation; otherwise the page does not
   * exist. Returns the settings and the group the invitation leads to.
   */
  async function open(c: Context<WebEnv>, invite: string) {
    const deps = c.get("deps");
    const settings = await currentSettings(deps);
    siteGate(settings);
    // provider-only sign-in (docs/single-sign-on.md): new people come through the providers, not with a password
    if (!settings.passwordSignIn) throw forbidden(t("oidc.signUpOff"));
    if (!invite) {
      if (!settings.registrationEnabled) throw notFound(t("auth.signUpClosed"));
      return { settings, inviteGroup: undefined };
    }
    const invitation = await findLiveInvitation(deps.db, invite, deps.clock());
    if (!invitation) throw notFound(t("mail.invite.gone"));
    return { settings, inviteGroup: (await getGroup(deps.db, invitation.groupId))?.name };
  }

  web.get("/register", async (c) => {
    const invite = (c.req.query("invite") ?? "").trim().slice(0, 100);
    const { inviteGroup } = await open(c, invite);
    // the code is in the address: it leaves with no Referer
    c.header("Referrer-Policy", "no-referrer");
    return c.html(<RegisterPage invite={invite} inviteGroup={inviteGroup} />);
  });

  web.post("/register", requireThisSite, async (c) => {
    const deps = c.get("deps");
    const body = await readForm(c);
    const text = (name: string) => formField(body, name);
    const invite = text("invite").trim().slice(0, 100);
    const { settings, inviteGroup } = await open(c, invite);
    const username = text("username").trim();
    const email = text("email").trim().toLowerCase();
    const parsed = signUp().safeParse({ username, email, password: text("password") });
    if (!parsed.success) {
      const errors: Form["errors"] = {};
      for (const issue of parsed.error.issues) {
        const name = issue.path[0] as "username" | "email" | "password";
        errors[name] ??= issue.message;
      }
      return c.html(<RegisterPage username={username} email={email} invite={invite} inviteGroup={inviteGroup} errors={errors} />, 422);
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
      return c.html(<RegisterPage username={username} email={email} invite={invite} inviteGroup={inviteGroup} errors={{ form }} />, 429);
    }
    let user;
    let group;
    try {
      if (await isUsernameOrEmailTaken(deps.db, username, email)) {
        // the unit is kept: probing which addresses have accounts costs a sign-up each (SECURITY.md)
        const form = t("auth.taken");
        return c.html(<RegisterPage username={username} email={email} invite={invite} inviteGroup={inviteGroup} errors={{ form }} />, 422);
      }
      const passwordHash = await hashPassword(parsed.data.password);
      const made = await deps.db.transaction(async (tx) => {
        // an invitation's use is charged with the account: a failed sign-up gives it back, and none goes over
        const charged = invite ? await chargeInvitation(tx, invite, deps.clock()) : null;
        if (invite && !charged) return null;
        const joins = charged ? await getGroup(tx, charged.groupId) : await getDefaultGroup(tx);
        if (!joins) throw new AppError("internal", t("auth.noDefaultGroup"));
        const account = await createUser(tx, {
          username,
          email,
          name: username,
          groupId: joins.id,
          passwordHash,
          registeredIp: address,
          emailVerified: !settings.emailVerification,
        });
        return { account, joins };
      });
      if (!made) {
        reservation.refund();
        const errors = { invite: t("mail.invite.gone") };
        return c.html(<RegisterPage username={username} email={email} invite={invite} errors={errors} />, 422);
      }
      user = made.account;
      group = made.joins;
    } catch (e) {
      reservation.refund(); // no account was made
      if (!isUniqueViolation(e)) throw e;
      const form = t("auth.taken");
      return c.html(<RegisterPage username={username} email={email} invite={invite} inviteGroup={inviteGroup} errors={{ form }} />, 422);
    }
    accountGate(user, group); // a disabled default group: the account exists, and the error page says why it cannot sign in
    if (!user.emailVerified) queueEmailVerification(deps, user.id);
    // through the sign-in core: where the site requires a second factor, the new account sets one up first
    return completeSignIn(c, user, "password", { next: user.emailVerified ? `${BASE}/dashboard?welcome` : `${BASE}/verify` });
  });
}
