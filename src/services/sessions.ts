import { createHmac, timingSafeEqual } from "node:crypto";
import type { Executor } from "../db/client.ts";
import {
  deleteExpiredSessions,
  deleteSession,
  findLiveSession,
  insertSession,
  type Session,
  touchSession,
} from "../db/repositories/sessions.ts";
import { randomToken, sha256Hex } from "./secrets.ts";

/** A session ends after a week without use, and a month after sign-in whatever its use. */
export const SESSION_IDLE_MS = 7 * 86_400_000;
export const SESSION_MAX_MS = 30 * 86_400_000;
/** Signs of life are written at most once a minute per session. */
const TOUCH_EVERY_MS = 60_000;

const absoluteEnd = (session: Pick<Session, "createdAt">) => session.createdAt.getTime() + SESSION_MAX_MS;
const idleEnd = (session: Pick<Session, "createdAt">, now: Date) => new Date(Math.min(now.getTime() + SESSION_IDLE_MS, absoluteEnd(session)));

/**
 * Starts a session for the account: a random secret of 256 bits for the cookie, only its SHA-256 stored. Sessions
 * that expired (anyone's) are forgotten on the way, with the upload tokens they obtained.
 */
export async function startSession(db: Executor, userId: number, ip: string, now: Date) {
  await deleteExpiredSessions(db, now);
  const secret = randomToken(32);
  const session = await insertSession(db, {
    secretHash: sha256Hex(secret),
    userId,
    ip,
    createdAt: now,
    lastSeenAt: now,
    expiresAt: idleEnd({ createdAt: now }, now),
  });
  return { secret, session };
}

/**
 * The live session of this secret with its account and group, read from the database (so a sign-out or a change
 * of the account on any instance counts at once); its idle expiry moves on at most once a minute. Null when the
 * secret names no session or an expired one.
 */
export async function resolveSession(db: Executor, secret: string, now: Date) {
  if (!/^[\w-]{20,100}$/.test(secret)) return null;
  const found = await findLiveSession(db, sha256Hex(secret), now);
  if (!found) return null;
  if (now.getTime() - found.session.lastSeenAt.getTime() >= TOUCH_EVERY_MS) {
    const expiresAt = idleEnd(found.session, now);
    await touchSession(db, found.session.id, now, expiresAt);
    found.session = { ...found.session, lastSeenAt: now, expiresAt };
  }
  return found;
}

export const endSession = (db: Executor, sessionId: number) => deleteSession(db, sessionId);

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
