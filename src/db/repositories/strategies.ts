import { defined } from "./defined.ts";
import { and, asc, eq, ilike, inArray } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { groupStrategies, strategies } from "../schema.ts";

export type Strategy = typeof strategies.$inferSelect;
export type NewStrategy = typeof strategies.$inferInsert;

/** The enabled strategies of a group, in group order; `q` is a case-insensitive substring of the name. */
export async function listUsableStrategies(db: Executor, groupId: number, q?: string): Promise<Strategy[]> {
  const conditions = [eq(groupStrategies.groupId, groupId), eq(strategies.enabled, true)];
  if (q) conditions.push(ilike(strategies.name, `%${q.replace(/[\\%_]/g, "\\$&")}%`));
  const rows = await db
    .select({ strategy: strategies })
    .from(groupStrategies)
    .innerJoin(strategies, eq(strategies.id, groupStrategies.strategyId))
    .where(and(...conditions))
    .orderBy(asc(groupStrategies.position), asc(strategies.id));
  return rows.map((r) => r.strategy);
}

export async function listStrategies(db: Executor): Promise<Strategy[]> {
  return db.select().from(strategies).orderBy(asc(strategies.id));
}

export async function getStrategy(db: Executor, id: number): Promise<Strategy | null> {
  const [row] = await db.select().from(strategies).where(eq(strategies.id, id));
  return row ?? null;
}

export async function getStrategies(db: Executor, ids: number[]): Promise<Strategy[]> {
  if (ids.length === 0) return [];
  return db.select().from(strategies).where(inArray(strategies.id, ids));
}

export async function createStrategy(db: Executor, values: NewStrategy): Promise<Strategy> {
  const [row] = await db.insert(strategies).values(values).returning();
  return row!;
}

export async function updateStrategy(db: Executor, id: number, patch: Partial<NewStrategy>): Promise<Strategy | null> {
  patch = defined(patch);
  if (Object.keys(patch).length === 0) return getStrategy(db, id);
  const [row] = await db.update(strategies).set(patch).where(eq(strategies.id, id)).returning();
  return row ?? null;
}
