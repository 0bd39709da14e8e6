import { and, asc, desc, eq, gt, inArray, lt, ne, notInArray, or, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { prepared } from "./prepared.ts";
import { albums, groups, passwordLinks, sessions, users } from "../schema.ts";

export type Session = typeof sessions.$inferSelect;
type NewSession = typeof sessions.$inferInsert;

export async function insertSession(db: Executor, values: NewSession): Promise<Session> {
  const [row] = await db.insert(sessions).values(values).returning();
  return row!;
}

/** The unexpired session with this secret hash, with its account and the account's group, read now (never cached). */
export async function findLiveSession(db: Executor, secretHash: string, now: Date) {
  const statement = prepared(db, "sessions:live", (name) =>
    db
      .select({ session: sessions, user: users, group: groups })
      .from(sessions)
      .innerJoin(users, eq(users.id, sessions.userId))
      .innerJoin(groups, eq(groups.id, users.groupId))
      .where(and(eq(sessions.secretHash, sql.placeholder("hash")), gt(sessions.expiresAt, sql.placeholder("now"))))
      .prepare(name),
  );
  const [row] = await statement.execute({ hash: secretHash, now: now.toISOString() });
  return row ?? null;
}

/** Records a sign of life: the session's idle expiry moves on, never beyond `absoluteEnd`. */
export async function touchSession(db: Executor, id: number, now: Date, expiresAt: Date) {
  await db.update(sessions).set({ lastSeenAt: now, expiresAt }).where(eq(sessions.id, id));
}

/** Ends a session; the temporary upload tokens it obtained go with it (foreign key, on delete cascade). */
export async function deleteSession(db: Executor, id: number) {
  await db.delete(sessions).where(eq(sessions.id, id));
}

/** The account's live sessions (unexpired), the most recently used first, for the Account page. */
export async function listLiveSessionsOfUser(db: Executor, userId: number, now: Date, limit: number): Promise<Session[]> {
  return db
    .select()
    .from(sessions)
    .where(and(eq(sessions.userId, userId), gt(sessions.expiresAt, now)))
    .orderBy(desc(sessions.lastSeenAt), desc(sessions.id))
    .limit(limit);
}

/** Ends one session of the account (never another account's); whether there was one. */
export async function deleteSessionOfUser(db: Executor, id: number, userId: number): Promise<boolean> {
  const rows = await db
    .delete(sessions)
    .where(and(eq(sessions.id, id), eq(sessions.userId, userId)))
    .returning({ id: sessions.id });
  return rows.length > 0;
}

/**
 * Ends every way into an account but its password: every session but `exceptId` when given, and every outstanding
 * one-time password link. Called whenever whoever held the old access must lose it: the password changed (by any
 * path, a link's use included), the account was disabled, "sign out everywhere".
 */
export async function deleteSessionsOfUser(db: Executor, userId: number, exceptId?: number) {
  await db.delete(sessions).where(and(eq(sessions.userId, userId), exceptId === undefined ? undefined : ne(sessions.id, exceptId)));
  await db.delete(passwordLinks).where(eq(passwordLinks.userId, userId));
}

/** Ends every session and password link of the accounts of a group (it was disabled, or lost API access). */
export async function deleteSessionsOfGroup(db: Executor, groupId: number) {
  const members = db.select({ id: users.id }).from(users).where(eq(users.groupId, groupId));
  await db.delete(sessions).where(inArray(sessions.userId, members));
  await db.delete(passwordLinks).where(inArray(passwordLinks.userId, members));
}

/** Forgets sessions that have expired (and the upload tokens they obtained): anyone's, or one account's. */
export async function deleteExpiredSessions(db: Executor, now: Date, userId?: number) {
  await db.delete(sessions).where(and(lt(sessions.expiresAt, now), userId === undefined ? undefined : eq(sessions.userId, userId)));
}

/** Serialises the sign-ins of one account until the caller's transaction ends (advisory lock keyed by the account). */
export async function lockSessionsOfUser(tx: Executor, userId: number) {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`sessions:${userId}`}))`);
}

/** Ends the account's sessions beyond its `keep` newest (by sign-in). */
export async function trimSessionsOfUser(tx: Executor, userId: number, keep: number) {
  const kept = tx.select({ id: sessions.id }).from(sessions).where(eq(sessions.userId, userId)).orderBy(desc(sessions.id)).limit(keep);
  await tx.delete(sessions).where(and(eq(sessions.userId, userId), notInArray(sessions.id, kept)));
}

/**
 * The account a sign-in names: by username, case ignored, or by email (stored in lower case). Where two usernames
 * differ only by case, the exact one wins.
 */
export async function findUserForSignIn(db: Executor, login: string) {
  const lowered = login.toLowerCase();
  const [row] = await db
    .select({ user: users, group: groups })
    .from(users)
    .innerJoin(groups, eq(groups.id, users.groupId))
    .where(or(eq(sql`lower(${users.username})`, lowered), eq(users.email, lowered)))
    .orderBy(desc(sql`${users.username} = ${login}`), asc(users.id))
    .limit(1);
  return row ?? null;
}

/** Whether a username (case ignored) or an email is taken already. */
export async function isUsernameOrEmailTaken(db: Executor, username: string, email: string): Promise<boolean> {
  const rows = await db
    .select({ id: users.id })
    .from(users)
    .where(or(eq(sql`lower(${users.username})`, username.toLowerCase()), eq(users.email, email.toLowerCase())))
    .limit(1);
  return rows.length > 0;
}

/** Whether an email (stored in lower case) belongs to an account other than `userId`. */
export async function isEmailTakenByOther(db: Executor, email: string, userId: number): Promise<boolean> {
  const rows = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.email, email.toLowerCase()), ne(users.id, userId)))
    .limit(1);
  return rows.length > 0;
}

/** The account's first `limit` albums, by name. */
export async function listAlbumsForOwner(db: Executor, ownerId: number, limit: number) {
  const statement = prepared(db, "albums:names", (name) =>
    db
      .select({ id: albums.id, name: albums.name })
      .from(albums)
      .where(eq(albums.userId, sql.placeholder("owner")))
      .orderBy(asc(albums.name), asc(albums.id))
      .limit(sql.placeholder("limit"))
      .prepare(name),
  );
  return statement.execute({ owner: ownerId, limit });
}
