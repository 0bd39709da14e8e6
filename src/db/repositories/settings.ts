import { defined } from "./defined.ts";
import { eq } from "drizzle-orm";
import type { Db } from "../client.ts";
import { settings } from "../schema.ts";

export type Settings = typeof settings.$inferSelect;

export async function getSettings(db: Db): Promise<Settings> {
  const [row] = await db.select().from(settings).where(eq(settings.id, 1));
  if (!row) throw new Error("settings row missing: the database was not seeded");
  return row;
}

export async function updateSettings(db: Db, patch: Partial<Omit<Settings, "id">>): Promise<Settings> {
  patch = defined(patch);
  if (Object.keys(patch).length === 0) return getSettings(db);
  const [row] = await db.update(settings).set(patch).where(eq(settings.id, 1)).returning();
  return row!;
}
