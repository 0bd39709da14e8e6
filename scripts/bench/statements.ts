/**
 * Database statements per accepted upload on PostgreSQL, counted with postgres.js's `debug` hook (called once per
 * statement sent, BEGIN and COMMIT included). pg_stat_statements is not available on every server; this costs
 * nothing on the measured servers because it runs in a process of its own: the app is built here exactly as
 * src/server.ts builds it (same createApp, same services), on the benchmark's PostgreSQL database, behind
 * Bun.serve on a loopback port, and uploads are sent one after the other.
 *
 *   bun scripts/bench/statements.ts '<json: {url, dataDir, adminToken, bodyFile, contentType, uploads}>'
 */
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { createApp } from "../../src/app.ts";
import * as schema from "../../src/db/schema.ts";
import type { Deps } from "../../src/deps.ts";
import { objectHandler } from "../../src/routes/site/serve-object.ts";
import { buildServices } from "../../src/services/index.ts";
import { StorageRegistry } from "../../src/storage/index.ts";

export interface StatementJob {
  url: string;
  dataDir: string;
  adminToken: string;
  bodyFile: string;
  contentType: string;
  uploads: number;
}
export interface StatementResult {
  /** Statements of the first upload of a fresh account (nothing cached yet). */
  cold: number;
  /** Statements of each following upload, in order. */
  perUpload: number[];
  /** The statements of the last counted upload, shortened. */
  sample: string[];
}

async function count(job: StatementJob): Promise<StatementResult> {
  let log: string[] = [];
  const client = postgres(job.url, {
    max: 10,
    onnotice: () => {},
    debug: (_connection, query) => {
      log.push(query.replace(/\s+/g, " ").trim());
    },
  });
  const db = drizzle(client, { schema }) as unknown as Deps["db"];
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(null, { status: 503 }) });
  const base = `http://127.0.0.1:${server.port}`;
  const deps: Deps = {
    db,
    storage: new StorageRegistry({ dataDir: job.dataDir, baseUrl: base }),
    config: { baseUrl: base, dataDir: job.dataDir, adminToken: job.adminToken, trustedProxies: 0 },
    clock: () => new Date(),
  };
  const services = buildServices(deps);
  const app = createApp(deps, services);
  server.reload({ routes: { "/i/*": objectHandler(deps, services.objects) }, fetch: app.fetch });
  try {
    const adminCall = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${job.adminToken}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      if (res.status !== 200) throw new Error(`admin ${path} → ${res.status} ${await res.text()}`);
      return ((await res.json()) as { data: any }).data;
    };
    const name = `stmt_${crypto.randomUUID().slice(0, 8)}`;
    const user = await adminCall("POST", "/api/admin/users", { username: name, email: `${name}@bench.invalid`, capacity_kb: 1_000_000_000 });
    const { token } = await adminCall("POST", `/api/admin/users/${user.id}/tokens`);
    const body = await Bun.file(job.bodyFile).arrayBuffer();
    const upload = async () => {
      const res = await fetch(`${base}/api/v1/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": job.contentType },
        body,
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`upload → ${res.status} ${text.slice(0, 300)}`);
    };
    log = [];
    await upload(); // the first: nothing of this account cached yet
    await Bun.sleep(20);
    const cold = log.length;
    const perUpload: number[] = [];
    let sample: string[] = [];
    for (let i = 0; i < job.uploads; i++) {
      log = [];
      await upload();
      await Bun.sleep(20); // a release that runs after the answer is sent still counts
      perUpload.push(log.length);
      sample = log.map((q) => (q.length > 110 ? `${q.slice(0, 107)}…` : q));
    }
    return { cold, perUpload, sample };
  } finally {
    server.stop(true);
    await client.end({ timeout: 5 });
  }
}

if (import.meta.main) {
  const result = await count(JSON.parse(process.argv[2]!) as StatementJob);
  console.log(`STMTJSON ${JSON.stringify(result)}`);
  process.exit(0);
}
