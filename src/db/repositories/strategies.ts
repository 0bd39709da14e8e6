import { defined } from "./defined.ts";
import { and, asc, eq, ilike, inArray, sql } from "drizzle-orm";
import type { Db, Executor } from "../client.ts";
import { groupStrategies, strategies } from "../schema.ts";

export type Strategy = typeof strategies.$inferSelect;
type NewStrategy = typeof strategies.$inferInsert;

/**
 * The most strategies a group may list (the admin API refuses more with 422): what a group's usable strategies are
 * read with as a hard LIMIT. Automatic uploads try them in order; beyond a handful nobody would use them.
 */
export const GROUP_STRATEGIES_MAX = 100;

/**
 * The most storage strategies the service holds (the admin API refuses to create more with 422). The reconciler and
 * the readiness probe read every strategy: this bound is their LIMIT, and since creation stops at it, they never
 * miss one.
 */
export const STRATEGIES_MAX = 1000;

/** The enabled strategies of a group, in group order; `q` is a case-insensitive substring of the name. */
export async function listUsableStrategies(db: Executor, groupId: number, q?: string): Promise<Strategy[]> {
  const conditions = [eq(groupStrategies.groupId, groupId), eq(strategies.enabled, true)];
  if (q) conditions.push(ilike(strategies.name, `%${q.replace(/[\\%_]/g, "\\$&")}%`));
  const rows = await db
    .select({ strategy: strategies })
    .from(groupStrategies)
    .innerJoin(strategies, eq(strategies.id, groupStrategies.strategyId))
    .where(and(...conditions))
    .orderBy(asc(groupStrategies.position), asc(strategies.id))
    .limit(GROUP_STRATEGIES_MAX);
  return rows.map((r) => r.strategy);
}

/** Every strategy, by id (for the reconciler and the readiness probe): at most STRATEGIES_MAX, which creation enforces. */
export async function listStrategies(db: Executor): Promise<Strategy[]> {
  return db.select().from(strategies).orderBy(asc(strategies.id)).limit(STRATEGIES_MAX);
}

/** A page of the strategies by id, and how many there are. */
export async function listStrategiesPage(db: Executor, limit: number, offset: number): Promise<{ rows: Strategy[]; total: number }> {
  const [rows, [counted]] = await Promise.all([
    db.select().from(strategies).orderBy(asc(strategies.id)).limit(limit).offset(offset),
    db.select({ n: sql<number>`count(*)::int` }).from(strategies),
  ]);
  return { rows, total: counted?.n ?? 0 };
}

export async function getStrategy(db: Executor, id: number): Promise<Strategy | null> {
  const [row] = await db.select().from(strategies).where(eq(strategies.id, id));
  return row ?? null;
}

export async function getStrategies(db: Executor, ids: number[]): Promise<Strategy[]> {
  if (ids.length === 0) return [];
  return db.select().from(strategies).where(inArray(strategies.id, ids)).limit(ids.length);
}

/**
 * Creates a strategy, or returns null when STRATEGIES_MAX exist already. Creations are serialised by a
 * transaction-level advisory lock, so two at once cannot both pass the count.
 */
export async function createStrategy(db: Db, values: NewStrategy): Promise<Strategy | null> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext('image-host:create-strategy'))`);
    const [counted] = await tx.select({ n: sql<number>`count(*)::int` }).from(strategies);
    if ((counted?.n ?? 0) >= STRATEGIES_MAX) return null;
    const [row] = await tx.insert(strategies).values(values).returning();
    return row!;
  });
}

export async function updateStrategy(db: Executor, id: number, patch: Partial<NewStrategy>): Promise<Strategy | null> {
  patch = defined(patch);
  if (Object.keys(patch).length === 0) return getStrategy(db, id);
  const [row] = await db.update(strategies).set(patch).where(eq(strategies.id, id)).returning();
  return row ?? null;
}
