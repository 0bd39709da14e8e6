import { defined } from "./defined.ts";
import { asc, eq, ilike, or, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { prepared } from "./prepared.ts";
import { albums, users } from "../schema.ts";

export type User = typeof users.$inferSelect;
type NewUser = typeof users.$inferInsert;
export type Album = typeof albums.$inferSelect;

export async function getUser(db: Executor, id: number): Promise<User | null> {
  const statement = prepared(db, "users:one", (name) =>
    db
      .select()
      .from(users)
      .where(eq(users.id, sql.placeholder("id")))
      .prepare(name),
  );
  const [row] = await statement.execute({ id });
  return row ?? null;
}

/** A page of the users by id (or the one with this exact username), and how many there are. */
/** A LIKE pattern matching `text` literally anywhere. */
export const containsPattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * A page of the users by id: all of them, the one with this exact `username`, or those whose username, name or email
 * contains `q` (case-insensitive).
 */
export async function listUsers(db: Executor, limit: number, offset: number, username?: string, q?: string): Promise<{ rows: User[]; total: number }> {
  const pattern = q ? containsPattern(q) : null;
  const where =
    username !== undefined
      ? eq(users.username, username)
      : pattern
        ? or(ilike(users.username, pattern), ilike(users.name, pattern), ilike(users.email, pattern))
        : undefined;
  const [rows, [counted]] = await Promise.all([
    db.select().from(users).where(where).orderBy(asc(users.id)).limit(limit).offset(offset),
    db.select({ n: sql<number>`count(*)::int` }).from(users).where(where),
  ]);
  return { rows, total: counted?.n ?? 0 };
}

export async function createUser(db: Executor, values: NewUser): Promise<User> {
  const [row] = await db.insert(users).values(values).returning();
  return row!;
}

export async function updateUser(db: Executor, id: number, patch: Partial<NewUser>): Promise<User | null> {
  patch = defined(patch);
  if (Object.keys(patch).length === 0) return getUser(db, id);
  const [row] = await db.update(users).set(patch).where(eq(users.id, id)).returning();
  return row ?? null;
}

export async function findAlbumForOwner(db: Executor, albumId: number, ownerId: number): Promise<Album | null> {
  const [row] = await db.select().from(albums).where(eq(albums.id, albumId));
  return row && row.userId === ownerId ? row : null;
}
