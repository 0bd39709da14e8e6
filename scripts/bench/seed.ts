/**
 * Seeds listing accounts with image rows, one INSERT … SELECT generate_series per account, then ANALYZE.
 * Run as a child process: `bun scripts/bench/seed.ts '<json>'`. On the embedded database the server must be
 * stopped (one process per data directory): the database is opened as the server opens it (src/bootstrap.ts), so
 * this works whatever the embedded default is, and takes the same lock on DATA_DIR.
 */
import { sql } from "drizzle-orm";
import { openDatabase } from "../../src/bootstrap.ts";
import { loadEnv } from "../../src/env.ts";

export interface SeedJob {
  database: { kind: "postgres"; url: string } | { kind: "embedded" };
  dataDir: string;
  strategyId: number;
  accounts: { userId: number; tag: string; count: number }[];
}
export interface SeedResult {
  ms: Record<string, number>;
  total: number;
}

async function seed(job: SeedJob): Promise<SeedResult> {
  // the database as the server opens it, whatever the embedded default is (the same lock on DATA_DIR)
  const database = await openDatabase(
    loadEnv(job.database.kind === "postgres" ? { DATA_DIR: job.dataDir, DATABASE_URL: job.database.url } : { DATA_DIR: job.dataDir }),
  );
  const ms: Record<string, number> = {};
  const t0 = performance.now();
  try {
    for (const { userId, tag, count } of job.accounts) {
      const t = performance.now();
      const size = 2048;
      await database.db.execute(sql`
        insert into images (key, user_id, strategy_id, path, thumbnail_path, name, origin_name, size, mimetype,
                            extension, width, height, md5, sha1, is_public, uploader_ip, created_at)
        select ${tag} || '-' || g, ${userId}, ${job.strategyId},
               '2024/01/01/' || ${tag} || '-' || g || '.png', null, ${tag} || '-' || g || '.png', 'shot.png', ${size},
               'image/png', 'png', 300, 200, md5(g::text), md5(g::text) || '01234567', true, '127.0.0.1',
               timestamptz '2024-01-01 00:00:00+00' - g * interval '1 second'
        from generate_series(1, ${count}) as g`);
      await database.db.execute(
        sql`update users set image_num = image_num + ${count}, used_bytes = used_bytes + ${count * size} where id = ${userId}`,
      );
      ms[tag] = performance.now() - t;
    }
    await database.db.execute(sql`analyze images`);
    await database.db.execute(sql`checkpoint`).catch(() => {}); // superuser only; the embedded server's writes reach disk before it stops
  } finally {
    await database.close();
  }
  return { ms, total: performance.now() - t0 };
}

if (import.meta.main) {
  const job = JSON.parse(process.argv[2]!) as SeedJob;
  const result = await seed(job);
  console.log(`SEEDJSON ${JSON.stringify(result)}`);
  process.exit(0);
}
