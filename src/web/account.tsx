/**
 * Account: the signed-in user changes their own email and password (each asks for the current password), and sees
 * where the account is signed in.
 *
 * - The email: the admin API's rules (a valid address, at most 254 characters, stored in lower case, unique); a
 *   taken one is refused without saying whose.
 * - The password (the current one, the new one twice): the change ends every other session of the account; "also
 *   revoke my API tokens" revokes every permanent and temporary token too, so that tokens minted from a stolen
 *   session stop working with it.
 * - The sessions: each live session of the account with its device (from the User-Agent at sign-in), address and
 *   last sign of life; one other session, or all the others, can be ended here. Ending this session is signing out.
 *
 * Wrong current passwords on either form count together against the account (PASSWORD_CHANGE_FAILURES).
 */
import { z } from "@hono/zod-openapi";
import type { Context, Hono } from "hono";
import { isEmailTakenByOther } from "../db/repositories/sessions.ts";
import { updateUser, type User } from "../db/repositories/users.ts";
import type { Session } from "../db/repositories/sessions.ts";
import { AppError, notFound } from "../errors.ts";
import { FailedAuthThrottle, type ThrottleLimits } from "../http/throttle.ts";
import { formatUtc } from "../http/time.ts";
import { INT4_MAX } from "../http/validation.ts";
import { hashPassword, PASSWORD_MAX, PASSWORD_MIN, verifyPassword } from "../services/passwords.ts";
import { changeOwnPassword, describeUserAgent, endSession, endSessionOfUser, endSessionsOfUser, liveSessionsOf } from "../services/sessions.ts";
import { formField, readForm } from "./form.ts";
import { Field, FieldError, FormToken, Layout, Notice } from "./components/index.ts";
import { BASE, clearSessionCookie, requireSession, type SignedIn, type SignedInEnv, type WebEnv } from "./session.ts";
import { servicesOf } from "../services/index.ts";

/** Wrong current passwords per account on these forms: 5 at once, then one a minute (a stolen session cannot guess on). */
const PASSWORD_CHANGE_FAILURES: ThrottleLimits = { burst: 5, perMinute: 1 };

/** The longest email, as on sign-up. */
const EMAIL_MAX = 254;
const Email = z.email("Enter a valid email address, like name@example.com.").max(EMAIL_MAX, `Use at most ${EMAIL_MAX} characters.`);

/**
 * A date as every page of the user center writes it: in UTC, saying so, inside `<time datetime>` with the exact
 * instant, which the pages' script (app.js) rewrites to the viewer's own time zone.
 */
export const UtcTime = ({ at }: { at: Date }) => <time datetime={at.toISOString()}>{formatUtc(at)}</time>;

type FieldName = "current_password" | "new_password" | "new_password_again" | "email" | "email_password";

interface Shown {
  notice?: string;
  refusal?: string;
  errors?: Partial<Record<FieldName, string>>;
  revokeTokens?: boolean;
  /** The email as typed, shown again after a refusal. */
  email?: string;
}

interface Listed {
  sessions: Session[];
}

function SessionRow({ s, signedIn }: { s: Session; signedIn: SignedIn }) {
  const current = s.id === signedIn.session.id;
  const device = describeUserAgent(s.userAgent);
  const address = s.ip || "unknown address";
  return (
    <tr data-session={String(s.id)} class={current ? "current" : undefined}>
      <td data-label="Device">
        <strong>{device}</strong>
        {current && <span class="badge this-session">this session</span>}
        {s.userAgent && <small class="muted ua">{s.userAgent}</small>}
      </td>
      <td data-label="Address">{address}</td>
      <td data-label="Last seen">
        <UtcTime at={s.lastSeenAt} />
      </td>
      <td data-label="Signed in">
        <UtcTime at={s.createdAt} />
      </td>
      <td>
        {current ? (
          <form method="post" action={`${BASE}/logout`}>
            <FormToken signedIn={signedIn} />
            <button type="submit" class="small" aria-label="Sign out of this session">
              Sign out
            </button>
          </form>
        ) : (
          <form method="post" action={`${BASE}/account/sessions/${s.id}/end`}>
            <FormToken signedIn={signedIn} />
            <button type="submit" class="danger small">
              End session <span class="visually-hidden">{`of ${device} at ${address}`}</span>
            </button>
          </form>
        )}
      </td>
    </tr>
  );
}

function AccountPage({ signedIn, shown, listed }: { signedIn: SignedIn; shown: Shown; listed: Listed }) {
  const { notice, refusal, errors = {}, revokeTokens = false } = shown;
  const described = (name: FieldName) => (errors[name] ? { "aria-invalid": "true", "aria-describedby": `${name}-error` } : {});
  const others = listed.sessions.filter((s) => s.id !== signedIn.session.id).length;
  return (
    <Layout title="Account" signedIn={signedIn} active="account">
      {notice && <Notice kind="success">{notice}</Notice>}
      {refusal && <Notice kind="error">{refusal}</Notice>}
      <section class="card narrow" aria-labelledby="email-title">
        <h2 id="email-title">Email address</h2>
        <p>
          Now: <strong data-testid="current-email">{signedIn.user.email}</strong>
        </p>
        <form method="post" action={`${BASE}/account/email`} novalidate>
          <FormToken signedIn={signedIn} />
          <Field label="New email" id="email">
            <input id="email" name="email" type="email" autocomplete="email" required maxlength={EMAIL_MAX} value={shown.email ?? ""} {...described("email")} />
            <FieldError id="email" error={errors.email} />
          </Field>
          <Field label="Current password" id="email_password" hint="To confirm it is you">
            <input
              id="email_password"
              name="current_password"
              type="password"
              autocomplete="current-password"
              required
              maxlength={PASSWORD_MAX}
              {...(errors.email_password ? described("email_password") : { "aria-describedby": "email_password-hint" })}
            />
            <FieldError id="email_password" error={errors.email_password} />
          </Field>
          <button type="submit" class="primary">
            Change email
          </button>
        </form>
      </section>
      <section class="card narrow" aria-labelledby="password-title">
        <h2 id="password-title">Change your password</h2>
        <p class="muted">Every other place you are signed in is signed out.</p>
        <form method="post" action={`${BASE}/account/password`} novalidate>
          <FormToken signedIn={signedIn} />
          <Field label="Current password" id="current_password">
            <input
              id="current_password"
              name="current_password"
              type="password"
              autocomplete="current-password"
              required
              maxlength={PASSWORD_MAX}
              {...described("current_password")}
            />
            <FieldError id="current_password" error={errors.current_password} />
          </Field>
          <Field label="New password" id="new_password" hint={`At least ${PASSWORD_MIN} characters`}>
            <input
              id="new_password"
              name="new_password"
              type="password"
              autocomplete="new-password"
              required
              minlength={PASSWORD_MIN}
              maxlength={PASSWORD_MAX}
              {...described("new_password")}
            />
            <FieldError id="new_password" error={errors.new_password} />
          </Field>
          <Field label="New password, again" id="new_password_again">
            <input
              id="new_password_again"
              name="new_password_again"
              type="password"
              autocomplete="new-password"
              required
              maxlength={PASSWORD_MAX}
              {...described("new_password_again")}
            />
            <FieldError id="new_password_again" error={errors.new_password_again} />
          </Field>
          <div class="field checkbox">
            <label>
              <input type="checkbox" name="revoke_tokens" value="1" checked={revokeTokens} /> Also revoke all my API tokens (permanent and temporary): uploaders
              using them will get 401 until you give them new ones
            </label>
          </div>
          <button type="submit" class="primary">
            Change password
          </button>
        </form>
      </section>
      <section class="card" aria-labelledby="sessions-title">
        <h2 id="sessions-title">Where you are signed in</h2>
        <p class="muted">
          Each browser signed in to your account, the most recently used first. The device is what the browser said at sign-in; an address or a device you do
          not know: end that session, and change your password.
        </p>
        <div class="table-wrap">
          <table class="stack sessions">
            <thead>
              <tr>
                <th scope="col">Device</th>
                <th scope="col">Address</th>
                <th scope="col">Last seen</th>
                <th scope="col">Signed in</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {listed.sessions.map((s) => (
                <SessionRow s={s} signedIn={signedIn} />
              ))}
            </tbody>
          </table>
        </div>
        {others > 0 ? (
          <form method="post" action={`${BASE}/account/sessions/end-others`} class="end-others">
            <FormToken signedIn={signedIn} />
            <button type="submit" class="danger">
              Sign out everywhere else ({others === 1 ? "1 other session" : `${others} other sessions`})
            </button>
          </form>
        ) : (
          <p class="muted small">You are signed in nowhere else.</p>
        )}
      </section>
    </Layout>
  );
}

type Status = 200 | 401 | 403 | 422 | 429;

async function render(c: Context<SignedInEnv>, shown: Shown = {}, status: Status = 200, user?: User) {
  const deps = c.get("deps");
  const signedIn = user ? { ...c.get("signedIn"), user } : c.get("signedIn");
  const sessions = await liveSessionsOf(deps.db, signedIn.user.id, deps.clock());
  c.header("Cache-Control", "no-store");
  return c.html(<AccountPage signedIn={signedIn} shown={shown} listed={{ sessions }} />, status);
}

/** The notices of the redirects after a form (`?changed`, `?ended`, …). */
function noticeOf(c: Context<SignedInEnv>): string | undefined {
  const q = (name: string) => c.req.query(name) !== undefined;
  if (q("changed")) return "Your password was changed.";
  if (q("ended")) return "That session has ended: the browser using it is signed out.";
  if (q("ended_all")) return "Every other session has ended: you are signed in here only.";
  return undefined;
}

const sessionIdOf = (value: string) => (/^\d{1,10}$/.test(value) && Number(value) >= 1 && Number(value) <= INT4_MAX ? Number(value) : 0);

export function register(web: Hono<WebEnv>) {
  const failures = new FailedAuthThrottle(PASSWORD_CHANGE_FAILURES);

  /**
   * Checks the current password typed on a form of this page: "ok", or the page that refuses it. A wrong password is
   * reserved against the account before it is verified (a stolen session cannot guess concurrently).
   */
  async function currentPasswordCheck(
    c: Context<SignedInEnv>,
    given: string,
    refuse: (message: string, status: 401 | 403 | 429) => Promise<Response>,
  ): Promise<"ok" | Response> {
    const { user } = c.get("signedIn");
    if (user.passwordHash === null) return refuse("Your account has no password: ask the administrator of this site to set one.", 403);
    let reservation;
    try {
      reservation = failures.reserve(`user:${user.id}`);
    } catch (e) {
      if (!(e instanceof AppError && e.status === 429)) throw e;
      const seconds = e.headers?.["retry-after"] ?? "60";
      c.header("Retry-After", seconds);
      return refuse(`Too many wrong current passwords: retry in ${seconds} s.`, 429);
    }
    let right: boolean;
    try {
      right = await verifyPassword(given, user.passwordHash);
    } catch (e) {
      reservation.refund();
      throw e;
    }
    if (!right) return refuse("This is not your current password.", 401);
    reservation.refund();
    return "ok";
  }

  web.get("/account", requireSession, (c) => render(c, { notice: noticeOf(c) }));

  web.post("/account/email", requireSession, async (c) => {
    const deps = c.get("deps");
    const { user } = c.get("signedIn");
    const body = await readForm(c);
    const typed = formField(body, "email").trim();
    const current = formField(body, "current_password");
    const shownEmail = typed.slice(0, EMAIL_MAX * 2);
    const errors: Shown["errors"] = {};
    const parsed = Email.safeParse(typed);
    if (!typed) errors.email = "Enter the new email address.";
    else if (!parsed.success) errors.email = parsed.error.issues[0]!.message;
    else if (parsed.data.toLowerCase() === user.email) errors.email = "This is already your email address.";
    if (!current) errors.email_password = "Enter your current password.";
    if (Object.keys(errors).length > 0) return render(c, { errors, email: shownEmail }, 422);
    const email = parsed.data!.toLowerCase();

    const checked = await currentPasswordCheck(c, current, (message, status) =>
      status === 401
        ? render(c, { errors: { email_password: message }, email: shownEmail }, status)
        : render(c, { refusal: message, email: shownEmail }, status),
    );
    if (checked !== "ok") return checked;

    const taken = () => render(c, { errors: { email: "This email address is already used by another account." }, email: shownEmail }, 422);
    if (await isEmailTakenByOther(deps.db, email, user.id)) return taken();
    let updated: User | null;
    try {
      updated = await updateUser(deps.db, user.id, { email });
    } catch (e) {
      if (isUniqueViolation(e)) return taken(); // taken meanwhile
      throw e;
    }
    if (!updated) throw notFound("Your account no longer exists.");
    return render(c, { notice: `Your email address is now ${updated.email}.` }, 200, updated);
  });

  web.post("/account/password", requireSession, async (c) => {
    const deps = c.get("deps");
    const { user, session } = c.get("signedIn");
    const body = await readForm(c);
    const current = formField(body, "current_password");
    const next = formField(body, "new_password");
    const again = formField(body, "new_password_again");
    const revokeTokens = formField(body, "revoke_tokens") === "1";
    const errors: Shown["errors"] = {};
    if (!current) errors.current_password = "Enter your current password.";
    if (next.length < PASSWORD_MIN) errors.new_password = `Use at least ${PASSWORD_MIN} characters.`;
    else if (next.length > PASSWORD_MAX) errors.new_password = `Use at most ${PASSWORD_MAX} characters.`;
    else if (again !== next) errors.new_password_again = "The two new passwords differ.";
    if (Object.keys(errors).length > 0) return render(c, { errors, revokeTokens }, 422);

    const checked = await currentPasswordCheck(c, current, (message, status) =>
      status === 401 ? render(c, { errors: { current_password: message }, revokeTokens }, status) : render(c, { refusal: message, revokeTokens }, status),
    );
    if (checked !== "ok") return checked;

    const passwordHash = await hashPassword(next);
    const { tokensRevoked } = await changeOwnPassword(deps.db, { userId: user.id, sessionId: session.id, passwordHash, revokeTokens, now: deps.clock() });
    // the revoked tokens are refused at once on this instance, within the lookup cache's bound (1 s) on the others
    if (revokeTokens) servicesOf(deps).lookups.forget("token:");
    const notice = revokeTokens
      ? `Your password was changed, you were signed out everywhere else, and ${tokensRevoked === 1 ? "1 API token was" : `${tokensRevoked} API tokens were`} revoked.`
      : "Your password was changed, and you were signed out everywhere else.";
    return render(c, { notice });
  });

  // one session of the account ends (with the upload tokens it obtained); this one is signing out
  web.post("/account/sessions/:id/end", requireSession, async (c) => {
    const deps = c.get("deps");
    const { user, session } = c.get("signedIn");
    const id = sessionIdOf(c.req.param("id"));
    if (id === session.id) {
      await endSession(deps.db, session.id);
      servicesOf(deps).lookups.forget("token:");
      clearSessionCookie(c);
      return c.redirect(`${BASE}/login?signed_out`, 303);
    }
    if (!(id > 0 && (await endSessionOfUser(deps.db, user.id, id)))) throw notFound("There is no such session: it may have ended already.");
    // its upload tokens went with it: this instance refuses them at once, the others within 1 s
    servicesOf(deps).lookups.forget("token:");
    return c.redirect(`${BASE}/account?ended`, 303);
  });

  web.post("/account/sessions/end-others", requireSession, async (c) => {
    const deps = c.get("deps");
    const { user, session } = c.get("signedIn");
    await endSessionsOfUser(deps.db, user.id, session.id);
    servicesOf(deps).lookups.forget("token:");
    return c.redirect(`${BASE}/account?ended_all`, 303);
  });
}

const isUniqueViolation = (e: unknown) => {
  const err = e as { code?: string; cause?: { code?: string } };
  return err.code === "23505" || err.cause?.code === "23505";
};
