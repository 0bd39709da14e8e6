import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { startEmbeddedPostgres } from "../../src/db/embedded/index.ts";
import { MARKER } from "../../src/storage/marker.ts";
import { makeImage, makeNoisyJpeg, multipart } from "../support/images.ts";
import { freePort, startServer } from "../support/processes.ts";

/**
 * Moving from the embedded database to your own PostgreSQL, as docs/backups.md tells it: stop the server,
 * `DATABASE_URL=… bun run cli database move`, start the server with DATABASE_URL and the same DATA_DIR. Every image
 * is served by the new database and nothing goes to the quarantine, also once every object is days old; the same
 * DATA_DIR pointed at an empty database instead keeps every object where it is.
 */
setDefaultTimeout(180_000); // clusters and servers are started here, seconds each on a busy machine

const root = join(import.meta.dir, "..", "..");
const ADMIN_TOKEN = "move-test-admin-token-0123456789abcdef";
const work = mkdtempSync(join(tmpdir(), "imghost-move-"));
chmodSync(work, 0o755); // under root an embedded server may run as "postgres", which must reach its directory
const dataDir = join(work, "data");

/** The PostgreSQL "of your own": TEST_DATABASE_URL's server, or a second embedded one listening on TCP. */
let serverUrl: string;
let stopTarget = async () => {};
let admin: postgres.Sql;

const made: string[] = [];
async function newDatabase(): Promise<string> {
  const name = `imghost_move_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  await admin.unsafe(`create database ${name}`);
  made.push(name);
  return Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString();
}

async function cli(args: string[], env: Record<string, string | undefined>) {
  const proc = Bun.spawn(["bun", "run", "src/cli/index.ts", ...args], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: undefined, ADMIN_TOKEN: undefined, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

async function serve(env: Record<string, string>) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = await startServer({
    env: { DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", BASE_URL: base, ADMIN_TOKEN, UPLOAD_BODIES_PER_ADDRESS: "100", ...env },
  });
  const call = async (method: string, path: string, token = ADMIN_TOKEN, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as { data: any };
    if (res.status !== 200) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
    return json.data;
  };
  /** POST /api/admin/storage/reconcile once the start's own run is over (a call meanwhile is skipped); strategy 1's location. */
  const reconcile = async () => {
    for (let i = 0; ; i++) {
      const report = await call("POST", "/api/admin/storage/reconcile", ADMIN_TOKEN, {});
      if (!report.skipped) return report.locations.find((l: any) => l.strategies.some((s: any) => s.id === 1));
      if (i > 100) throw new Error("the reconciler stayed busy");
      await Bun.sleep(100);
    }
  };
  return {
    base,
    call,
    reconcile,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

/** Every object file of DATA_DIR/uploads (the marker and the quarantine aside), relative. */
function objects(): string[] {
  const dir = join(dataDir, "uploads");
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .filter((p) => p !== MARKER && !p.startsWith(".quarantine"))
    .sort();
}

beforeAll(async () => {
  if (process.env.TEST_DATABASE_URL) {
    serverUrl = process.env.TEST_DATABASE_URL;
  } else {
    const port = await freePort();
    const target = await startEmbeddedPostgres(join(work, "own-postgres"), { durable: false, settings: { listen_addresses: "127.0.0.1", port: String(port) } });
    serverUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
    stopTarget = () => target.stop();
  }
  admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
});

afterAll(async () => {
  for (const name of made) await admin.unsafe(`drop database if exists ${name} with (force)`).catch(() => {});
  await admin?.end({ timeout: 5 });
  await stopTarget();
  rmSync(work, { recursive: true, force: true });
});

describe("from the embedded database to your own PostgreSQL", () => {
  const images: { pathname: string; thumbnail: string; variant?: string }[] = [];

  test("database move, then the same DATA_DIR served by the new database: every image served, nothing quarantined", async () => {
    // an embedded install with images, thumbnails and a variant
    const embedded = await serve({});
    const user = await embedded.call("POST", "/api/admin/users", ADMIN_TOKEN, { username: "mover", email: "mover@example.com" });
    const { token } = await embedded.call("POST", `/api/admin/users/${user.id}/tokens`);
    for (const [bytes, name] of [
      [await makeNoisyJpeg(900, 600), "photo.jpg"],
      [await makeImage("png", 40, 30), "small.png"],
      [await makeImage("webp", 1200, 500, "#aa3300"), "wide.webp"],
    ] as const) {
      const m = multipart([{ name: "file", value: bytes, filename: name }]);
      const res = await fetch(`${embedded.base}/api/v1/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": m.contentType },
        body: m.body,
      });
      const data = ((await res.json()) as { data: any }).data;
      expect(res.status).toBe(200);
      images.push({ pathname: data.pathname, thumbnail: new URL(data.links.thumbnail_url).pathname });
    }
    images[0]!.variant = `/i/${images[0]!.pathname}?w=320&format=webp`;
    expect((await fetch(`${embedded.base}${images[0]!.variant}`)).status).toBe(200);
    expect((await embedded.reconcile()).errors).toEqual([]); // marks the storage as the embedded database's
    await embedded.stop();
    const before = objects();
    expect(before.some((p) => p.startsWith("variants/"))).toBe(true);

    // a server still running on DATA_DIR is refused; so is a target that is not empty
    const target = await newDatabase();
    const moved = await cli(["database", "move"], { DATA_DIR: dataDir, DATABASE_URL: target });
    expect(moved.stderr).toBe("");
    expect(moved.code).toBe(0);
    expect(moved.stdout).toMatch(
      /^Moved \d+ records in \d+ tables from the embedded database of .* into 127\.0\.0\.1:\d+\/imghost_move_\w+ \(database [0-9a-f-]{36}\)/,
    );
    expect(moved.stdout).not.toContain("postgres@"); // the URL's user (and any password) is never printed
    const again = await cli(["database", "move"], { DATA_DIR: dataDir, DATABASE_URL: target });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("is not empty");

    // days later, as far as the reconciler can tell: every object is long past its grace period
    const old = new Date(Date.now() - 3 * 86_400_000);
    for (const path of before) utimesSync(join(dataDir, "uploads", path), old, old);

    const own = await serve({ DATABASE_URL: target });
    try {
      const local = await own.reconcile();
      expect(local).toMatchObject({ orphans_found: 0, orphans_removed: 0, records_missing_object: 0, errors: [] });
      expect(objects()).toEqual(before);
      expect(existsSync(join(dataDir, "uploads", ".quarantine"))).toBe(false);
      for (const image of images) {
        for (const path of [`/i/${image.pathname}`, image.thumbnail, image.variant].filter(Boolean)) {
          expect({ path, status: (await fetch(`${own.base}${path}`)).status }).toEqual({ path, status: 200 });
        }
      }
      const listed = await own.call("GET", "/api/v1/images", token);
      expect(listed.data.length).toBe(images.length);
    } finally {
      await own.stop();
    }
  });

  test("the same DATA_DIR pointed at an empty database instead: refused, every object stays", async () => {
    const before = objects();
    const empty = await serve({ DATABASE_URL: await newDatabase() });
    try {
      const local = await empty.reconcile();
      expect(local.orphans_removed).toBe(0);
      expect(local.errors[0]).toContain("belongs to a different database");
      expect(objects()).toEqual(before);
    } finally {
      await empty.stop();
    }
    // and the embedded database, started again after the move, is not the moved one any more: it moves nothing either
    const embedded = await serve({});
    try {
      expect((await embedded.reconcile()).errors[0]).toContain("belongs to a different database");
      expect(objects()).toEqual(before);
    } finally {
      await embedded.stop();
    }
    expect(readFileSync(join(dataDir, "uploads", MARKER), "utf8")).toStartWith("image-host-database: ");
  });
});
