import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { openEmbedded, openPostgres, type Database } from "./db/client.ts";
import { seedDatabase } from "./db/seed.ts";
import type { Env } from "./env.ts";
import { randomToken } from "./services/secrets.ts";
import { installQueue } from "./webhooks/queue.ts";
import { defaultLogger, type Logger } from "./observability/log.ts";

/**
 * Whether this process can listen on HOST:PORT, tried (and released at once) before anything is created: a busy
 * port is then found before a database cluster is made. Null when it can (or PORT is 0, any free port), else the
 * error Bun.serve gave. Server.ts still handles a failure of the real listen (the port taken meanwhile).
 */
export async function probeListen(hostname: string, port: number): Promise<unknown> {
  if (port === 0) return null;
  try {
    const probe = Bun.serve({ port, hostname, fetch: () => new Response(null, { status: 503 }) });
    await probe.stop(true);
    return null;
  } catch (e) {
    return e;
  }
}

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

/**
 * Opens the database named by the environment (DATABASE_URL, or the embedded PostgreSQL in DATA_DIR/postgres,
 * started here and stopped by close()), applies migrations and seeds a fresh one.
 */
export async function openDatabase(env: Env, log: Logger = defaultLogger()): Promise<Database> {
  const database = env.DATABASE_URL
    ? openPostgres(env.DATABASE_URL)
    : await openEmbedded(env.DATA_DIR, {
        // without its database the server can only answer 500s: stop, so that a supervisor restarts both
        onUnexpectedExit(code, signal, logFile) {
          log.fatal(
            { code, signal, log_file: logFile },
            `The embedded PostgreSQL exited unexpectedly (${signal ?? `code ${code}`}); see ${logFile}. Stopping.`,
          );
          process.exit(1);
        },
      });
  if (database.embedded) {
    const { dir, created, startMs } = database.embedded;
    log.info(
      { dir, created, start_ms: Math.round(startMs) },
      `Embedded PostgreSQL ${created ? "created and " : ""}started in ${dir} (${Math.round(startMs)} ms; log in ${dir}.log).`,
    );
  }
  try {
    await database.migrate(installQueue); // and graphile-worker's schema (webhooks), under the same lock
    await seedDatabase(database.db);
  } catch (e) {
    await database.close();
    throw e;
  }
  return database;
}
