import type { Executor } from "../client.ts";

const caches = new WeakMap<object, Map<string, unknown>>();
let names = 0;

/**
 * A statement built once per executor and shape, then only executed with its values (drizzle placeholders). Building
 * the SQL of a wide select (every column of images and strategies, of sessions, users and groups) costs the server
 * more CPU than PostgreSQL spends running it: on the user center's pages it was a quarter of the server's CPU
 * (issue 18, `BENCH_CPU_PROF`). Shapes are few (a key names one), so the cache stays small; a transaction is an
 * executor of its own and builds its statements afresh.
 */
export function prepared<T>(db: Executor, key: string, build: (name: string) => T): T {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let statement = cache.get(key) as T | undefined;
  if (statement === undefined) {
    statement = build(`q${++names}`);
    cache.set(key, statement);
  }
  return statement;
}
