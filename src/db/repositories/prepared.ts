import type { Executor } from "../client.ts";

const caches = new WeakMap<object, Map<string, unknown>>();
let names = 0;

/**
 * A statement built once per executor and shape, then only executed with its values (drizzle placeholders). Building
 * the SQL of a wide select (every column of images and strategies, of sessions, users and groups) costs the server
 * more CPU than PostgreSQL spends running it: on the user center's pages it was a quarter of the server's CPU
 * (measured with `BENCH_CPU_PROF`). Shapes are few (a key names one), so the cache stays small; a transaction is an
 * executor of its own and builds its statements afresh.
 */
export function prepared<T>(db: Executor, key: string, build: (name: string) => T, options: { planEachRun?: boolean } = {}): T {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let statement = cache.get(key) as T | undefined;
  if (statement === undefined) {
    // planEachRun: built once, but sent unnamed, so PostgreSQL plans it for its values each time. A named statement
    // gets a generic plan after five runs when that plan looks no dearer than the custom ones: for a name search
    // that plan reads every match of a common word through the trigram index (31 ms for "screenshot" in 100,000
    // images) where the plan for the value walks the newest rows until the page is full (0.2 ms)
    statement = build(options.planEachRun ? (undefined as unknown as string) : `q${++names}`);
    cache.set(key, statement);
  }
  return statement;
}
