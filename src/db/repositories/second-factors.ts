import { and, asc, eq, isNotNull, isNull, lt, or, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { passkeys, recoveryCodes, totpAuthenticators } from "../schema.ts";

export type TotpAuthenticator = typeof totpAuthenticators.$inferSelect;
export type Passkey = typeof passkeys.$inferSelect;
type NewPasskey = typeof passkeys.$inferInsert;

/** A passkey as its owner's pages list it (no key material). */
export type PasskeySummary = Pick<Passkey, "id" | "name" | "createdAt" | "lastUsedAt" | "backedUp">;

/** Passkeys one account may hold. */
export const PASSKEYS_PER_ACCOUNT = 20;

/** What second factors an account has: a confirmed TOTP authenticator, how many passkeys, how many unused recovery codes. */
export async function secondFactorsOfUser(db: Executor, userId: number) {
  const [row] = await db
    .select({
      totp: sql<boolean>`exists(select 1 from ${totpAuthenticators} where ${totpAuthenticators.userId} = ${userId} and ${totpAuthenticators.confirmedAt} is not null)`,
      passkeys: sql<number>`(select count(*)::int from ${passkeys} where ${passkeys.userId} = ${userId})`,
      recovery: sql<number>`(select count(*)::int from ${recoveryCodes} where ${recoveryCodes.userId} = ${userId} and ${recoveryCodes.usedAt} is null)`,
    })
    .from(sql`(select 1) as one`);
  return { totp: row?.totp === true, passkeys: Number(row?.passkeys ?? 0), recoveryCodes: Number(row?.recovery ?? 0) };
}

export async function findTotpOfUser(db: Executor, userId: number): Promise<TotpAuthenticator | null> {
  const [row] = await db.select().from(totpAuthenticators).where(eq(totpAuthenticators.userId, userId)).limit(1);
  return row ?? null;
}

/** A new, unconfirmed authenticator: replaces an unconfirmed one, never a confirmed one (false then). */
export async function putUnconfirmedTotp(db: Executor, userId: number, sealedSecret: string, now: Date): Promise<boolean> {
  const rows = await db
    .insert(totpAuthenticators)
    .values({ userId, secret: sealedSecret, createdAt: now })
    .onConflictDoUpdate({
      target: totpAuthenticators.userId,
      set: { secret: sealedSecret, createdAt: now, lastStep: null },
      where: isNull(totpAuthenticators.confirmedAt),
    })
    .returning({ userId: totpAuthenticators.userId });
  return rows.length > 0;
}

/**
 * Records the accepted code's time step, only if it is later than the last one accepted (and confirms the
 * authenticator): false when a concurrent request used this step or a later one first, i.e. a replay.
 */
export async function acceptTotpStep(db: Executor, userId: number, step: number, now: Date): Promise<boolean> {
  const rows = await db
    .update(totpAuthenticators)
    .set({ lastStep: step, confirmedAt: sql`coalesce(${totpAuthenticators.confirmedAt}, ${now.toISOString()}::timestamptz)` })
    .where(and(eq(totpAuthenticators.userId, userId), or(isNull(totpAuthenticators.lastStep), lt(totpAuthenticators.lastStep, step))))
    .returning({ userId: totpAuthenticators.userId });
  return rows.length > 0;
}

export async function deleteTotpOfUser(db: Executor, userId: number): Promise<boolean> {
  const rows = await db.delete(totpAuthenticators).where(eq(totpAuthenticators.userId, userId)).returning({ userId: totpAuthenticators.userId });
  return rows.length > 0;
}

/** Replaces the account's recovery codes with these (hashes). */
export async function replaceRecoveryCodes(db: Executor, userId: number, hashes: string[], now: Date) {
  await db.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId));
  if (hashes.length > 0) await db.insert(recoveryCodes).values(hashes.map((codeHash) => ({ userId, codeHash, createdAt: now })));
}

/** Uses an unused recovery code of the account (marks it used): whether there was one. Atomic: a code serves once. */
export async function useRecoveryCode(db: Executor, userId: number, codeHash: string, now: Date): Promise<boolean> {
  const rows = await db
    .update(recoveryCodes)
    .set({ usedAt: now })
    .where(and(eq(recoveryCodes.userId, userId), eq(recoveryCodes.codeHash, codeHash), isNull(recoveryCodes.usedAt)))
    .returning({ id: recoveryCodes.id });
  return rows.length > 0;
}

export async function deleteRecoveryCodesOfUser(db: Executor, userId: number): Promise<number> {
  const rows = await db.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)).returning({ id: recoveryCodes.id });
  return rows.length;
}

export async function countUsedRecoveryCodes(db: Executor, userId: number): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(recoveryCodes)
    .where(and(eq(recoveryCodes.userId, userId), isNotNull(recoveryCodes.usedAt)));
  return row?.n ?? 0;
}

export async function listPasskeysOfUser(db: Executor, userId: number): Promise<Passkey[]> {
  return db.select().from(passkeys).where(eq(passkeys.userId, userId)).orderBy(asc(passkeys.id)).limit(PASSKEYS_PER_ACCOUNT);
}

export async function findPasskeyByCredentialId(db: Executor, credentialId: string): Promise<Passkey | null> {
  const [row] = await db.select().from(passkeys).where(eq(passkeys.credentialId, credentialId)).limit(1);
  return row ?? null;
}

export async function insertPasskey(db: Executor, values: NewPasskey): Promise<Passkey> {
  const [row] = await db.insert(passkeys).values(values).returning();
  return row!;
}

/**
 * Records a use: the new counter and the time, only while the stored counter is still the one checked (a concurrent
 * use of a clone moves it first and this one fails) — false then.
 */
export async function recordPasskeyUse(db: Executor, id: number, checkedCounter: number, newCounter: number, now: Date): Promise<boolean> {
  const rows = await db
    .update(passkeys)
    .set({ counter: newCounter, lastUsedAt: now })
    .where(and(eq(passkeys.id, id), eq(passkeys.counter, checkedCounter)))
    .returning({ id: passkeys.id });
  return rows.length > 0;
}

export async function renamePasskeyOfUser(db: Executor, id: number, userId: number, name: string): Promise<Passkey | null> {
  const [row] = await db
    .update(passkeys)
    .set({ name })
    .where(and(eq(passkeys.id, id), eq(passkeys.userId, userId)))
    .returning();
  return row ?? null;
}

/** Removes one of the account's passkeys (never another account's): the removed row, or null. */
export async function deletePasskeyOfUser(db: Executor, id: number, userId: number): Promise<Passkey | null> {
  const [row] = await db
    .delete(passkeys)
    .where(and(eq(passkeys.id, id), eq(passkeys.userId, userId)))
    .returning();
  return row ?? null;
}

export async function deletePasskeysOfUser(db: Executor, userId: number): Promise<number> {
  const rows = await db.delete(passkeys).where(eq(passkeys.userId, userId)).returning({ id: passkeys.id });
  return rows.length;
}
