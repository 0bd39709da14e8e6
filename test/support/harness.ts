import { chmodSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { parseAllowList } from "../../src/webhooks/address-guard.ts";
import { secretBox } from "../../src/webhooks/secret-box.ts";
import { installQueue } from "../../src/webhooks/queue.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import createClient from "openapi-fetch";
import postgres from "postgres";
import type { paths } from "../../openapi/schema";
import { createApp } from "../../src/app.ts";
import { type Connection, type Database, openPostgres } from "../../src/db/client.ts";
import { startEmbeddedPostgres } from "../../src/db/embedded/index.ts";
import { seedDatabase } from "../../src/db/seed.ts";
import type { Deps } from "../../src/deps.ts";
import { StorageRegistry } from "../../src/storage/index.ts";
import pino from "pino";
import { createLogger } from "../../src/observability/log.ts";
import { multipart, type Part } from "./images.ts";
import { checkAgainstSpec } from "./spec.ts";

export const BASE_URL = "http://img.test";

/**
 * Every line the services log during this test run, as JSON at level trace, goes to one file (test/support/
 * log-scan.ts reads it back at the end of the run: no secret may appear in it), and to the listeners of `quietly`.
 */
export const testLog = (() => {
  const file = join(tmpdir(), `imghost-test-log-${process.pid}.jsonl`);
  const fd = openSync(file, "w", 0o600);
  const listeners = new Set<(record: Record<string, unknown>) => void>();
  const destination = {
    write(line: string) {
      writeSync(fd, line);
      if (listeners.size > 0) {
        const record = JSON.parse(line) as Record<string, unknown>;
        for (const l of listeners) l(record);
      }
    },
  };
  const logger = createLogger({ format: "json", level: "trace", destination });
  return { file, fd, listeners, logger };
})();
export const ADMIN_TOKEN = "test-admin-token-0123456789";

/**
 * The server the test databases live on: TEST_DATABASE_URL's, or an embedded PostgreSQL (the service's own
 * default) started once per test run in a temporary directory, without fsync. A template database is migrated
 * and seeded once per run; each test context gets its own copy (CREATE DATABASE … TEMPLATE, tens of ms).
 * test/support/preload.ts starts this before the first file and stops it after the last.
 */
interface TestDatabases {
  connection(database: string): Connection;
  admin: postgres.Sql;
  template: string;
  /** `strategy file_copy` on the embedded server (no fsync: copying the files beats replaying them through WAL). */
  copy: string;
  stop(): Promise<void>;
}

let testDatabases: Promise<TestDatabases> | undefined;

const randomName = (prefix: string) => `${prefix}_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;

function databases(): Promise<TestDatabases> {
  testDatabases ??= (async () => {
    const serverUrl = process.env.TEST_DATABASE_URL;
    let connection: (database: string) => Connection;
    let adminConnection: Connection;
    let stopServer = async () => {};
    if (serverUrl) {
      adminConnection = serverUrl;
      connection = (database) => {
        const url = new URL(serverUrl);
        url.pathname = `/${database}`;
        return url.toString();
      };
    } else {
      const dir = mkdtempSync(join(tmpdir(), "imghost-test-pg-"));
      chmodSync(dir, 0o755); // under root the server runs as "postgres", which must reach its directory
      const server = await startEmbeddedPostgres(join(dir, "cluster"), { durable: false, settings: { max_connections: "300" } });
      connection = (database) => server.connection(database);
      adminConnection = server.connection("postgres");
      stopServer = async () => {
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      };
    }
    const options = { max: 2, onnotice: () => {} };
    const admin = typeof adminConnection === "string" ? postgres(adminConnection, options) : postgres({ ...adminConnection, ...options });
    const template = randomName("imghost_template");
    await admin.unsafe(`create database ${template}`);
    const prepared = openPostgres(connection(template), { max: 2 });
    try {
      await prepared.migrate(installQueue);
      await seedDatabase(prepared.db);
    } finally {
      await prepared.close(); // a template must have no sessions when it is copied
    }
    return {
      connection,
      admin,
      template,
      copy: serverUrl ? "" : " strategy file_copy",
      async stop() {
        try {
          await admin.unsafe(`drop database if exists ${template} with (force)`);
          await admin.end({ timeout: 5 });
        } finally {
          await stopServer();
        }
      },
    };
  })();
  return testDatabases;
}

/** Starts the test databases' server and builds the template (preload: once per run). */
export async function startTestDatabases() {
  await databases();
}

/** Drops the template and stops the embedded server (preload: after the last file). */
export async function stopTestDatabases() {
  const started = testDatabases;
  testDatabases = undefined;
  if (started) await (await started).stop();
}

/** A fresh database of its own for one test context, copied from the template. */
async function freshDatabase(): Promise<{ database: Database; drop: () => Promise<void> }> {
  const { admin, connection, template, copy } = await databases();
  const name = randomName("imghost_test");
  await admin.unsafe(`create database ${name} template ${template}${copy}`);
  const database = openPostgres(connection(name), { max: 20 });
  return {
    database,
    drop: async () => {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
    },
  };
}

export interface TestUser {
  id: number;
  username: string;
  token: string;
}

export type TestContext = Awaited<ReturnType<typeof createTestContext>>;

/** `config` overrides the test defaults (which lift the per-address throttles every test file's single address would hit). */
export async function createTestContext(config: Partial<Deps["config"]> = {}) {
  const { database, drop } = await freshDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), "imghost-test-"));
  let offsetMs = 0;
  const deps: Deps = {
    db: database.db,
    storage: new StorageRegistry({ dataDir, baseUrl: BASE_URL }),
    config: {
      baseUrl: BASE_URL,
      dataDir,
      adminToken: ADMIN_TOKEN,
      trustedProxies: 1,
      authFailures: { burst: 1_000_000, perMinute: 1_000_000 },
      uploadBodies: { perAddress: 1000, perCaller: 1000, total: 1000 },
      webhooks: { box: secretBox(randomBytes(32)), allow: parseAllowList(undefined) },
      ...config,
    },
    clock: () => new Date(Date.now() + offsetMs),
    log: testLog.logger,
    pool: database.pool,
  };
  const app = createApp(deps);

  /** In-process request; every API answer is checked against the committed spec. */
  async function send(req: Request): Promise<Response> {
    const res = await app.fetch(req);
    const { pathname } = new URL(req.url);
    if (pathname.startsWith("/api/") || pathname === "/health") {
      const text = await res.clone().text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {}
      checkAgainstSpec(req.method, pathname, res.status, res.headers.get("content-type"), body);
    }
    return res;
  }

  const request = (path: string, init: RequestInit = {}) => send(new Request(path.startsWith("http") ? path : `${BASE_URL}${path}`, init));

  async function json<T = any>(path: string, init: RequestInit = {}): Promise<{ status: number; body: T; headers: Headers }> {
    const res = await request(path, init);
    return { status: res.status, body: (await res.json()) as T, headers: res.headers };
  }

  async function admin<T = any>(method: string, path: string, body?: unknown) {
    const res = await json<T>(path, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (res.status !== 200) throw new Error(`admin ${method} ${path} → ${res.status} ${JSON.stringify(res.body)}`);
    return (res.body as { data: any }).data;
  }

  let userSeq = 0;
  async function createUser(overrides: Record<string, unknown> = {}): Promise<TestUser> {
    const username = `user${++userSeq}_${Math.random().toString(36).slice(2, 7)}`;
    const user = await admin("POST", "/api/admin/users", { username, email: `${username}@example.com`, ...overrides });
    const { token } = await admin("POST", `/api/admin/users/${user.id}/tokens`);
    return { id: user.id, username, token };
  }

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  /** POST /api/v1/upload with a hand-built multipart body. */
  async function upload(
    token: string | null,
    file: { bytes: Uint8Array; filename: string; contentType?: string } | null,
    fields: Record<string, string> = {},
    options: { headers?: Record<string, string>; query?: string } = {},
  ) {
    // the small fields first, as browsers send a form whose file input comes last: a `token` field must precede the file
    const parts: Part[] = Object.entries(fields).map(([name, value]) => ({ name, value }));
    if (file) parts.push({ name: "file", value: file.bytes, filename: file.filename, contentType: file.contentType });
    const m = multipart(parts);
    return json(`/api/v1/upload${options.query ?? ""}`, {
      method: "POST",
      headers: { ...(token ? bearer(token) : {}), "content-type": m.contentType, ...options.headers },
      body: m.body,
    });
  }

  /** The typed client generated from the spec (openapi-typescript + openapi-fetch), in-process. */
  const api = createClient<paths>({ baseUrl: BASE_URL, fetch: send });

  return {
    app,
    deps,
    db: database.db,
    driver: database.driver,
    /** How to reach this context's database (a worker of the job queue opens its own pool with it). */
    connection: database.connection!,
    dataDir,
    request,
    json,
    admin,
    api,
    bearer,
    upload,
    createUser,
    defaultGroupId: 1,
    guestGroupId: 2,
    localStrategyId: 1,
    /** Moves the service's clock forward. */
    advance(ms: number) {
      offsetMs += ms;
    },
    now: () => deps.clock(),
    async close() {
      await database.close();
      await drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `fn` with the warnings and errors the service logs captured (and console.error's): the failures a test
 * provokes on purpose are logged, and the test may assert that they were (the log is where the request id of a
 * 500 leads).
 */
export async function quietly<T>(fn: () => Promise<T>): Promise<{ result: T; logged: Record<string, unknown>[] }> {
  const logged: Record<string, unknown>[] = [];
  const listener = (record: Record<string, unknown>) => {
    if (pino.levels.values[record.level as string]! >= pino.levels.values.warn!) logged.push(record);
  };
  const original = console.error;
  console.error = (...args: unknown[]) => logged.push({ level: "error", console: args.map(String).join(" ") });
  testLog.listeners.add(listener);
  try {
    return { result: await fn(), logged };
  } finally {
    testLog.listeners.delete(listener);
    console.error = original;
  }
}
