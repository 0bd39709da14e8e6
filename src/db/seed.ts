import { sql } from "drizzle-orm";
import type { Db } from "./client.ts";
import { groupStrategies, groups, settings, strategies } from "./schema.ts";

/**
 * Seeds a fresh database: the settings row, a default group, a guest group and one local strategy
 * linked to both. Runs at every start; only the transaction that creates the settings row seeds.
 */
export async function seedDatabase(db: Db) {
  await db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(7340002)`);
    const inserted = await tx
      .insert(settings)
      .values({ id: 1, apiEnabled: true, guestUploadEnabled: false })
      .onConflictDoNothing()
      .returning({ id: settings.id });
    if (inserted.length === 0) return;
    const [defaultGroup] = await tx.insert(groups).values({ name: "Default", isDefault: true, enabled: true, allowApi: true }).returning();
    const [guestGroup] = await tx
      .insert(groups)
      .values({
        name: "Guests",
        isGuest: true,
        enabled: true,
        allowApi: true,
        maxFileSizeKb: 5120,
        uploadsPerMinute: 10,
        uploadsPerHour: 100,
        concurrentUploads: 3,
        defaultCapacityKb: 0,
      })
      .returning();
    const [local] = await tx.insert(strategies).values({ name: "Local", driver: "local", config: {} }).returning();
    await tx.insert(groupStrategies).values([
      { groupId: defaultGroup!.id, strategyId: local!.id, position: 0 },
      { groupId: guestGroup!.id, strategyId: local!.id, position: 0 },
    ]);
  });
}
