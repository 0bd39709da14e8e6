import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { createLogger, serializeError } from "../../src/observability/log.ts";
import { randomToken } from "../../src/services/secrets.ts";
import { startSweeper } from "../../src/services/sweeper.ts";
import { dirname } from "node:path";
import { BASE_URL, createTestContext, quietly, type TestContext, testLog, type TestUser } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { findSecrets } from "../support/log-scan.ts";
import { parsePrometheusText, sampleValue } from "../support/prometheus.ts";
import { expectStatus } from "../support/status.ts";

setDefaultTimeout(60_000);

let ctx: TestContext;
let alice: TestUser;
let png: Uint8Array;
beforeAll(async () => {
  ctx = await createTestContext();
  alice = await ctx.createUser();
  png = await makeImage("png", 300, 200);
});
afterAll(() => ctx.close());

/** The records the service logs while `fn` runs (every level). */
async function logsOf<T>(fn: () => Promise<T>): Promise<{ result: T; records: Record<string, any>[] }> {
  const records: Record<string, any>[] = [];
  const listener = (r: Record<string, unknown>) => records.push(r);
  testLog.listeners.add(listener);
  try {
    return { result: await fn(), records };
  } finally {
    testLog.listeners.delete(listener);
  }
}

const accessLine = (records: Record<string, any>[], requestId: string) => {
  const lines = records.filter((r) => r.request_id === requestId && r.route !== undefined);
  expect(lines).toHaveLength(1);
  return lines[0]!;
};

describe("the access log: one structured line per request", () => {
  test("a permanent token's upload: every field", async () => {
    const { result, records } = await logsOf(() =>
      ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }, {}, { headers: { "x-forwarded-for": "198.51.100.20" } }),
    );
    expectStatus(result, 200);
    const requestId = result.headers.get("x-request-id")!;
    const line = accessLine(records, requestId);
    expect(Object.keys(line).sort()).toEqual(
      ["level", "time", "pid", "request_id", "method", "route", "status", "duration_ms", "bytes_in", "bytes_out", "caller", "client", "msg"].sort(),
    );
    expect(line.level).toBe("info");
    expect(Date.parse(line.time)).toBeGreaterThan(Date.now() - 60_000);
    expect(line.method).toBe("POST");
    expect(line.route).toBe("/api/v1/upload");
    expect(line.status).toBe(200);
    expect(line.duration_ms).toBeGreaterThan(0);
    expect(line.bytes_in).toBeGreaterThan(png.byteLength); // the multipart body
    expect(line.bytes_out).toBe(Number(result.headers.get("content-length")));
    expect(line.caller).toBe(alice.id);
    expect(line.client).toBe("198.51.100.20");
    expect(line.msg).toBe(`POST /api/v1/upload 200 ${line.duration_ms} ms`);
  });

  test("the route pattern, not the path; a temporary token, a guest, a stranger", async () => {
    const issued = expectStatus(
      await ctx.json("/api/v1/images/tokens", {
        method: "POST",
        headers: { ...ctx.bearer(alice.token), "content-type": "application/json" },
        body: JSON.stringify({ num: 1, seconds: 600 }),
      }),
      200,
    );
    const temporary = issued.data.tokens[0].token as string;
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
    try {
      const { result, records } = await logsOf(async () => ({
        temporary: await ctx.upload(temporary, { bytes: png, filename: "t.png", contentType: "image/png" }),
        guest: await ctx.upload(null, { bytes: png, filename: "g.png", contentType: "image/png" }),
        missing: await ctx.request("/api/v1/images/no-such-key", { method: "DELETE", headers: ctx.bearer(alice.token) }),
        stranger: await ctx.request("/nowhere/at/all"),
      }));
      expect(accessLine(records, result.temporary.headers.get("x-request-id")!)).toMatchObject({ caller: "temporary", user_id: alice.id, status: 200 });
      expect(accessLine(records, result.guest.headers.get("x-request-id")!)).toMatchObject({ caller: "guest", status: 200 });
      expect(accessLine(records, result.missing.headers.get("x-request-id")!)).toMatchObject({
        route: "/api/v1/images/:key",
        method: "DELETE",
        status: 404,
        caller: alice.id,
      });
      expect(accessLine(records, result.stranger.headers.get("x-request-id")!)).toMatchObject({ route: "unmatched", status: 404, caller: null });
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: false });
    }
  });

  test("a client's X-Request-Id is kept (cleaned) and carried by the answer", async () => {
    const { result, records } = await logsOf(() => ctx.request("/health", { headers: { "x-request-id": "edge-42/abc\u0007" } }));
    expect(result.headers.get("x-request-id")).toBe("edge-42abc");
    expect(accessLine(records, "edge-42abc")).toMatchObject({ route: "/health", level: "debug" }); // probes log at debug
  });

  test("a service's log lines carry the request_id of their request; a 500 names it in the answer", async () => {
    const broken = await ctx.admin("POST", "/api/admin/strategies", { name: "Gone disk", driver: "local", config: { root: "/proc/no-such-dir/uploads" } });
    const group = await ctx.admin("POST", "/api/admin/groups", { name: "on gone disk", strategy_ids: [broken.id] });
    const bob = await ctx.createUser({ group_id: group.id });
    const { result, records } = await logsOf(() => ctx.upload(bob.token, { bytes: png, filename: "b.png", contentType: "image/png" }));
    expectStatus(result, 500);
    const requestId = result.body.request_id as string;
    expect(result.headers.get("x-request-id")).toBe(requestId);
    const failure = records.find((r) => r.msg?.startsWith("upload: the storage failed"));
    expect(failure).toMatchObject({ level: "error", request_id: requestId, strategy_id: broken.id });
    expect(failure!.err.message).toContain("local write failed");
    expect(accessLine(records, requestId)).toMatchObject({ level: "error", status: 500, caller: bob.id });
    await ctx.admin("PATCH", `/api/admin/strategies/${broken.id}`, { enabled: false }); // GET /health/ready below expects only writable ones
  });

  test("a database error's parameters (here a strategy's S3 secret key) never reach the log", async () => {
    const secret = "never-log-this-S3-secret-0123456789";
    await ctx.db.execute(
      "create or replace function refuse_strategy() returns trigger language plpgsql as $$ begin raise exception 'disk full'; end $$" as never,
    );
    await ctx.db.execute("create trigger refuse_strategy before insert on strategies for each row execute function refuse_strategy()" as never);
    try {
      const { result, logged } = await quietly(() =>
        ctx.json("/api/admin/strategies", {
          method: "POST",
          headers: { ...ctx.bearer(ctx.deps.config.adminToken), "content-type": "application/json" },
          body: JSON.stringify({
            name: "Bucket",
            driver: "s3",
            config: {
              bucket: "b",
              endpoint: "http://127.0.0.1:9",
              region: "us-east-1",
              access_key_id: "AKIDEXAMPLE",
              secret_access_key: secret,
              url: "https://cdn.example.com",
            },
          }),
        }),
      );
      expectStatus(result, 500);
      const text = JSON.stringify(logged);
      expect(text).toContain('Failed query: insert into \\"strategies\\"'); // the statement, with placeholders
      expect(text).toContain("disk full"); // and the cause
      expect(text).not.toContain(secret);
      expect(text).not.toContain("AKIDEXAMPLE");
      expect(text).not.toContain("params:");
    } finally {
      await ctx.db.execute("drop trigger refuse_strategy on strategies" as never);
    }
  });

  test("background work logs under its own name", async () => {
    const expiring = expectStatus(
      await ctx.upload(
        alice.token,
        { bytes: png, filename: "soon.png", contentType: "image/png" },
        { expired_at: new Date(ctx.now().getTime() + 60_000).toISOString() },
      ),
      200,
    );
    ctx.advance(120_000);
    const swept = (r: Record<string, any>) => r.job === "sweeper" && r.msg === "removed 1 expired images";
    const { records } = await logsOf(async () => {
      const sweeper = startSweeper(ctx.deps, 20);
      const seen = new Promise<void>((resolve) => testLog.listeners.add((r) => swept(r) && resolve()));
      await Promise.race([seen, Bun.sleep(10_000)]);
      await sweeper.stop();
    });
    const line = records.find(swept);
    expect(line).toMatchObject({ level: "info", removed: 1 });
    expect(line!.request_id).toBeUndefined();
    expect((await ctx.json(`/api/v1/images`, { headers: ctx.bearer(alice.token) })).body.data.data.map((i: { key: string }) => i.key)).not.toContain(
      expiring.data.key,
    );
  });
});

describe("formats and the secret scan", () => {
  test("LOG_FORMAT=pretty writes a readable line; json one object per line", () => {
    const out: string[] = [];
    const destination = { write: (s: string) => void out.push(s) };
    createLogger({ format: "pretty", level: "info", destination }).info({ request_id: "r1", status: 200 }, "GET /health 200 1.2 ms");
    expect(out.join("")).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/health 200 1\.2 ms request_id=r1\n$/);
    out.length = 0;
    const json = createLogger({ format: "json", level: "warn", destination });
    json.info("dropped below the level");
    json.warn({ a: 1 }, "kept");
    expect(out).toHaveLength(1);
    expect(JSON.parse(out[0]!)).toMatchObject({ level: "warn", a: 1, msg: "kept" });
  });

  test("errors lose what a Drizzle query error carries of its parameters; causes are kept", () => {
    const cause = Object.assign(new Error("duplicate key value"), { code: "23505" });
    const e = new DrizzleQueryError("insert into users (name, password_hash) values ($1, $2)", ["ann", "$argon2id$v=19$secret"], cause);
    const out = serializeError(e);
    expect(JSON.stringify(out)).not.toContain("argon2");
    expect(out.message).toBe("Failed query: insert into users (name, password_hash) values ($1, $2)");
    expect(out.cause).toMatchObject({ message: "duplicate key value", code: "23505" });
  });

  test("the scan finds tokens, hashes, bearer headers and the tests' secrets, and passes ordinary lines", () => {
    const token = "Q".repeat(20) + "w3_-".repeat(5);
    const clean = JSON.stringify({
      request_id: crypto.randomUUID(),
      route: "/api/v1/images/:key",
      path: "2026/11/22/AbCdEfGhIjKlMnOpQrSt.png",
      sha1: "a".repeat(40),
    });
    expect(findSecrets(clean, ["correct horse"])).toEqual([]);
    const found = (line: string) => findSecrets(line, ["correct horse"]).map((f) => f.what);
    expect(found(`{"t":"${token}"}`)).toEqual(["a token"]);
    expect(found(`{"t":"12|${token}"}`)).toContain("a token as id|raw");
    expect(found(`{"h":"${"ab".repeat(32)}"}`)).toEqual(["a SHA-256 of a secret"]);
    expect(found(`{"h":"$argon2id$v=19$m=65536"}`)).toEqual(["a password hash"]);
    expect(found(`{"authorization":"Bearer abc.def.ghi"}`)).toEqual(["an Authorization header"]);
    expect(found(`{"body":"password=correct horse"}`)).toEqual(['the test secret "correct horse"']);
  });
});

describe("GET /metrics", () => {
  const scrape = (headers: Record<string, string> = {}, address = "127.0.0.1") =>
    ctx.app.fetch(new Request(`${BASE_URL}/metrics`, { headers }), { requestIP: () => ({ address }) });

  async function samples() {
    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const families = parsePrometheusText(await res.text());
    return {
      families,
      value: (name: string, labels: Record<string, string> = {}) => sampleValue(families, name, labels),
    };
  }

  test("Prometheus text format; counters move after an upload and a refusal", async () => {
    const before = await samples();
    const uploaded = await ctx.upload(alice.token, { bytes: png, filename: "m.png", contentType: "image/png" });
    expectStatus(uploaded, 200);
    expectStatus(await ctx.upload(alice.token, { bytes: png, filename: "m.bmp", contentType: "image/bmp" }), 400);
    expectStatus(await ctx.upload("1|not-a-real-token-at-all", { bytes: png, filename: "m.png", contentType: "image/png" }), 401);
    const after = await samples();
    const delta = (name: string, labels: Record<string, string> = {}) => (after.value(name, labels) ?? 0) - (before.value(name, labels) ?? 0);

    expect(delta("imagehost_uploads_accepted_total", { caller: "permanent" })).toBe(1);
    expect(delta("imagehost_uploads_refused_total", { reason: "format" })).toBe(1);
    expect(delta("imagehost_uploads_refused_total", { reason: "unauthenticated" })).toBe(1);
    expect(delta("imagehost_stored_bytes_total")).toBeGreaterThanOrEqual(png.byteLength);
    expect(delta("imagehost_http_requests_total", { route: "/api/v1/upload", method: "POST", status: "200" })).toBe(1);
    expect(delta("imagehost_http_requests_total", { route: "/api/v1/upload", method: "POST", status: "400" })).toBe(1);
    expect(delta("imagehost_http_request_duration_seconds_count", { route: "/api/v1/upload", method: "POST" })).toBe(3);
    expect(delta("imagehost_http_request_duration_seconds_bucket", { route: "/api/v1/upload", method: "POST", le: "+Inf" })).toBe(3);
    expect(delta("imagehost_image_decode_duration_seconds_count", { step: "inspect" })).toBe(1); // the .bmp and the stranger were refused before any decode
    expect(delta("imagehost_image_decode_duration_seconds_count", { step: "thumbnail" })).toBe(1);

    const types = Object.fromEntries([...after.families.values()].map((f) => [f.name, f.type]));
    expect(types).toMatchObject({
      imagehost_http_requests_total: "counter",
      imagehost_http_request_duration_seconds: "histogram",
      imagehost_uploads_accepted_total: "counter",
      imagehost_uploads_refused_total: "counter",
      imagehost_stored_bytes_total: "counter",
      imagehost_image_decode_duration_seconds: "histogram",
      imagehost_sweeper_removed_images_total: "counter",
      imagehost_reconciler_orphans_found_total: "counter",
      imagehost_db_pool_connections: "gauge",
      process_resident_memory_bytes: "gauge",
      process_cpu_seconds_total: "counter",
    });
    expect(after.value("imagehost_db_pool_connections", { state: "max" })).toBe(20); // the test contexts' pool size
    expect(after.value("imagehost_db_pool_connections", { state: "open" })).toBeGreaterThanOrEqual(1);
    expect(after.value("imagehost_db_pool_connections", { state: "in_use" })).toBeGreaterThanOrEqual(0);
  });

  test("the sweeper's removals and the reconciler's orphans are counted", async () => {
    const before = await samples();
    await ctx.upload(
      alice.token,
      { bytes: png, filename: "gone.png", contentType: "image/png" },
      { expired_at: new Date(ctx.now().getTime() + 60_000).toISOString() },
    );
    ctx.advance(120_000);
    const { sweepExpired } = await import("../../src/services/sweeper.ts");
    expect(await sweepExpired(ctx.deps)).toBe(1);
    const { mkdirSync, utimesSync, writeFileSync } = await import("node:fs");
    // an object named like the service's own, with no record, older than the grace period
    const orphan = `${ctx.dataDir}/uploads/2020/01/01/${randomToken(15)}.png`;
    mkdirSync(dirname(orphan), { recursive: true });
    writeFileSync(orphan, png);
    utimesSync(orphan, new Date(2020, 0, 1), new Date(2020, 0, 1));
    await ctx.admin("POST", "/api/admin/storage/reconcile", { dry_run: true });
    const after = await samples();
    expect((after.value("imagehost_sweeper_removed_images_total") ?? 0) - (before.value("imagehost_sweeper_removed_images_total") ?? 0)).toBe(1);
    expect((after.value("imagehost_reconciler_orphans_found_total") ?? 0) - (before.value("imagehost_reconciler_orphans_found_total") ?? 0)).toBe(1);
  });

  test("labels stay bounded: unknown methods are `other`, unknown paths `unmatched`", async () => {
    for (const method of ["BREW", "PROPFIND"]) await ctx.request(`/no/such/${crypto.randomUUID()}`, { method });
    const text = await (await scrape()).text();
    const series = [...parsePrometheusText(text).get("imagehost_http_requests_total")!.samples];
    expect(series.some((s) => s.labels.method === "other" && s.labels.route === "unmatched")).toBe(true);
    expect(series.every((s) => ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"].includes(s.labels.method!))).toBe(true);
    expect(series.every((s) => !s.labels.route!.includes("no/such"))).toBe(true);
  });

  test("open to loopback clients only, unless relayed by a proxy; with METRICS_TOKEN, to that bearer alone", async () => {
    expect((await scrape({}, "203.0.113.9")).status).toBe(403);
    expect((await scrape({}, "::1")).status).toBe(200);
    const relayed = await scrape({ "x-forwarded-for": "203.0.113.9" });
    expect(relayed.status).toBe(403);
    expect((await relayed.json()).message).toBe("Metrics answer clients on this machine only; set METRICS_TOKEN to scrape them from elsewhere.");

    ctx.deps.config.metricsToken = "metrics-token-0123456789";
    try {
      const none = await scrape();
      expect(none.status).toBe(401);
      expect(none.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
      expect(await none.json()).toEqual({ status: false, message: "Metrics require 'Authorization: Bearer <METRICS_TOKEN>'.", data: null });
      expect((await scrape({ authorization: "Bearer metrics-token-wrong" })).status).toBe(401);
      expect((await scrape({ authorization: "Bearer metrics-token-0123456789" }, "203.0.113.9")).status).toBe(200);
    } finally {
      ctx.deps.config.metricsToken = undefined;
    }
  });
});

describe("GET /health/ready", () => {
  test("200 when every enabled strategy's storage takes a probe object (and it is removed)", async () => {
    const body = expectStatus(await ctx.json("/health/ready"), 200);
    expect(body.data.database).toBe("up");
    expect(body.data.storage).toContainEqual({ id: ctx.localStrategyId, name: "Local", driver: "local", writable: true });
    const { readdirSync, existsSync } = await import("node:fs");
    const probes = `${ctx.dataDir}/uploads/.probe`;
    expect(existsSync(probes) ? readdirSync(probes) : []).toEqual([]);
  });

  test("503 naming the strategy whose storage is not writable; fine again once it is disabled", async () => {
    const broken = await ctx.admin("POST", "/api/admin/strategies", { name: "Read-only disk", driver: "local", config: { root: "/proc/ready-probe/uploads" } });
    const { result, logged } = await quietly(() => ctx.json("/health/ready"));
    expectStatus(result, 503);
    expect(result.body.message).toContain(`storage of strategy #${broken.id} "Read-only disk" (local) is not writable: path not found`); // mkdir under /proc: ENOENT
    expect(result.body.message).not.toContain("/proc"); // the details are in the log
    expect(JSON.stringify(logged)).toContain("/proc/ready-probe");
    await ctx.admin("PATCH", `/api/admin/strategies/${broken.id}`, { enabled: false });
    expectStatus(await ctx.json("/health/ready"), 200);
  });

  test("a probe object left behind (its removal failed) is removed by the reconciler once past the grace period", async () => {
    const { existsSync, mkdirSync, utimesSync, writeFileSync } = await import("node:fs");
    const dir = `${ctx.dataDir}/uploads/.probe`;
    mkdirSync(dir, { recursive: true });
    const stale = `${dir}/ready-${crypto.randomUUID()}.txt`;
    const fresh = `${dir}/ready-${crypto.randomUUID()}.txt`;
    const foreign = `${dir}/notes.txt`;
    for (const f of [stale, fresh, foreign]) writeFileSync(f, "readiness probe\n");
    for (const f of [stale, foreign]) utimesSync(f, new Date(2020, 0, 1), new Date(2020, 0, 1));
    const report = await ctx.admin("POST", "/api/admin/storage/reconcile", { dry_run: false });
    const local = report.locations.find((l: { strategies: { id: number }[] }) => l.strategies.some((s) => s.id === ctx.localStrategyId));
    expect(local).toMatchObject({ parts_found: 1, parts_removed: 1 });
    expect([existsSync(stale), existsSync(fresh), existsSync(foreign)]).toEqual([false, true, true]);
  });
});
