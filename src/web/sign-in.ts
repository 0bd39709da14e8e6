/**
 * The sign-in core: every way of signing in to the pages ends here (docs/decisions/sign-in-core.md).
 *
 *   completeSignIn(c, user, method, { next?, multiFactor? }): Promise<Response>
 *
 * Call it once the first step has proved who signs in: a right password (`method` "password"), a passkey
 * ("passkey", with `multiFactor: true` when the authenticator verified its user), an identity provider
 * ("oidc:<provider id>"). It checks the gates (the site's switch, the account, its group: a 403 AppError), then:
 * - when a second factor is due (the account has one) or must be enrolled (the site requires one of this account
 *   and it has none), it keeps a *pending sign-in* bound to this browser by the `ih_signin` cookie, ten minutes,
 *   and answers a 303 to the page that asks for the factor (`/user/login/second-factor`) or enrols one
 *   (`/user/login/enrol`); that page finishes the sign-in with `<method>+totp`, `+passkey` or `+recovery`;
 * - otherwise it opens the session at once.
 * Either way the session's secret is made when the sign-in completes, never before, and a session the browser held
 * before is ended (no session fixation); the session records `method`, shown on the Account page. The answer is a
 * 303 to `next` (a page of the user center, checked by safeNext) or to the step still due.
 */
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { getGroup } from "../db/repositories/groups.ts";
import type { User } from "../db/repositories/users.ts";
import { forbidden } from "../errors.ts";
import { accountGate, clientIp, currentSettings, siteGate } from "../http/auth.ts";
import { endSession, resolveSession } from "../services/sessions.ts";
import {
  endPendingSignIn,
  openSession,
  PENDING_SIGN_IN_MS,
  type PendingSignIn,
  resolvePendingSignIn,
  secondFactorDue,
  secondFactorsOf,
  startPendingSignIn,
} from "../services/sign-in.ts";
import { BASE, clearPagesCookie, clearSessionCookie, safeNext, sessionSecret, setPagesCookie, setSessionCookie, type WebEnv } from "./session.ts";

export const SECOND_FACTOR_PATH = `${BASE}/login/second-factor`;
export const ENROL_PATH = `${BASE}/login/enrol`;
const PENDING_COOKIE = "ih_signin";

export interface CompleteSignInOptions {
  /** Where to go once signed in (a page of the user center; anything else goes to the dashboard). */
  next?: string;
  /** The first step proved two factors already (a passkey whose authenticator verified its user): none is asked. */
  multiFactor?: boolean;
}

const setPendingCookie = <E extends WebEnv>(c: Context<E>, secret: string) => setPagesCookie(c, PENDING_COOKIE, secret, PENDING_SIGN_IN_MS);

/** Clears the pending sign-in's cookie when the browser sent one (once per answer: no stray Set-Cookie otherwise). */
function clearPendingCookie<E extends WebEnv>(c: Context<E>) {
  if (getCookie(c, PENDING_COOKIE) === undefined || c.res.headers.getSetCookie().some((v) => v.startsWith(`${PENDING_COOKIE}=`))) return;
  clearPagesCookie(c, PENDING_COOKIE);
}

/** This browser's live pending sign-in, or null (a stale cookie is cleared). */
export async function pendingSignInOf<E extends WebEnv>(c: Context<E>): Promise<PendingSignIn | null> {
  const secret = getCookie(c, PENDING_COOKIE);
  if (!secret) return null;
  const deps = c.get("deps");
  const pending = await resolvePendingSignIn(deps.db, secret, deps.clock());
  if (!pending) clearPendingCookie(c);
  return pending;
}

/** Starts a pending sign-in in this browser (replacing any it had) and sets its cookie. */
export async function beginPendingSignIn<E extends WebEnv>(
  c: Context<E>,
  values: { userId: number | null; stage: PendingSignIn["stage"]; method: string; next: string },
): Promise<PendingSignIn> {
  const deps = c.get("deps");
  await abandonPendingSignIn(c);
  const { secret, pending } = await startPendingSignIn(deps.db, { ...values, ip: clientIp(c), now: deps.clock() });
  setPendingCookie(c, secret);
  return pending;
}

/** Ends this browser's pending sign-in, if any, and clears its cookie. */
export async function abandonPendingSignIn<E extends WebEnv>(c: Context<E>) {
  const pending = await pendingSignInOf(c);
  if (pending) await endPendingSignIn(c.get("deps").db, pending.id);
  clearPendingCookie(c);
}

/** The first step passed: opens the session, or leads to the second factor or its enrolment. See the file's comment. */
export async function completeSignIn<E extends WebEnv>(c: Context<E>, user: User, method: string, options: CompleteSignInOptions = {}): Promise<Response> {
  const deps = c.get("deps");
  const [settings, group] = await Promise.all([currentSettings(deps), getGroup(deps.db, user.groupId)]);
  siteGate(settings);
  if (!group) throw forbidden("Your account has no group: ask the administrator of this site.");
  accountGate(user, group);
  const next = safeNext(options.next);
  const due = secondFactorDue(settings.requireSecondFactor, user, await secondFactorsOf(deps.db, user.id), options.multiFactor ?? false);
  if (due === "complete") {
    await abandonPendingSignIn(c);
    await openSignedInSession(c, { userId: user.id, method });
    return c.redirect(next, 303);
  }
  await beginPendingSignIn(c, { userId: user.id, stage: due, method, next });
  return c.redirect(due === "enrol" ? ENROL_PATH : SECOND_FACTOR_PATH, 303);
}

/**
 * Opens the session a sign-in ends in and sets its cookie; the session this browser held before ends, and so does
 * the pending sign-in (`pendingId`, taken in the session's transaction: false when another request completed it first).
 */
export async function openSignedInSession<E extends WebEnv>(c: Context<E>, values: { userId: number; method: string; pendingId?: number }): Promise<boolean> {
  const deps = c.get("deps");
  const now = deps.clock();
  const before = sessionSecret(c);
  const opened = await openSession(deps.db, { ...values, ip: clientIp(c), now, userAgent: c.req.header("user-agent") });
  if (!opened) {
    clearPendingCookie(c);
    return false;
  }
  if (before) {
    const previous = await resolveSession(deps.db, before, now);
    if (previous) await endSession(deps.db, previous.session.id);
    clearSessionCookie(c);
  }
  setSessionCookie(c, opened.secret);
  clearPendingCookie(c);
  return true;
}
