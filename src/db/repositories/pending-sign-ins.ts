import { and, eq, gt, lt, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { passkeyChallenges, pendingSignIns } from "../schema.ts";

export type PendingSignIn = typeof pendingSignIns.$inferSelect;
type NewPendingSignIn = typeof pendingSignIns.$inferInsert;
export type PasskeyChallenge = typeof passkeyChallenges.$inferSelect;

export async function insertPendingSignIn(db: Executor, values: NewPendingSignIn): Promise<PendingSignIn> {
  const [row] = await db.insert(pendingSignIns).values(values).returning();
  return row!;
}

/** The unexpired pending sign-in with this secret hash. */
export async function findPendingSignIn(db: Executor, secretHash: string, now: Date): Promise<PendingSignIn | null> {
  const [row] = await db
    .select()
    .from(pendingSignIns)
    .where(and(eq(pendingSignIns.secretHash, secretHash), gt(pendingSignIns.expiresAt, now)))
    .limit(1);
  return row ?? null;
}

/** Names the account a passwordless ceremony proved, and moves the pending sign-in to its next stage. */
export async function updatePendingSignIn(db: Executor, id: number, patch: Partial<Pick<NewPendingSignIn, "userId" | "stage" | "method">>) {
  await db.update(pendingSignIns).set(patch).where(eq(pendingSignIns.id, id));
}

/** Counts a wrong code; the count after it. */
export async function countPendingFailure(db: Executor, id: number): Promise<number> {
  const [row] = await db
    .update(pendingSignIns)
    .set({ failures: sql`${pendingSignIns.failures} + 1` })
    .where(eq(pendingSignIns.id, id))
    .returning({ failures: pendingSignIns.failures });
  return row?.failures ?? Number.POSITIVE_INFINITY;
}

/** Ends a pending sign-in; whether it was still there (so that two requests cannot both complete it). */
export async function deletePendingSignIn(db: Executor, id: number): Promise<boolean> {
  const rows = await db.delete(pendingSignIns).where(eq(pendingSignIns.id, id)).returning({ id: pendingSignIns.id });
  return rows.length > 0;
}

/** Forgets expired pending sign-ins and WebAuthn challenges. */
export async function deleteExpiredPendingSignIns(db: Executor, now: Date) {
  await db.delete(pendingSignIns).where(lt(pendingSignIns.expiresAt, now));
  await db.delete(passkeyChallenges).where(lt(passkeyChallenges.expiresAt, now));
}

export async function insertPasskeyChallenge(db: Executor, values: typeof passkeyChallenges.$inferInsert) {
  await db.insert(passkeyChallenges).values(values);
}

/**
 * Takes (deletes) the unexpired challenge of this value given to this session or pending sign-in for `purpose`:
 * whatever the answer's outcome, the challenge cannot be answered twice. Null when there is no such challenge.
 */
export async function takePasskeyChallenge(
  db: Executor,
  challenge: string,
  owner: { sessionId: number } | { pendingId: number },
  purpose: PasskeyChallenge["purpose"],
  now: Date,
): Promise<PasskeyChallenge | null> {
  const bound = "sessionId" in owner ? eq(passkeyChallenges.sessionId, owner.sessionId) : eq(passkeyChallenges.pendingId, owner.pendingId);
  const rows = await db
    .delete(passkeyChallenges)
    .where(and(eq(passkeyChallenges.challenge, challenge), bound, eq(passkeyChallenges.purpose, purpose)))
    .returning();
  const row = rows[0];
  return row && row.expiresAt.getTime() > now.getTime() ? row : null;
}

/** Ends the account's sign-ins under way (its second factors were reset). */
export async function deletePendingSignInsOfUser(db: Executor, userId: number) {
  await db.delete(pendingSignIns).where(eq(pendingSignIns.userId, userId));
}
