import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { openPglite, openPostgres, type Database } from "./db/client.ts";
import { seedDatabase } from "./db/seed.ts";
import type { Env } from "./env.ts";
import { randomToken } from "./services/secrets.ts";

/** ADMIN_TOKEN, or the one in DATA_DIR/admin-token, generated (mode 600) at first start. */
export function resolveAdminToken(env: Env): { token: string; generatedAt?: string } {
  if (env.ADMIN_TOKEN) return { token: env.ADMIN_TOKEN };
  const file = resolve(join(env.DATA_DIR, "admin-token"));
  if (existsSync(file)) return { token: readFileSync(file, "utf8").trim() };
  mkdirSync(env.DATA_DIR, { recursive: true });
  const token = randomToken(32);
  writeFileSync(file, `${token}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  return { token, generatedAt: file };
}

/** Opens the database named by the environment, applies migrations and seeds a fresh one. */
export async function openDatabase(env: Env): Promise<Database> {
  const database = env.DATABASE_URL ? openPostgres(env.DATABASE_URL) : await openPglite(join(env.DATA_DIR, "db"));
  try {
    await database.migrate();
    await seedDatabase(database.db);
  } catch (e) {
    await database.close();
    throw e;
  }
  return database;
}
