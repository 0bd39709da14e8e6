import { asc, eq, inArray, sql } from "drizzle-orm";
import type { Db, Executor } from "../client.ts";
import { groupStrategies, groups } from "../schema.ts";
import { GROUP_STRATEGIES_MAX } from "./strategies.ts";

export type Group = typeof groups.$inferSelect;
type NewGroup = typeof groups.$inferInsert;
export type GroupWithStrategies = Group & { strategyIds: number[] };

export async function getGroup(db: Executor, id: number): Promise<Group | null> {
  const [row] = await db.select().from(groups).where(eq(groups.id, id));
  return row ?? null;
}

export async function getGuestGroup(db: Executor): Promise<Group | null> {
  const [row] = await db.select().from(groups).where(eq(groups.isGuest, true)).orderBy(asc(groups.id)).limit(1);
  return row ?? null;
}

export async function getDefaultGroup(db: Executor): Promise<Group | null> {
  const [row] = await db.select().from(groups).where(eq(groups.isDefault, true)).orderBy(asc(groups.id)).limit(1);
  return row ?? null;
}

/** The ordered strategy ids of these groups (at most GROUP_STRATEGIES_MAX each, which saving enforces). */
async function strategyIdsByGroup(db: Executor, groupIds: number[]): Promise<Map<number, number[]>> {
  const map = new Map<number, number[]>();
  if (groupIds.length === 0) return map;
  const links = await db
    .select()
    .from(groupStrategies)
    .where(inArray(groupStrategies.groupId, groupIds))
    .orderBy(asc(groupStrategies.groupId), asc(groupStrategies.position))
    .limit(groupIds.length * GROUP_STRATEGIES_MAX);
  for (const l of links) map.set(l.groupId, [...(map.get(l.groupId) ?? []), l.strategyId]);
  return map;
}

/** A page of the groups by id, each with its ordered strategy ids, and how many groups there are. */
export async function listGroups(db: Executor, limit: number, offset: number): Promise<{ rows: GroupWithStrategies[]; total: number }> {
  const [rows, [counted]] = await Promise.all([
    db.select().from(groups).orderBy(asc(groups.id)).limit(limit).offset(offset),
    db.select({ n: sql<number>`count(*)::int` }).from(groups),
  ]);
  const links = await strategyIdsByGroup(
    db,
    rows.map((g) => g.id),
  );
  return { rows: rows.map((g) => ({ ...g, strategyIds: links.get(g.id) ?? [] })), total: counted?.n ?? 0 };
}

export async function getGroupWithStrategies(db: Executor, id: number): Promise<GroupWithStrategies | null> {
  const group = await getGroup(db, id);
  if (!group) return null;
  const links = await db
    .select()
    .from(groupStrategies)
    .where(eq(groupStrategies.groupId, id))
    .orderBy(asc(groupStrategies.position))
    .limit(GROUP_STRATEGIES_MAX);
  return { ...group, strategyIds: links.map((l) => l.strategyId) };
}

/** Creates or updates a group; `strategyIds` (at most GROUP_STRATEGIES_MAX: the caller checks), when given, replaces its ordered strategy list. */
export async function saveGroup(db: Db, id: number | null, values: Partial<NewGroup>, strategyIds?: number[]): Promise<GroupWithStrategies | null> {
  const savedId = await db.transaction(async (tx) => {
    let groupId = id;
    if (groupId === null) {
      const [row] = await tx
        .insert(groups)
        .values(values as NewGroup)
        .returning({ id: groups.id });
      groupId = row!.id;
    } else if (Object.keys(values).length > 0) {
      const updated = await tx.update(groups).set(values).where(eq(groups.id, groupId)).returning({ id: groups.id });
      if (updated.length === 0) return null;
    } else if (!(await getGroup(tx, groupId))) {
      return null;
    }
    if (strategyIds) {
      await tx.delete(groupStrategies).where(eq(groupStrategies.groupId, groupId));
      if (strategyIds.length > 0) {
        await tx.insert(groupStrategies).values(strategyIds.map((strategyId, position) => ({ groupId: groupId!, strategyId, position })));
      }
    }
    return groupId;
  });
  return savedId === null ? null : getGroupWithStrategies(db, savedId);
}
