import { accessSync, constants, existsSync, mkdirSync, statSync } from "node:fs";
import { userInfo } from "node:os";
import { resolve } from "node:path";
import { createApp } from "./app.ts";
import { objectHandler } from "./routes/site/serve-object.ts";
import { buildServices } from "./services/index.ts";
import { openDatabase, probeListen, resolveAdminToken } from "./bootstrap.ts";
import { loadEnv, smtpFromEnv, type Env } from "./env.ts";
import { clientAddress } from "./http/auth.ts";
import { ConnectionGate } from "./http/connection-gate.ts";
import { observeObjects } from "./http/observe.ts";
import { createLogger, defaultLogFormat } from "./observability/log.ts";
import { StorageRegistry } from "./storage/index.ts";
import { startReconciler } from "./services/reconcile/index.ts";
import { startSweeper } from "./services/sweeper.ts";
import { startRemovals } from "./services/removals.ts";
import { startQueue } from "./webhooks/queue.ts";
import { resolveWebhookKey, secretBox } from "./webhooks/secret-box.ts";

/** A start-up failure the operator can fix: one line naming the variable, no stack trace, exit 1. */
function refuseToStart(line: string): never {
  console.error(line);
  process.exit(1);
}

/** DATA_DIR exists (or can be made) and this user may write there; otherwise one line saying which of the two failed. */
function checkDataDir(env: Env) {
  const dir = resolve(env.DATA_DIR);
  const who = `this user (${userInfo().username}, uid ${process.getuid?.() ?? "?"})`;
  const reason = (e: unknown) => {
    const code = (e as NodeJS.ErrnoException).code;
    return code === "EACCES" || code === "EPERM"
      ? `permission denied for ${who}`
      : code === "ENOTDIR" || code === "EEXIST"
        ? "a part of the path is a file, not a directory"
        : code === "EROFS"
          ? "the file system is read-only"
          : (code ?? (e as Error).message);
  };
  if (!existsSync(dir)) {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (e) {
      refuseToStart(`DATA_DIR: ${JSON.stringify(env.DATA_DIR)} does not exist and cannot be created (${reason(e)})`);
    }
  }
  try {
    if (!statSync(dir).isDirectory()) refuseToStart(`DATA_DIR: ${JSON.stringify(env.DATA_DIR)} is not a directory`);
    accessSync(dir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why =
      code === "EACCES" || code === "EPERM"
        ? `is not readable and writable by ${who}`
        : code === "EROFS"
          ? "is on a read-only file system"
          : `cannot be used (${reason(e)})`;
    refuseToStart(`DATA_DIR: ${JSON.stringify(env.DATA_DIR)} ${why}`);
  }
}

/** Why Bun.serve could not listen, as one line naming the variable to change. */
function listenFailure(env: Env, e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code ?? "";
  const message = (e as Error).message ?? String(e);
  if (code === "EADDRINUSE" || /in use/i.test(message)) {
    return `PORT: ${env.PORT} is already in use on ${env.HOST} (another process listens there); choose another with PORT=…`;
  }
  if (code === "EACCES" || /permission/i.test(message)) {
    return `PORT: ${env.PORT} needs privileges this user lacks (ports below 1024); use a port above 1023 behind a proxy`;
  }
  return `HOST: cannot listen on ${JSON.stringify(env.HOST)} port ${env.PORT} (${code || message}); use an address of this machine, like 0.0.0.0 or 127.0.0.1`;
}

const env = loadEnv();
const log = createLogger({ format: env.LOG_FORMAT ?? defaultLogFormat(), level: env.LOG_LEVEL });
const cannotListen = await probeListen(env.HOST, env.PORT); // before anything is created
if (cannotListen) refuseToStart(listenFailure(env, cannotListen));
checkDataDir(env);
const admin = resolveAdminToken(env);
if (admin.generatedAt) log.info({ file: admin.generatedAt }, `Generated an admin token in ${admin.generatedAt} (mode 600).`);

let database: Awaited<ReturnType<typeof openDatabase>>;
try {
  database = await openDatabase(env, log);
} catch (e) {
  refuseToStart(`${env.DATABASE_URL ? "DATABASE_URL" : "DATA_DIR"}: cannot open the database: ${(e as Error).message.split("\n")[0]}`);
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
    bodyReadTimeoutSeconds: env.BODY_READ_TIMEOUT_SECONDS,
    uploadBodies: { perAddress: env.UPLOAD_BODIES_PER_ADDRESS, perCaller: env.UPLOAD_BODIES_PER_CALLER, total: env.UPLOAD_BODIES_TOTAL },
    metricsToken: env.METRICS_TOKEN,
    webhooks: { box: secretBox(resolveWebhookKey(env.WEBHOOK_SECRET_KEY, env.DATA_DIR)), allow: env.WEBHOOK_ALLOW },
    mail: smtpFromEnv(env),
    database: database.embedded
      ? { kind: "embedded" as const, detail: `embedded PostgreSQL in ${database.embedded.dir}` }
      : { kind: "external" as const, detail: "PostgreSQL at DATABASE_URL" },
  },
  clock: () => new Date(),
  log,
  pool: database.pool,
};
const services = buildServices(deps); // the composition root: createApp and Bun's router share this set
const app = createApp(deps, services);

// a stop signal from the moment the port may answer: one that comes while the workers below are still starting waits
// for them, then stops everything (without a handler yet, SIGTERM would end the process at once, mid-start)
let started!: () => void;
const startedUp = new Promise<void>((resolve) => (started = resolve));
let stopping = false;
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));

let server: ReturnType<typeof Bun.serve>;
const clientOf = (request: Request) => clientAddress(env.TRUST_PROXY, request.headers.get("x-forwarded-for"), () => server.requestIP(request)?.address ?? "");
// in front of everything: one address cannot hold the process's connections (429 + close beyond its share)
const connections = new ConnectionGate({ perAddress: env.CONNECTIONS_PER_ADDRESS, total: env.CONNECTIONS_TOTAL });
try {
  server = Bun.serve({
    port: env.PORT,
    hostname: env.HOST,
    // image requests go straight to the object server (Bun's router, no middleware); everything else to the app
    routes: {
      "/i/*": connections.wrap(observeObjects(deps, objectHandler(deps, services.objects), clientOf, { log: env.LOG_OBJECT_REQUESTS }), clientOf),
    },
    fetch: connections.wrap(app.fetch, clientOf),
    maxRequestBodySize: 1024 * 1024 * 1024,
    idleTimeout: 60,
  });
} catch (e) {
  await database.close().catch(() => {});
  refuseToStart(listenFailure(env, e));
}
const sweeper = startSweeper(deps, env.SWEEP_INTERVAL_SECONDS * 1000);
const removals = startRemovals(deps); // objects of deleted images and dead uploads, within seconds, on every instance
const reconciler = startReconciler(deps, env.RECONCILE_INTERVAL_SECONDS * 1000);
// webhook deliveries: every instance runs workers; the queue gives each job to one of them
const queue = await startQueue(deps, database.connection!, { concurrency: env.WEBHOOK_CONCURRENCY });
log.info(
  { address: `http://${env.HOST}:${server.port}`, base_url: env.BASE_URL, database: database.embedded ? "embedded" : "postgres" },
  `Image host listening on http://${env.HOST}:${server.port} (public address ${env.BASE_URL}, ` +
    `database: ${database.embedded ? `embedded in ${database.embedded.dir}` : "PostgreSQL"}). Docs: ${env.BASE_URL}/docs`,
);

started();

async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  await startedUp;
  log.info({ signal }, `${signal}: draining in-flight requests…`);
  await sweeper.stop();
  await removals.stop();
  await reconciler.stop();
  await server.stop(); // waits for in-flight requests
  await services.mail.settle(); // the mails the last answers queued go out (each send is bounded by its timeouts)
  await queue.stop(); // running deliveries finish; their jobs are released
  await database.close();
  log.info("stopped");
  log.flush();
  process.exit(0);
}
