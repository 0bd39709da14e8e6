import { and, asc, desc, eq, gt, isNotNull, isNull, lt, ne, notInArray, or, sql } from "drizzle-orm";
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
 * Revokes a token and the unrevoked temporary tokens it issued (run it in a transaction); `found` is false when
 * there is no such token. Two statements, not one: the second reads a snapshot taken after the first has waited out
 * any issuing transaction holding the token (lockUnrevokedToken), so the tokens that issuing committed are revoked too.
 */
export async function revokeTokenAndIssued(tx: Executor, id: number, at: Date): Promise<{ found: boolean; revoked: RevokedToken[] }> {
  const revoked = await tx
    .update(tokens)
    .set({ revokedAt: at })
    .where(and(eq(tokens.id, id), isNull(tokens.revokedAt)))
    .returning(revokedColumns);
  const issued = await tx
    .update(tokens)
    .set({ revokedAt: at })
    .where(and(eq(tokens.parentTokenId, id), isNull(tokens.revokedAt)))
    .returning(revokedColumns);
  if (revoked.length > 0) return { found: true, revoked: [...revoked, ...issued] };
  const [exists] = await tx.select({ id: tokens.id }).from(tokens).where(eq(tokens.id, id));
  return { found: exists !== undefined, revoked: issued };
}

/** A token just revoked: what its `token.revoked` event names (never its secret). */
export interface RevokedToken {
  id: number;
  userId: number;
  kind: string;
  label: string | null;
}

const revokedColumns = { id: tokens.id, userId: tokens.userId, kind: tokens.kind, label: tokens.label };

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

/** A page of a user's tokens, oldest first, without their secret hashes, and how many there are. */
export async function listTokensForUser(db: Executor, userId: number, limit: number, offset: number) {
  const [rows, [counted]] = await Promise.all([
    db.select(shown).from(tokens).where(eq(tokens.userId, userId)).orderBy(asc(tokens.id)).limit(limit).offset(offset),
    db.select({ n: sql<number>`count(*)::int` }).from(tokens).where(eq(tokens.userId, userId)),
  ]);
  return { rows, total: counted?.n ?? 0 };
}

const managed = (userId: number, now: Date) =>
  and(eq(tokens.userId, userId), isNull(tokens.revokedAt), isNull(tokens.sessionId), or(eq(tokens.kind, "permanent"), gt(tokens.expiredAt, now)));

/**
 * A page of the tokens the owner manages on the API Tokens page, newest first, and how many there are: permanent
 * tokens not revoked, and temporary tokens still valid that were not obtained by a signed-in page for its own
 * uploads. Never the secret.
 */
export async function listActiveTokensForOwner(db: Executor, userId: number, now: Date, limit: number, offset: number) {
  const [rows, [counted]] = await Promise.all([
    db.select(shown).from(tokens).where(managed(userId, now)).orderBy(desc(tokens.id)).limit(limit).offset(offset),
    db.select({ n: sql<number>`count(*)::int` }).from(tokens).where(managed(userId, now)),
  ]);
  return { rows, total: counted?.n ?? 0 };
}

/**
 * Serialises the issuing of one account's tokens until the caller's transaction ends (a transaction-level
 * advisory lock keyed by the account), so that counting its tokens and inserting new ones is one atomic step
 * whatever the number of concurrent requests and instances.
 */
export async function lockTokenIssuing(tx: Executor, userId: number) {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`tokens:${userId}`}))`);
}

/**
 * What bounds an account's issuing: its live temporary tokens (unexpired, unrevoked, not a page's own), its
 * unrevoked permanent tokens, and the temporary tokens issued since `since` (revoked or expired ones included).
 */
export async function countIssuedTokens(tx: Executor, userId: number, now: Date, since: Date) {
  const [row] = await tx
    .select({
      liveTemporary: sql<number>`(count(*) filter (where ${tokens.kind} = 'temporary' and ${tokens.revokedAt} is null and ${tokens.expiredAt} > ${now.toISOString()}::timestamptz))::int`,
      livePermanent: sql<number>`(count(*) filter (where ${tokens.kind} = 'permanent' and ${tokens.revokedAt} is null))::int`,
      recentTemporary: sql<number>`(count(*) filter (where ${tokens.kind} = 'temporary' and ${tokens.createdAt} > ${since.toISOString()}::timestamptz))::int`,
    })
    .from(tokens)
    .where(and(eq(tokens.userId, userId), isNull(tokens.sessionId)));
  return row ?? { liveTemporary: 0, livePermanent: 0, recentTemporary: 0 };
}

/**
 * When the `nth` oldest temporary token issued since `since` was issued (1 = the oldest): once it leaves the
 * window, `nth` more may be issued. Null when there are fewer.
 */
export async function nthRecentTemporaryIssue(tx: Executor, userId: number, since: Date, nth: number): Promise<Date | null> {
  const [row] = await tx
    .select({ at: tokens.createdAt })
    .from(tokens)
    .where(and(eq(tokens.userId, userId), eq(tokens.kind, "temporary"), isNull(tokens.sessionId), gt(tokens.createdAt, since)))
    .orderBy(asc(tokens.createdAt), asc(tokens.id))
    .offset(Math.max(0, nth - 1))
    .limit(1);
  return row?.at ?? null;
}

/** Removes a session's upload tokens beyond its `keep` newest (their uploads answer 401 and the page fetches another). */
export async function trimSessionTokens(tx: Executor, sessionId: number, keep: number) {
  const kept = tx.select({ id: tokens.id }).from(tokens).where(eq(tokens.sessionId, sessionId)).orderBy(desc(tokens.id)).limit(keep);
  await tx.delete(tokens).where(and(eq(tokens.sessionId, sessionId), notInArray(tokens.id, kept)));
}

/**
 * Revokes every unrevoked token of the account (permanent and temporary), except the upload tokens of the session
 * `keepSessionId`; returns them.
 */
export async function revokeTokensOfUser(db: Executor, userId: number, at: Date, keepSessionId: number | null = null): Promise<RevokedToken[]> {
  return db
    .update(tokens)
    .set({ revokedAt: at })
    .where(
      and(
        eq(tokens.userId, userId),
        isNull(tokens.revokedAt),
        keepSessionId === null ? undefined : or(isNull(tokens.sessionId), ne(tokens.sessionId, keepSessionId)),
      ),
    )
    .returning(revokedColumns);
}

/** Whether the token exists and is the owner's. */
export async function isOwnToken(db: Executor, id: number, ownerId: number): Promise<boolean> {
  const [own] = await db
    .select({ id: tokens.id })
    .from(tokens)
    .where(and(eq(tokens.id, id), eq(tokens.userId, ownerId)));
  return own !== undefined;
}

/** Records that the token was used now, unless that was recorded less than a minute ago (by any instance). */
export async function recordTokenUse(db: Executor, id: number, now: Date) {
  const minuteAgo = new Date(now.getTime() - 60_000);
  await db
    .update(tokens)
    .set({ lastUsedAt: now })
    .where(and(eq(tokens.id, id), or(isNull(tokens.lastUsedAt), lt(tokens.lastUsedAt, minuteAgo))));
}

/**
 * Forgets tokens that can never work again: temporary tokens that expired before `before`, and tokens revoked
 * before it (a revoked permanent token takes the temporary tokens it issued with it). Both answer 401 either way.
 */
export async function deleteDeadTokens(db: Executor, before: Date) {
  await db
    .delete(tokens)
    .where(or(and(eq(tokens.kind, "temporary"), lt(tokens.expiredAt, before)), and(isNotNull(tokens.revokedAt), lt(tokens.revokedAt, before))));
}
