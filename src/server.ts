import { mkdirSync } from "node:fs";
import { createApp } from "./app.ts";
import { objectServerFor } from "./routes/site/serve-object.ts";
import { openDatabase, resolveAdminToken } from "./bootstrap.ts";
import { loadEnv } from "./env.ts";
import { StorageRegistry } from "./storage/index.ts";
import { startReconciler } from "./services/reconcile.ts";
import { startSweeper } from "./services/sweeper.ts";

const env = loadEnv();
mkdirSync(env.DATA_DIR, { recursive: true });
const admin = resolveAdminToken(env);
if (admin.generatedAt) console.log(`Generated an admin token in ${admin.generatedAt} (mode 600).`);

let database: Awaited<ReturnType<typeof openDatabase>>;
try {
  database = await openDatabase(env);
} catch (e) {
  console.error(`Cannot open the database: ${(e as Error).message}`);
  process.exit(1);
}

const deps = {
  db: database.db,
  storage: new StorageRegistry({ dataDir: env.DATA_DIR, baseUrl: env.BASE_URL }),
  config: {
    baseUrl: env.BASE_URL,
    dataDir: env.DATA_DIR,
    adminToken: admin.token,
    trustedProxies: env.TRUST_PROXY,
    uploadReadTimeoutSeconds: env.UPLOAD_READ_TIMEOUT_SECONDS,
    uploadBodies: { perAddress: env.UPLOAD_BODIES_PER_ADDRESS, total: env.UPLOAD_BODIES_TOTAL },
  },
  clock: () => new Date(),
};
const app = createApp(deps);
const sweeper = startSweeper(deps, env.SWEEP_INTERVAL_SECONDS * 1000);
const reconciler = startReconciler(deps, env.RECONCILE_INTERVAL_SECONDS * 1000);

const server = Bun.serve({
  port: env.PORT,
  hostname: env.HOST,
  // image requests go straight to the object server (Bun's router, no middleware); everything else to the app
  routes: { "/i/*": objectServerFor(deps) },
  fetch: app.fetch,
  maxRequestBodySize: 1024 * 1024 * 1024,
  idleTimeout: 60,
});
console.log(
  `Image host listening on http://${env.HOST}:${server.port} (public address ${env.BASE_URL}, ` +
    `database: ${database.driver === "postgres" ? "PostgreSQL" : `embedded in ${env.DATA_DIR}/db`}). Docs: ${env.BASE_URL}/docs`,
);

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: draining in-flight requests…`);
  await sweeper.stop();
  await reconciler.stop();
  await server.stop(); // waits for in-flight requests
  await database.close();
  console.log("stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
