import { and, asc, desc, eq, gt, isNull, lt, or } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { groups, tokens, users } from "../schema.ts";

export type Token = typeof tokens.$inferSelect;

/** The token row by id or by secret hash, with its owner and the owner's group. */
export async function findTokenWithOwner(db: Executor, by: { id: number } | { secretHash: string }) {
  const [row] = await db
    .select({ token: tokens, user: users, group: groups })
    .from(tokens)
    .innerJoin(users, eq(users.id, tokens.userId))
    .innerJoin(groups, eq(groups.id, users.groupId))
    .where("id" in by ? eq(tokens.id, by.id) : eq(tokens.secretHash, by.secretHash));
  return row ?? null;
}

export async function insertTokens(db: Executor, rows: (typeof tokens.$inferInsert)[]): Promise<Token[]> {
  return db.insert(tokens).values(rows).returning();
}

/**
 * Whether the token exists unrevoked, holding it against revocation until the caller's transaction ends:
 * the foreign key's own lock (FOR KEY SHARE) does not conflict with revocation's UPDATE, FOR SHARE does.
 */
export async function lockUnrevokedToken(db: Executor, id: number): Promise<boolean> {
  const rows = await db
    .select({ id: tokens.id })
    .from(tokens)
    .where(and(eq(tokens.id, id), isNull(tokens.revokedAt)))
    .for("share");
  return rows.length > 0;
}

/**
 * Revokes a token and the unrevoked temporary tokens it issued, in one transaction; false when no such token.
 * Two statements, not one: the second reads a snapshot taken after the first has waited out any issuing
 * transaction holding the token (lockUnrevokedToken), so the tokens that issuing committed are revoked too.
 */
export async function revokeToken(db: Executor, id: number, at: Date): Promise<boolean> {
  return db.transaction(async (tx) => {
    const revoked = await tx
      .update(tokens)
      .set({ revokedAt: at })
      .where(and(eq(tokens.id, id), isNull(tokens.revokedAt)))
      .returning({ id: tokens.id });
    await tx
      .update(tokens)
      .set({ revokedAt: at })
      .where(and(eq(tokens.parentTokenId, id), isNull(tokens.revokedAt)));
    if (revoked.length > 0) return true;
    const [exists] = await tx.select({ id: tokens.id }).from(tokens).where(eq(tokens.id, id));
    return exists !== undefined;
  });
}

/** What may be shown of a token: everything but its secret hash. */
const shown = {
  id: tokens.id,
  kind: tokens.kind,
  label: tokens.label,
  createdAt: tokens.createdAt,
  lastUsedAt: tokens.lastUsedAt,
  expiredAt: tokens.expiredAt,
  revokedAt: tokens.revokedAt,
  parentTokenId: tokens.parentTokenId,
};

/** A user's tokens, oldest first, without their secret hashes. */
export async function listTokensForUser(db: Executor, userId: number) {
  return db.select(shown).from(tokens).where(eq(tokens.userId, userId)).orderBy(asc(tokens.id));
}

/**
 * The tokens the owner manages on the API Tokens page, newest first: permanent tokens not revoked, and temporary
 * tokens still valid that were not obtained by a signed-in page for its own uploads. Never the secret.
 */
export async function listActiveTokensForOwner(db: Executor, userId: number, now: Date) {
  return db
    .select(shown)
    .from(tokens)
    .where(
      and(
        eq(tokens.userId, userId),
        isNull(tokens.revokedAt),
        isNull(tokens.sessionId),
        or(eq(tokens.kind, "permanent"), gt(tokens.expiredAt, now)),
      ),
    )
    .orderBy(desc(tokens.id));
}

/** Revokes the owner's token (and what it issued); false when it is missing or another account's. */
export async function revokeTokenForOwner(db: Executor, id: number, ownerId: number, at: Date): Promise<boolean> {
  const [own] = await db.select({ id: tokens.id }).from(tokens).where(and(eq(tokens.id, id), eq(tokens.userId, ownerId)));
  return own !== undefined && revokeToken(db, id, at);
}

/** Records that the token was used now, unless that was recorded less than a minute ago (by any instance). */
export async function recordTokenUse(db: Executor, id: number, now: Date) {
  const minuteAgo = new Date(now.getTime() - 60_000);
  await db
    .update(tokens)
    .set({ lastUsedAt: now })
    .where(and(eq(tokens.id, id), or(isNull(tokens.lastUsedAt), lt(tokens.lastUsedAt, minuteAgo))));
}

/** Drops temporary tokens that expired more than a day ago (kept a little for clearer 401s in logs). */
export async function deleteExpiredTemporaryTokens(db: Executor, before: Date) {
  await db
    .delete(tokens)
    .where(and(eq(tokens.kind, "temporary"), lt(tokens.expiredAt, before)));
}
