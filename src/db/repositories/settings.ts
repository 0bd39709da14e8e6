import { defined } from "./defined.ts";
import { eq } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { settings } from "../schema.ts";

export type Settings = typeof settings.$inferSelect;

export async function getSettings(db: Executor): Promise<Settings> {
  const [row] = await db.select().from(settings).where(eq(settings.id, 1));
  if (!row) throw new Error("settings row missing: the database was not seeded");
  return row;
}

export async function updateSettings(db: Executor, patch: Partial<Omit<Settings, "id">>): Promise<Settings> {
  patch = defined(patch);
  if (Object.keys(patch).length === 0) return getSettings(db);
  const [row] = await db.update(settings).set(patch).where(eq(settings.id, 1)).returning();
  return row!;
}
