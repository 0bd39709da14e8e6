import { and, eq, isNull, lt } from "drizzle-orm";
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

export async function revokeToken(db: Executor, id: number, at: Date): Promise<boolean> {
  const rows = await db
    .update(tokens)
    .set({ revokedAt: at })
    .where(and(eq(tokens.id, id), isNull(tokens.revokedAt)))
    .returning({ id: tokens.id });
  if (rows.length > 0) return true;
  const [exists] = await db.select({ id: tokens.id }).from(tokens).where(eq(tokens.id, id));
  return exists !== undefined;
}

/** Drops temporary tokens that expired more than a day ago (kept a little for clearer 401s in logs). */
export async function deleteExpiredTemporaryTokens(db: Executor, before: Date) {
  await db
    .delete(tokens)
    .where(and(eq(tokens.kind, "temporary"), lt(tokens.expiredAt, before)));
}
