import { createHmac, timingSafeEqual } from "node:crypto";
import type { Executor } from "../db/client.ts";
import {
  deleteExpiredSessions,
  deleteSession,
  deleteSessionOfUser,
  deleteSessionsOfUser,
  findLiveSession,
  insertSession,
  listLiveSessionsOfUser,
  lockSessionsOfUser,
  type Session,
  touchSession,
  trimSessionsOfUser,
} from "../db/repositories/sessions.ts";
import { deleteExpiredPendingSignIns } from "../db/repositories/pending-sign-ins.ts";
import { revokeAllTokensOf } from "./tokens.ts";
import { updateUser } from "../db/repositories/users.ts";
import { randomToken, sha256Hex } from "./secrets.ts";

/** A session ends after a week without use, and a month after sign-in whatever its use. */
export const SESSION_IDLE_MS = 7 * 86_400_000;
export const SESSION_MAX_MS = 30 * 86_400_000;
/** Signs of life are written at most once a minute per session. */
const TOUCH_EVERY_MS = 60_000;

/** An administrator's session ends sooner: after 30 minutes without use, 12 hours after sign-in. */
const ADMIN_SESSION_IDLE_MS = 30 * 60_000;
const ADMIN_SESSION_MAX_MS = 12 * 3_600_000;

type Role = "user" | "admin";
const limitsOf = (role: Role = "user") =>
  role === "admin" ? { idle: ADMIN_SESSION_IDLE_MS, max: ADMIN_SESSION_MAX_MS } : { idle: SESSION_IDLE_MS, max: SESSION_MAX_MS };
const absoluteEnd = (session: Pick<Session, "createdAt">, role?: Role) => session.createdAt.getTime() + limitsOf(role).max;
const idleEnd = (session: Pick<Session, "createdAt">, now: Date, role?: Role) =>
  new Date(Math.min(now.getTime() + limitsOf(role).idle, absoluteEnd(session, role)));

/** Sessions one account keeps: a sign-in beyond ends its oldest (by sign-in), with the upload tokens it obtained. */
export const SESSIONS_PER_ACCOUNT = 20;

/** The longest User-Agent kept with a session (characters). */
const USER_AGENT_MAX = 300;

/** The browser's User-Agent as a session keeps it: control characters removed, at most USER_AGENT_MAX characters. */
function cleanUserAgent(header: string | undefined | null): string {
  return [...(header ?? "").replace(/\p{Cc}/gu, "").trim()].slice(0, USER_AGENT_MAX).join("").trim();
}

/**
 * Starts a session for the account, recording how it signed in (`method`, docs/decisions/sign-in-core.md; sign-ins
 * go through web/sign-in.ts, which decides first whether a second factor is due): a random secret of 256 bits for the cookie, only its SHA-256 stored. Under the
 * account's lock, in one transaction: its expired sessions are forgotten, the new one is inserted, and those beyond
 * its SESSIONS_PER_ACCOUNT newest end (with the upload tokens they obtained), so concurrent sign-ins cannot overshoot.
 */
export async function startSession(db: Executor, userId: number, ip: string, now: Date, userAgent = "", method = "password") {
  const secret = randomToken(32);
  const session = await db.transaction(async (tx) => {
    await lockSessionsOfUser(tx, userId);
    await deleteExpiredSessions(tx, now, userId);
    const inserted = await insertSession(tx, {
      secretHash: sha256Hex(secret),
      userId,
      ip,
      userAgent: cleanUserAgent(userAgent),
      method,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: idleEnd({ createdAt: now }, now),
    });
    await trimSessionsOfUser(tx, userId, SESSIONS_PER_ACCOUNT);
    return inserted;
  });
  return { secret, session };
}

/** Forgets everyone's expired sessions, pending sign-ins and WebAuthn challenges (the sweeper, every round). */
export async function pruneSessions(db: Executor, now: Date) {
  await deleteExpiredSessions(db, now);
  await deleteExpiredPendingSignIns(db, now);
}

/** Ends every session of the account, but `exceptId` when given (a password change keeps the session that made it). */
export const endSessionsOfUser = (db: Executor, userId: number, exceptId?: number) => deleteSessionsOfUser(db, userId, exceptId);

/**
 * The live session of this secret with its account and group, read from the database (so a sign-out or a change
 * of the account on any instance counts at once); its idle expiry moves on at most once a minute. Null when the
 * secret names no session or an expired one.
 */
export async function resolveSession(db: Executor, secret: string, now: Date) {
  if (!/^[\w-]{20,100}$/.test(secret)) return null;
  const found = await findLiveSession(db, sha256Hex(secret), now);
  if (!found) return null;
  const role = found.user.role;
  // the role's own limits (an account made administrator keeps a session started as a user only within them)
  const { idle } = limitsOf(role);
  if (now.getTime() - found.session.lastSeenAt.getTime() >= idle || now.getTime() >= absoluteEnd(found.session, role)) {
    await deleteSession(db, found.session.id);
    return null;
  }
  if (now.getTime() - found.session.lastSeenAt.getTime() >= TOUCH_EVERY_MS) {
    const expiresAt = idleEnd(found.session, now, role);
    await touchSession(db, found.session.id, now, expiresAt);
    found.session = { ...found.session, lastSeenAt: now, expiresAt };
  }
  return found;
}

export const endSession = (db: Executor, sessionId: number) => deleteSession(db, sessionId);

/** Sessions listed on the Account page at most (an account keeps SESSIONS_PER_ACCOUNT). */
const SESSIONS_LISTED = SESSIONS_PER_ACCOUNT;

/** The account's live sessions, the most recently used first. */
export const liveSessionsOf = (db: Executor, userId: number, now: Date) => listLiveSessionsOfUser(db, userId, now, SESSIONS_LISTED);

/** Ends one of the account's own sessions (and the upload tokens it obtained); false when it has no such session. */
export const endSessionOfUser = (db: Executor, userId: number, sessionId: number) => deleteSessionOfUser(db, sessionId, userId);

/** What a User-Agent says in plain words: "Chrome on Linux", "Safari on iPhone", or "Unknown browser". */
export function describeUserAgent(ua: string): string {
  const browser = /\bEdg(e|A|iOS)?\//.test(ua)
    ? "Edge"
    : /\b(OPR|Opera)\//.test(ua)
      ? "Opera"
      : /\bSamsungBrowser\//.test(ua)
        ? "Samsung Internet"
        : /\b(Firefox|FxiOS)\//.test(ua)
          ? "Firefox"
          : /\b(HeadlessChrome|Chrome|CriOS|Chromium)\//.test(ua)
            ? "Chrome"
            : /\bVersion\/[\d.]+.*\bSafari\//.test(ua) || (/\bAppleWebKit\//.test(ua) && /\b(iPhone|iPad|iPod)\b/.test(ua))
              ? "Safari"
              : null;
  const system = /\biPhone\b/.test(ua)
    ? "iPhone"
    : /\biPad\b/.test(ua)
      ? "iPad"
      : /\biPod\b/.test(ua)
        ? "iPod"
        : /\bAndroid\b/.test(ua)
          ? "Android"
          : /\bWindows\b/.test(ua)
            ? "Windows"
            : /\bCrOS\b/.test(ua)
              ? "ChromeOS"
              : /\bMac OS X\b|\bMacintosh\b/.test(ua)
                ? "macOS"
                : /\bLinux\b|\bX11\b/.test(ua)
                  ? "Linux"
                  : null;
  if (!browser) return "Unknown browser";
  return system ? `${browser} on ${system}` : browser;
}

/**
 * The session's form token (CSRF): derived from the cookie's secret, which a page of another site can neither read
 * nor send in a form field, so nothing more is stored. Knowing it does not reveal the secret.
 */
export const formTokenFor = (secret: string) => createHmac("sha256", secret).update("user-center form token").digest("base64url");

/** Whether `given` is the session's form token, compared in constant time. */
export function isFormTokenOf(secret: string, given: string | undefined | null): boolean {
  if (!given) return false;
  const expected = Buffer.from(formTokenFor(secret));
  const actual = Buffer.from(given);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/**
 * The account's own password change from a signed-in session (the current password already verified): the new
 * hash is stored, every other session of the account ends, and with `revokeTokens` every API token of the account
 * (permanent and temporary, and those a stolen session may have minted) is revoked, but the upload tokens of the
 * session that made the change. One transaction. Returns how many tokens were revoked.
 */
export async function changeOwnPassword(
  db: Executor,
  change: { userId: number; sessionId: number; passwordHash: string; revokeTokens: boolean; now: Date },
): Promise<{ tokensRevoked: number }> {
  return db.transaction(async (tx) => {
    await updateUser(tx, change.userId, { passwordHash: change.passwordHash });
    await deleteSessionsOfUser(tx, change.userId, change.sessionId);
    const tokensRevoked = change.revokeTokens ? await revokeAllTokensOf(tx, change.userId, change.now, change.sessionId) : 0;
    return { tokensRevoked };
  });
}
