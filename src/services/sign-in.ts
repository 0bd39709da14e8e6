/**
 * The rules every sign-in follows, whatever proved who signs in first (a password, a passkey, an identity provider):
 * whether a second factor is still due, the pending sign-in that waits for it, and the session it ends in, which
 * records how it signed in. docs/decisions/sign-in-core.md; the HTTP side is web/sign-in.ts.
 */
import type { Executor } from "../db/client.ts";
import {
  countPendingFailure,
  deletePendingSignIn,
  findPendingSignIn,
  insertPendingSignIn,
  type PendingSignIn,
  updatePendingSignIn,
} from "../db/repositories/pending-sign-ins.ts";
import { secondFactorsOfUser } from "../db/repositories/second-factors.ts";
import type { User } from "../db/repositories/users.ts";
import type { SecondFactorRequirement } from "../db/schema.ts";
import { randomToken, sha256Hex } from "./secrets.ts";
import { startSession } from "./sessions.ts";

export type { PendingSignIn };

/** A pending sign-in lives ten minutes: time to find the phone, not to leave a half-open door. */
export const PENDING_SIGN_IN_MS = 10 * 60_000;
/** Wrong codes one pending sign-in may take; the fifth ends it, and the first step must be passed again. */
export const PENDING_SIGN_IN_FAILURES = 5;

/** The second factors a session's method may name after its first step. */
export type SecondFactor = "totp" | "recovery" | "passkey";

/**
 * What a sign-in still needs once its first step passed:
 * - "second_factor": the account has a second factor (a TOTP authenticator or a passkey) and the first step was one factor;
 * - "enrol": the site requires a second factor of this account (administrators, or everyone) and it has none;
 * - "complete": nothing more.
 * `multiFactor` says the first step proved two factors already (a passkey with user verification).
 */
export function secondFactorDue(
  requirement: SecondFactorRequirement,
  user: Pick<User, "role">,
  factors: { totp: boolean; passkeys: number },
  multiFactor: boolean,
): "complete" | "second_factor" | "enrol" {
  if (multiFactor) return "complete";
  if (factors.totp || factors.passkeys > 0) return "second_factor";
  const required = requirement === "everyone" || (requirement === "admins" && user.role === "admin");
  return required ? "enrol" : "complete";
}

export const secondFactorsOf = (db: Executor, userId: number) => secondFactorsOfUser(db, userId);

/** A session's method after its second factor: `password+totp`, `oidc:corp+passkey`… */
export const withSecondFactor = (firstStep: string, factor: SecondFactor) => (firstStep ? `${firstStep}+${factor}` : factor);

/** Starts a pending sign-in: a random secret of 256 bits for the browser's cookie, only its SHA-256 stored. */
export async function startPendingSignIn(
  db: Executor,
  values: { userId: number | null; stage: PendingSignIn["stage"]; method: string; next: string; ip: string; now: Date },
) {
  const secret = randomToken(32);
  const pending = await insertPendingSignIn(db, {
    secretHash: sha256Hex(secret),
    userId: values.userId,
    stage: values.stage,
    method: values.method,
    next: values.next,
    ip: values.ip,
    createdAt: values.now,
    expiresAt: new Date(values.now.getTime() + PENDING_SIGN_IN_MS),
  });
  return { secret, pending };
}

/** The live pending sign-in of this secret, or null. */
export async function resolvePendingSignIn(db: Executor, secret: string, now: Date): Promise<PendingSignIn | null> {
  if (!/^[\w-]{20,100}$/.test(secret)) return null;
  return findPendingSignIn(db, sha256Hex(secret), now);
}

/** Counts a wrong code against the pending sign-in: true when that was its last chance (it has ended). */
export async function failPendingSignIn(db: Executor, pending: Pick<PendingSignIn, "id">): Promise<boolean> {
  const failures = await countPendingFailure(db, pending.id);
  if (failures < PENDING_SIGN_IN_FAILURES) return false;
  await deletePendingSignIn(db, pending.id);
  return true;
}

/** A passwordless ceremony named its account: the pending sign-in now belongs to it. */
export const movePendingSignIn = (db: Executor, id: number, patch: { userId?: number; stage?: PendingSignIn["stage"]; method?: string }) =>
  updatePendingSignIn(db, id, patch);

export const endPendingSignIn = (db: Executor, id: number) => deletePendingSignIn(db, id);

/**
 * Ends a sign-in in a session that records `method`. With `pendingId`, the pending sign-in is taken first, in the
 * same transaction: of two requests completing one pending sign-in, one gets the session and the other null.
 * The session's secret is new, never the pending sign-in's (no session fixation).
 */
export async function openSession(
  db: Executor,
  values: { userId: number; method: string; ip: string; now: Date; userAgent?: string; pendingId?: number },
): Promise<{ secret: string } | null> {
  return db.transaction(async (tx) => {
    if (values.pendingId !== undefined && !(await deletePendingSignIn(tx, values.pendingId))) return null;
    const { secret } = await startSession(tx, values.userId, values.ip, values.now, values.userAgent, values.method);
    return { secret };
  });
}
