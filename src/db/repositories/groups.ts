import { asc, eq } from "drizzle-orm";
import type { Db, Executor } from "../client.ts";
import { groupStrategies, groups } from "../schema.ts";

export type Group = typeof groups.$inferSelect;
export type NewGroup = typeof groups.$inferInsert;
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

async function strategyIdsByGroup(db: Executor): Promise<Map<number, number[]>> {
  const links = await db.select().from(groupStrategies).orderBy(asc(groupStrategies.position));
  const map = new Map<number, number[]>();
  for (const l of links) map.set(l.groupId, [...(map.get(l.groupId) ?? []), l.strategyId]);
  return map;
}

export async function listGroups(db: Executor): Promise<GroupWithStrategies[]> {
  const [rows, links] = await Promise.all([db.select().from(groups).orderBy(asc(groups.id)), strategyIdsByGroup(db)]);
  return rows.map((g) => ({ ...g, strategyIds: links.get(g.id) ?? [] }));
}

export async function getGroupWithStrategies(db: Executor, id: number): Promise<GroupWithStrategies | null> {
  const group = await getGroup(db, id);
  if (!group) return null;
  const links = await db
    .select()
    .from(groupStrategies)
    .where(eq(groupStrategies.groupId, id))
    .orderBy(asc(groupStrategies.position));
  return { ...group, strategyIds: links.map((l) => l.strategyId) };
}

/** Creates or updates a group; `strategyIds`, when given, replaces its ordered strategy list. */
export async function saveGroup(
  db: Db,
  id: number | null,
  values: Partial<NewGroup>,
  strategyIds?: number[],
): Promise<GroupWithStrategies | null> {
  const savedId = await db.transaction(async (tx) => {
    let groupId = id;
    if (groupId === null) {
      const [row] = await tx.insert(groups).values(values as NewGroup).returning({ id: groups.id });
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
        await tx
          .insert(groupStrategies)
          .values(strategyIds.map((strategyId, position) => ({ groupId: groupId!, strategyId, position })));
      }
    }
    return groupId;
  });
  return savedId === null ? null : getGroupWithStrategies(db, savedId);
}
