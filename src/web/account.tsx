/**
 * Account: the signed-in user changes their own password (the current one, the new one twice). The change ends
 * every other session of the account; "also revoke my API tokens" revokes every permanent and temporary token too,
 * so that tokens minted from a stolen session stop working with it.
 */
import type { Context, Hono } from "hono";
import { AppError } from "../errors.ts";
import { FailedAuthThrottle, type ThrottleLimits } from "../http/throttle.ts";
import { lookupCacheFor } from "../services/lookup-cache.ts";
import { hashPassword, PASSWORD_MAX, PASSWORD_MIN, verifyPassword } from "../services/passwords.ts";
import { changeOwnPassword } from "../services/sessions.ts";
import { formField, readForm } from "./form.ts";
import { Field, FieldError, FormToken, Layout, Notice } from "./layout.tsx";
import { BASE, requireSession, type SignedIn, type SignedInEnv, type WebEnv } from "./session.ts";

/** Wrong current passwords per account on this form: 5 at once, then one a minute (a stolen session cannot guess on). */
export const PASSWORD_CHANGE_FAILURES: ThrottleLimits = { burst: 5, perMinute: 1 };

type FieldName = "current_password" | "new_password" | "new_password_again";

interface Shown {
  notice?: string;
  refusal?: string;
  errors?: Partial<Record<FieldName, string>>;
  revokeTokens?: boolean;
}

function AccountPage({ signedIn, shown }: { signedIn: SignedIn; shown: Shown }) {
  const { notice, refusal, errors = {}, revokeTokens = false } = shown;
  const described = (name: FieldName) => (errors[name] ? { "aria-invalid": "true", "aria-describedby": `${name}-error` } : {});
  return (
    <Layout title="Account" signedIn={signedIn} active="account">
      {notice && <Notice kind="success">{notice}</Notice>}
      {refusal && <Notice kind="error">{refusal}</Notice>}
      <section class="card narrow" aria-labelledby="password-title">
        <h2 id="password-title">Change your password</h2>
        <p class="muted">Every other place you are signed in is signed out.</p>
        <form method="post" action={`${BASE}/account/password`} novalidate>
          <FormToken signedIn={signedIn} />
          <Field label="Current password" id="current_password">
            <input id="current_password" name="current_password" type="password" autocomplete="current-password" required maxlength={PASSWORD_MAX} {...described("current_password")} />
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
              <input type="checkbox" name="revoke_tokens" value="1" checked={revokeTokens} /> Also revoke all my API tokens (permanent and
              temporary): uploaders using them will get 401 until you give them new ones
            </label>
          </div>
          <button type="submit" class="primary">
            Change password
          </button>
        </form>
      </section>
    </Layout>
  );
}

function render(c: Context<SignedInEnv>, shown: Shown = {}, status: 200 | 401 | 403 | 422 | 429 = 200) {
  c.header("Cache-Control", "no-store");
  return c.html(<AccountPage signedIn={c.get("signedIn")} shown={shown} />, status);
}

export function register(web: Hono<WebEnv>) {
  const failures = new FailedAuthThrottle(PASSWORD_CHANGE_FAILURES);

  web.get("/account", requireSession, (c) => render(c, { notice: c.req.query("changed") !== undefined ? "Your password was changed." : undefined }));

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
    if (user.passwordHash === null) {
      return render(c, { refusal: "Your account has no password to change: ask the administrator of this site to set one.", revokeTokens }, 403);
    }

    // a wrong current password is reserved before it is verified (a stolen session cannot guess concurrently)
    let reservation;
    try {
      reservation = failures.reserve(`user:${user.id}`);
    } catch (e) {
      if (!(e instanceof AppError && e.status === 429)) throw e;
      const seconds = e.headers?.["retry-after"] ?? "60";
      c.header("Retry-After", seconds);
      return render(c, { refusal: `Too many wrong current passwords: retry in ${seconds} s.`, revokeTokens }, 429);
    }
    let right: boolean;
    try {
      right = await verifyPassword(current, user.passwordHash);
    } catch (e) {
      reservation.refund();
      throw e;
    }
    if (!right) return render(c, { errors: { current_password: "This is not your current password." }, revokeTokens }, 401);
    reservation.refund();

    const passwordHash = await hashPassword(next);
    const { tokensRevoked } = await changeOwnPassword(deps.db, { userId: user.id, sessionId: session.id, passwordHash, revokeTokens, now: deps.clock() });
    // the revoked tokens are refused at once on this instance, within the lookup cache's bound (1 s) on the others
    if (revokeTokens) lookupCacheFor(deps).forget("token:");
    const notice = revokeTokens
      ? `Your password was changed, you were signed out everywhere else, and ${tokensRevoked === 1 ? "1 API token was" : `${tokensRevoked} API tokens were`} revoked.`
      : "Your password was changed, and you were signed out everywhere else.";
    return render(c, { notice });
  });
}
