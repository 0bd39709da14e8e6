/**
 * Account: the signed-in user changes their own email and password (each asks for the current password), their
 * language and theme (the account menu's preferences), and sees where the account is signed in. The page is in
 * account/page.tsx.
 *
 * - The email: the admin API's rules (a valid address, at most 254 characters, stored in lower case, unique); a
 *   taken one is refused without saying whose.
 * - The password (the current one, the new one twice): the change ends every other session of the account; "also
 *   revoke my API tokens" revokes every permanent and temporary token too, so that tokens minted from a stolen
 *   session stop working with it.
 * - The sessions: each live session of the account with its device (from the User-Agent at sign-in), address, how it
 *   signed in and last sign of life; one other session, or all the others, can be ended here. Ending this session is
 *   signing out.
 *
 * Wrong current passwords on either form count together against the account (PASSWORD_CHANGE_FAILURES).
 */
import { z } from "@hono/zod-openapi";
import type { Context, Hono } from "hono";
import { isEmailTakenByOther } from "../db/repositories/sessions.ts";
import { updateUser, type User } from "../db/repositories/users.ts";
import { AppError, notFound } from "../errors.ts";
import { FailedAuthThrottle, type ThrottleLimits } from "../http/throttle.ts";
import { INT4_MAX } from "../http/validation.ts";
import { servicesOf } from "../services/index.ts";
import { hashPassword, PASSWORD_MAX, PASSWORD_MIN, verifyPassword } from "../services/passwords.ts";
import { changeOwnPassword, endSession, endSessionOfUser, endSessionsOfUser, liveSessionsOf } from "../services/sessions.ts";
import { AccountPage, EMAIL_MAX, type Shown } from "./account/page.tsx";
import { formField, readForm } from "./form.ts";
import { t } from "./i18n/index.ts";
import { BASE, clearSessionCookie, requireSession, type SignedInEnv, type WebEnv } from "./session.ts";

/** Wrong current passwords per account on these forms: 5 at once, then one a minute (a stolen session cannot guess on). */
const PASSWORD_CHANGE_FAILURES: ThrottleLimits = { burst: 5, perMinute: 1 };

const Email = z.email().max(EMAIL_MAX);

type Status = 200 | 401 | 403 | 422 | 429;

async function render(c: Context<SignedInEnv>, shown: Shown = {}, status: Status = 200, user?: User) {
  const deps = c.get("deps");
  const signedIn = user ? { ...c.get("signedIn"), user } : c.get("signedIn");
  const sessions = await liveSessionsOf(deps.db, signedIn.user.id, deps.clock());
  c.header("Cache-Control", "no-store");
  return c.html(<AccountPage signedIn={signedIn} shown={shown} sessions={sessions} />, status);
}

/** The notices of the redirects after a form (`?changed`, `?ended`, …). */
function noticeOf(c: Context<SignedInEnv>): string | undefined {
  const q = (name: string) => c.req.query(name) !== undefined;
  if (q("changed")) return t("account.password.changed");
  if (q("ended")) return t("account.sessions.ended");
  if (q("ended_all")) return t("account.sessions.endedAll");
  if (q("preferences")) return t("account.prefs.saved");
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
    if (user.passwordHash === null) return refuse(t("account.error.noPassword"), 403);
    let reservation;
    try {
      reservation = failures.reserve(`user:${user.id}`);
    } catch (e) {
      if (!(e instanceof AppError && e.status === 429)) throw e;
      const seconds = e.headers?.["retry-after"] ?? "60";
      c.header("Retry-After", seconds);
      return refuse(t("account.error.tooMany", { seconds }), 429);
    }
    let right: boolean;
    try {
      right = await verifyPassword(given, user.passwordHash);
    } catch (e) {
      reservation.refund();
      throw e;
    }
    if (!right) return refuse(t("account.error.wrongPassword"), 401);
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
    if (!typed) errors.email = t("account.error.emailEmpty");
    else if (!parsed.success) errors.email = typed.length > EMAIL_MAX ? t("account.error.atMost", { max: EMAIL_MAX }) : t("account.error.emailInvalid");
    else if (parsed.data.toLowerCase() === user.email) errors.email = t("account.error.sameEmail");
    if (!current) errors.email_password = t("account.error.currentEmpty");
    if (Object.keys(errors).length > 0) return render(c, { errors, email: shownEmail }, 422);
    const email = parsed.data!.toLowerCase();

    const checked = await currentPasswordCheck(c, current, (message, status) =>
      status === 401
        ? render(c, { errors: { email_password: message }, email: shownEmail }, status)
        : render(c, { refusal: message, email: shownEmail }, status),
    );
    if (checked !== "ok") return checked;

    const taken = () => render(c, { errors: { email: t("account.error.emailTaken") }, email: shownEmail }, 422);
    if (await isEmailTakenByOther(deps.db, email, user.id)) return taken();
    let updated: User | null;
    try {
      updated = await updateUser(deps.db, user.id, { email });
    } catch (e) {
      if (isUniqueViolation(e)) return taken(); // taken meanwhile
      throw e;
    }
    if (!updated) throw notFound(t("account.error.gone"));
    return render(c, { notice: t("account.email.changed", { email: updated.email }) }, 200, updated);
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
    if (!current) errors.current_password = t("account.error.currentEmpty");
    if (next.length < PASSWORD_MIN) errors.new_password = t("account.error.atLeast", { min: PASSWORD_MIN });
    else if (next.length > PASSWORD_MAX) errors.new_password = t("account.error.atMost", { max: PASSWORD_MAX });
    else if (again !== next) errors.new_password_again = t("account.error.differ");
    if (Object.keys(errors).length > 0) return render(c, { errors, revokeTokens }, 422);

    const checked = await currentPasswordCheck(c, current, (message, status) =>
      status === 401 ? render(c, { errors: { current_password: message }, revokeTokens }, status) : render(c, { refusal: message, revokeTokens }, status),
    );
    if (checked !== "ok") return checked;

    const passwordHash = await hashPassword(next);
    const { tokensRevoked } = await changeOwnPassword(deps.db, { userId: user.id, sessionId: session.id, passwordHash, revokeTokens, now: deps.clock() });
    // the revoked tokens are refused at once on this instance, within the lookup cache's bound (1 s) on the others
    if (revokeTokens) servicesOf(deps).lookups.forget("token:");
    const notice = revokeTokens ? t("account.password.changedRevoked", { count: tokensRevoked }) : t("account.password.changedSignedOut");
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
    if (!(id > 0 && (await endSessionOfUser(deps.db, user.id, id)))) throw notFound(t("account.sessions.noSuch"));
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
