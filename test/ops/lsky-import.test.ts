import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { startEmbeddedPostgres } from "../../src/db/embedded/index.ts";
import { buildLskySite, clientToken, type LskyDialect, type LskySite } from "../support/lsky-fixture.ts";
import { makeImage, multipart } from "../support/images.ts";
import { freePort, REPO_ROOT, startServer, stopServer } from "../support/processes.ts";

/**
 * Moving in from Lsky Pro, as docs/moving-from-lsky.md tells it: a Lsky Pro 2.x database built from its own
 * migrations and filled as Lsky fills it (test/support/lsky-fixture.ts), in SQLite and in MariaDB; `bun run cli
 * import lsky` beside a running server. Then every user, group, strategy, album, image and token is checked against
 * what went in; passwords sign in on the user center's login page; the Sanctum tokens clients hold (`ID|PLAINTEXT`)
 * upload, through curl-like calls and through the real picgo-plugin-lankong; old addresses serve the same bytes (or
 * answer 301 from a strategy's former prefix); delete keys delete; a dry run writes nothing; an import killed
 * half-way continues; a second run changes nothing.
 */
setDefaultTimeout(240_000);

const ADMIN_TOKEN = "lsky-import-test-admin-token-0123456789";
const TAKEN_EMAIL = "dave@example.com";
const work = mkdtempSync(join(tmpdir(), "imghost-lsky-"));
chmodSync(work, 0o755);

/** MariaDB on 127.0.0.1:3306 as root without a password, as on these machines and CI's; null when none answers. */
const MARIADB = "mysql://root@127.0.0.1:3306";
const mariadbAnswers = await (async () => {
  try {
    const probe = new SQL(`${MARIADB}/mysql`, { max: 1, connectionTimeout: 3 });
    await probe`select 1`;
    await probe.close();
    return true;
  } catch (e) {
    console.warn(`MariaDB does not answer on 127.0.0.1:3306 (${(e as Error).message}): the MariaDB case is skipped; the SQLite case runs.`);
    return false;
  }
})();

/** Our PostgreSQL: TEST_DATABASE_URL's server, or an embedded one listening on TCP. */
let serverUrl: string;
let stopOwnPostgres = async () => {};
let admin: postgres.Sql;

beforeAll(async () => {
  if (process.env.TEST_DATABASE_URL) serverUrl = process.env.TEST_DATABASE_URL;
  else {
    const port = await freePort();
    const own = await startEmbeddedPostgres(join(work, "own-postgres"), { durable: false, settings: { listen_addresses: "127.0.0.1", port: String(port) } });
    serverUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
    stopOwnPostgres = () => own.stop();
  }
  admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
});

afterAll(async () => {
  await admin?.end({ timeout: 5 });
  await stopOwnPostgres();
  rmSync(work, { recursive: true, force: true });
});

/** The CLI as a user runs it; its report (with --json) parsed. */
async function cli(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn(["bun", "run", "src/cli/index.ts", ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ADMIN_TOKEN: undefined, ...env },
    stdout: "pipe",
    stderr: "pipe",
    timeout: 120_000,
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

/** picgo-plugin-lankong from the npm registry (npm pack, pinned, into a temp dir), or null where npm cannot reach it. */
let lankong: ((ctx: any) => { register: () => void }) | null | undefined;
async function loadLankong() {
  if (lankong !== undefined) return lankong;
  const dir = mkdtempSync(join(work, "lankong-"));
  const packed = Bun.spawnSync(["npm", "pack", "picgo-plugin-lankong@1.1.3", "--silent"], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? dir },
    timeout: 60_000,
  });
  const tarball = packed.stdout.toString().trim().split("\n").pop();
  if (packed.exitCode !== 0 || !tarball || !existsSync(join(dir, tarball))) {
    console.warn(`npm pack picgo-plugin-lankong failed (${packed.stderr.toString().trim().slice(0, 200)}): its request is reproduced instead`);
    return (lankong = null);
  }
  expect(Bun.spawnSync(["tar", "xzf", tarball], { cwd: dir }).exitCode).toBe(0);
  lankong = createRequire(import.meta.url)(join(dir, "package", "dist", "index.js"));
  return lankong;
}

/** PicGo's ctx.Request.request as the plugin uses it (see test/web/integrations.test.ts). */
async function picgoRequest(options: { method: string; url: string; headers: Record<string, string | undefined>; formData?: Record<string, any> }) {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.headers)) if (v !== undefined && !["content-type", "connection"].includes(k.toLowerCase())) headers[k] = v;
  let body: FormData | undefined;
  if (options.formData) {
    body = new FormData();
    for (const [k, v] of Object.entries(options.formData)) {
      if (v && typeof v === "object" && "value" in v && "options" in v) body.append(k, new Blob([v.value]), v.options.filename);
      else body.append(k, String(v));
    }
  }
  const res = await fetch(options.url, { method: options.method, headers, body });
  const text = await res.text();
  if (res.status < 200 || res.status >= 300) throw Object.assign(new Error(`${res.status} - ${text}`), { statusCode: res.status });
  return text;
}

const TABLES = ["groups", "strategies", "group_strategies", "users", "albums", "images", "tokens", "imported_records"];

async function snapshot(db: postgres.Sql) {
  const out: Record<string, unknown[]> = {};
  for (const t of TABLES) out[t] = await db.unsafe(`select * from ${t} order by 1, 2`);
  return out;
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

/** Asia/Shanghai (UTC+8, no daylight saving) wall-clock text as an instant. */
const shanghai = (text: string) => new Date(`${text.replace(" ", "T")}+08:00`);

const cases: { name: string; dialect: LskyDialect; run: boolean }[] = [
  { name: "SQLite", dialect: "sqlite", run: true },
  { name: "MariaDB", dialect: "mysql", run: mariadbAnswers },
];

for (const c of cases) {
  describe.skipIf(!c.run)(`import lsky from ${c.name}`, () => {
    const dir = join(work, c.dialect);
    const dataDir = join(dir, "data");
    let base: string;
    let ourUrl: string;
    let ours: postgres.Sql;
    let server: Awaited<ReturnType<typeof startServer>>;
    let sourceUrl: string;
    let dropSource = async () => {};
    let site: LskySite;
    let env: Record<string, string>;
    let args: string[];
    /** Our id of each Lsky record, read from imported_records after the import. */
    const mapped = (kind: string, id: number) =>
      ours`select target_id::int as id from imported_records where source = 'lsky' and kind = ${kind} and source_id = ${id}`.then(
        (r) => r[0]?.id as number | undefined,
      );
    const api = async (method: string, path: string, token: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, json: (await res.json()) as any };
    };
    const upload = async (token: string, name = "new.png") => {
      const m = multipart([{ name: "file", value: await makeImage("png", 33, 22, "#778899"), filename: name }]);
      const res = await fetch(`${base}/api/v1/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": m.contentType },
        body: m.body,
      });
      return { status: res.status, json: (await res.json()) as any };
    };

    beforeAll(async () => {
      const dbName = `imghost_lsky_${c.dialect}_${crypto.randomUUID().replace(/-/g, "").slice(0, 10)}`;
      await admin.unsafe(`create database ${dbName}`);
      ourUrl = Object.assign(new URL(serverUrl), { pathname: `/${dbName}` }).toString();
      ours = postgres(ourUrl, { max: 2, onnotice: () => {} });
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      env = { DATABASE_URL: ourUrl, DATA_DIR: dataDir, BASE_URL: base };
      server = await startServer({ env: { ...env, PORT: String(port), HOST: "127.0.0.1", ADMIN_TOKEN, UPLOAD_BODIES_PER_ADDRESS: "100" } });
      // an account of this site already holds Lsky user 4's email, and our token 1
      const dave = await api("POST", "/api/admin/users", ADMIN_TOKEN, { username: "dave", email: TAKEN_EMAIL });
      expect(dave.status).toBe(200);
      const daveToken = await api("POST", `/api/admin/users/${dave.json.data.id}/tokens`, ADMIN_TOKEN);
      expect(daveToken.json.data.token.startsWith("1|")).toBe(true);

      let sql: SQL;
      if (c.dialect === "sqlite") {
        const file = join(dir, "lsky", "database", "database.sqlite");
        mkdirSync(join(dir, "lsky", "database"), { recursive: true });
        sql = new SQL({ adapter: "sqlite", filename: file, create: true });
        sourceUrl = `sqlite://${file}`;
      } else {
        const name = `lsky_import_${crypto.randomUUID().replace(/-/g, "").slice(0, 10)}`;
        const root = new SQL(`${MARIADB}/mysql`, { max: 1 });
        await root.unsafe(`create database ${name} character set utf8mb4 collate utf8mb4_unicode_ci`);
        await root.close();
        sql = new SQL(`${MARIADB}/${name}`, { max: 1 });
        sourceUrl = `${MARIADB}/${name}`;
        dropSource = async () => {
          const r = new SQL(`${MARIADB}/mysql`, { max: 1 });
          await r.unsafe(`drop database if exists ${name}`);
          await r.close();
        };
      }
      site = await buildLskySite(sql, c.dialect, join(dir, "lsky"), base, TAKEN_EMAIL);
      await sql.close();
      args = ["import", "lsky", "--database", sourceUrl, "--uploads", site.roots.uploads, "--strategy-root", `2=${site.roots.other}`];
    });

    afterAll(async () => {
      if (server) await stopServer(server);
      await ours?.end({ timeout: 5 });
      await dropSource().catch(() => {});
      if (ourUrl) await admin.unsafe(`drop database if exists ${new URL(ourUrl).pathname.slice(1)} with (force)`).catch(() => {});
    });

    const namedImages = () => site.images;
    const expectImported = () => site.images.filter((i) => i.expect === "import" || i.expect === "moved");
    const expectRefused = () => site.images.filter((i) => typeof i.expect === "object");

    test("--dry-run reports what it would do and writes nothing", async () => {
      const before = await snapshot(ours);
      const filesBefore = filesUnder(join(dataDir, "uploads"));
      const run = await cli([...args, "--dry-run", "--json"], env);
      expect(run.code, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout);
      expect(report.dry_run).toBe(true);
      expect(report.counts).toEqual({
        strategy: { imported: 2, skipped: 0, refused: 1 },
        group: { imported: 2, skipped: 0, refused: 0 },
        user: { imported: 4, skipped: 0, refused: 1 },
        album: { imported: 2, skipped: 0, refused: 1 },
        image: { imported: expectImported().length, skipped: 0, refused: expectRefused().length },
        token: { imported: 3, skipped: 0, refused: 2 },
      });
      const refused = report.refused.map((r: any) => `${r.kind} ${r.lsky_id}`).sort();
      expect(refused).toEqual(["strategy 3", "user 4", "album 3", ...expectRefused().map((i) => `image ${i.id}`), "token 4", "token 5"].sort());
      // the two images whose Lsky path cannot be theirs here: Lsky's shared file of two records, a name this server does not serve
      expect(report.moved.map((m: any) => [m.lsky_id, m.reason])).toEqual([
        [3, "another image here holds its path or name (Lsky Pro stores identical files once)"],
        [12, "its path holds characters this server does not serve"],
      ]);
      // what is not carried over is said
      expect(report.notes).toContain("User 5 (erin@example.com) had no group in Lsky Pro: placed in the default group.");
      expect(report.notes).toContain('Group 2 "VIP": not carried over: formats bmp (not served here); watermark.');
      expect(report.notes).toContain('Group 1 "系统默认组&游客组": not carried over: formats bmp, ico, psd, svg (not served here).');
      expect(report.notes).toContain('Strategy 1 "默认本地策略": its images join strategy 1 here, the same storage at the same address.');
      expect(report.notes).toContain("Album descriptions (intro) are not carried over: albums here have a name only.");
      expect(await snapshot(ours)).toEqual(before);
      expect(filesUnder(join(dataDir, "uploads"))).toEqual(filesBefore);
    });

    test("an import killed half-way leaves whole records, and the next run continues", async () => {
      const proc = Bun.spawn(["bun", "run", "src/cli/index.ts", ...args], {
        cwd: REPO_ROOT,
        env: { ...process.env, ADMIN_TOKEN: undefined, ...env },
        stdout: "ignore",
        stderr: "pipe",
      });
      const total = site.images.length;
      let seen = "";
      const reader = proc.stderr.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += new TextDecoder().decode(value);
        const m = [...seen.matchAll(/^images (\d+)\/(\d+)$/gm)].pop();
        if (m && Number(m[1]) >= 1) {
          proc.kill("SIGKILL");
          break;
        }
      }
      await proc.exited;
      expect(proc.signalCode, seen).toBe("SIGKILL");
      expect(seen).toMatch(/^strategies 3\/3$/m); // plain progress lines in a pipe
      const [{ n }] = await ours`select count(*)::int as n from imported_records where kind = 'image'`;
      expect(n).toBeGreaterThan(0);
      expect(n).toBeLessThan(expectImported().length);
      // every image recorded has its mapping (one transaction): none without
      const [{ orphans }] = await ours`select count(*)::int as orphans from images i where not exists
        (select 1 from imported_records r where r.kind = 'image' and r.target_id = i.id)`;
      expect(orphans).toBe(0);
      expect(total).toBe(12 + site.bulk);
    });

    test("the import: every kind counted, every refusal listed with its reason", async () => {
      const [{ before }] = await ours`select count(*)::int as before from imported_records where kind = 'image'`;
      const run = await cli([...args, "--json"], env);
      expect(run.code, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout);
      expect(report.dry_run).toBe(false);
      expect(report.counts).toEqual({
        strategy: { imported: 0, skipped: 2, refused: 1 },
        group: { imported: 0, skipped: 2, refused: 0 },
        user: { imported: 0, skipped: 4, refused: 1 },
        album: { imported: 0, skipped: 2, refused: 1 },
        image: { imported: expectImported().length - before, skipped: before, refused: expectRefused().length },
        token: { imported: 3, skipped: 0, refused: 2 },
      });
      const refused = report.refused.map((r: any) => `${r.kind} ${r.lsky_id}`).sort();
      expect(refused).toEqual(["strategy 3", "user 4", "album 3", ...expectRefused().map((i) => `image ${i.id}`), "token 4", "token 5"].sort());
      const reason = (kind: string, id: number) => report.refused.find((r: any) => r.kind === kind && r.lsky_id === id).reason;
      expect(reason("strategy", 3)).toMatch(/driver Aliyun OSS has no driver here/);
      expect(reason("user", 4)).toBe("an account with this email exists here already");
      expect(reason("album", 3)).toMatch(/its owner \(user 4\) was not imported: an account with this email exists here already/);
      for (const image of expectRefused()) expect(reason("image", image.id)).toMatch((image.expect as { refused: RegExp }).refused);
      for (const t of site.tokens) if (typeof t.expect === "object") expect(reason("token", t.id)).toMatch(t.expect.refused);
      // the images whose Lsky path cannot be theirs here (those this run imported), with their old and new addresses
      const moved = site.images.filter((i) => i.expect === "moved").map((i) => i.id);
      for (const m of report.moved) {
        expect(moved).toContain(m.lsky_id);
        const image = site.images.find((i) => i.id === m.lsky_id)!;
        expect(m.key).toBe(image.key);
        expect(m.old_url).toBe(`${base}/i/${image.path}/${image.name}`);
        expect(m.new_url).toMatch(new RegExp(`^${base}/i/\\d{4}/\\d{2}/\\d{2}/[\\w-]{20}\\.png$`));
      }
    });

    test("strategies and groups as Lsky had them", async () => {
      // Lsky's default local strategy, served at BASE_URL/i, is our seeded local strategy: its ids stay 1
      expect(await mapped("strategy", 1)).toBe(1);
      expect(await mapped("strategy", 2)).toBe(2); // a free id is kept: PicGo's strategy_id still names it
      const [two] = await ours`select name, driver, config from strategies where id = 2`;
      expect(two).toEqual({ name: "Second disk", driver: "local", config: { legacy_url: "https://old.example.com/uploads" } });
      expect(await mapped("strategy", 3)).toBeUndefined();

      const g1 = await mapped("group", 1);
      const g2 = await mapped("group", 2);
      const groups = await ours`select * from groups where id in (${g1!}, ${g2!}) order by id`;
      expect(groups[0]).toMatchObject({
        name: "系统默认组&游客组",
        is_default: true,
        is_guest: true,
        max_file_size_kb: 5120,
        allowed_extensions: ["jpeg", "jpg", "png", "gif", "tif", "webp"],
        uploads_per_minute: 20,
        uploads_per_hour: 100,
        uploads_per_day: 300,
        uploads_per_week: 600,
        uploads_per_month: 999,
        concurrent_uploads: 3,
        default_capacity_kb: "512000",
        convert_format: null,
      });
      expect(groups[1]).toMatchObject({
        name: "VIP",
        is_default: false,
        is_guest: false,
        max_file_size_kb: 20480,
        allowed_extensions: ["png", "jpg", "jpeg", "gif", "webp"],
        uploads_per_minute: null,
        uploads_per_hour: 600,
        concurrent_uploads: 5,
        convert_format: "webp",
        convert_quality: 90,
      });
      // the imported default and guest groups took those places
      expect([...(await ours`select id from groups where is_default`)]).toEqual([{ id: g1 }]);
      expect([...(await ours`select id from groups where is_guest`)]).toEqual([{ id: g1 }]);
      expect([
        ...(await ours`select group_id, strategy_id, position from group_strategies where group_id in (${g1!}, ${g2!}) order by group_id, position`),
      ]).toEqual([
        { group_id: g1, strategy_id: 1, position: 0 },
        { group_id: g2, strategy_id: 2, position: 0 },
        { group_id: g2, strategy_id: 1, position: 1 },
      ]);
    });

    test("users: group, capacity, status, email, name, address, password hash, role, registration time", async () => {
      const usernames: Record<number, string> = { 1: "alice", 2: "bob", 3: "carol", 5: "erin" };
      for (const u of site.users) {
        const id = await mapped("user", u.id);
        if (u.id === 4) {
          expect(id).toBeUndefined();
          continue;
        }
        const [row] = await ours`select * from users where id = ${id!}`;
        expect(row).toMatchObject({
          username: usernames[u.id],
          name: u.name,
          email: u.email,
          group_id: u.groupId === null ? await mapped("group", 1) : await mapped("group", u.groupId),
          enabled: u.status === 1,
          capacity_kb: String(Math.floor(Number(u.capacity))),
          registered_ip: u.registeredIp,
          password_hash: u.hash,
          role: u.isAdminer ? "admin" : "user",
        });
        expect(row!.password_hash.startsWith("$2y$")).toBe(true);
        expect(row!.created_at.toISOString()).toBe(shanghai(u.createdAt).toISOString());
      }
    });

    test("passwords sign in on the user center's login page", async () => {
      const signIn = (login: string, password: string) =>
        fetch(`${base}/user/login`, {
          method: "POST",
          redirect: "manual",
          headers: { origin: base, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ login, password }),
        });
      for (const u of site.users.filter((x) => x.id !== 4 && x.status === 1)) {
        const ok = await signIn(u.email, u.password);
        expect(ok.status, `${u.email}: ${await ok.clone().text()}`).toBe(303);
        expect(ok.headers.get("set-cookie")).toBeTruthy();
        expect((await signIn(u.email, `${u.password}x`)).status).toBe(401);
      }
      expect((await signIn("alice", "alice's old password")).status).toBe(303);
      // a frozen Lsky account is a disabled one here
      expect((await signIn("bob@example.com", "bob-password-1")).status).toBe(403);
    });

    test("albums keep their ids, owners and names", async () => {
      for (const a of site.albums) {
        const id = await mapped("album", a.id);
        if (a.userId === 4) {
          expect(id).toBeUndefined();
          continue;
        }
        expect(id).toBe(a.id);
        const [row] = await ours`select user_id, name, image_num, created_at from albums where id = ${id!}`;
        const count = site.images.filter((i) => i.albumId === a.id && i.expect !== undefined && typeof i.expect !== "object").length;
        expect(row).toEqual({ user_id: await mapped("user", a.userId), name: a.name, image_num: count, created_at: shanghai(a.createdAt) });
      }
      const [alice] = await ours`select album_num from users where id = ${(await mapped("user", 1))!}`;
      expect(alice!.album_num).toBe(1);
    });

    test("images: every field, the bytes at their old addresses, counters charged", async () => {
      const usage = new Map<number, { bytes: number; count: number }>();
      for (const image of namedImages()) {
        const id = await mapped("image", image.id);
        if (typeof image.expect === "object") {
          expect(id).toBeUndefined();
          expect((await ours`select 1 from images where key = ${image.key}`).length).toBe(0);
          continue;
        }
        const [row] = await ours`select * from images where id = ${id!}`;
        const owner = image.userId === null ? null : await mapped("user", image.userId);
        const pathname = `${image.path}/${image.name}`;
        expect(row).toMatchObject({
          key: image.key,
          user_id: owner,
          album_id: image.albumId,
          strategy_id: image.strategyId,
          thumbnail_path: null,
          origin_name: image.originName,
          size: String(image.bytes.length),
          mimetype: image.mimetype,
          extension: image.extension,
          width: image.width,
          height: image.height,
          md5: image.md5,
          sha1: image.sha1,
          is_public: image.permission === 1,
          expired_at: null,
          uploader_ip: image.uploadedIp,
        });
        expect(row!.created_at.toISOString()).toBe(shanghai(image.createdAt).toISOString());
        if (image.expect === "import") {
          expect([row!.path, row!.name]).toEqual([pathname, image.name]);
        } else {
          expect(row!.path).not.toBe(pathname);
        }
        // the address Lsky gave (strategy 1: BASE_URL/i + pathname) or the one it has now serves the same bytes
        const res = await fetch(`${base}/i/${row!.path}`);
        expect(res.status).toBe(200);
        expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(image.bytes))).toBe(true);
        expect(res.headers.get("content-type")).toBe(image.mimetype);
        if (owner != null) {
          const u = usage.get(owner) ?? { bytes: 0, count: 0 };
          usage.set(owner, { bytes: u.bytes + image.bytes.length, count: u.count + 1 });
        }
      }
      // Lsky strategy 2's former prefix answers 301 to the address here
      for (const image of namedImages().filter((i) => i.strategyId === 2 && i.expect === "import")) {
        const res = await fetch(`${base}/uploads/${image.path}/${image.name}`, { redirect: "manual" });
        expect(res.status).toBe(301);
        expect(res.headers.get("location")).toBe(`${base}/i/${image.path}/${image.name}`);
      }
      expect((await fetch(`${base}/uploads/2024/01/04/nothing.webp`, { redirect: "manual" })).status).toBe(404);
      // the dedup'd record, seen at Lsky's shared address, is the same bytes; the unicode name is served at its new one
      const [{ n }] = await ours`select count(*)::int as n from images`;
      expect(n).toBe(expectImported().length);
      for (const [owner, u] of usage) {
        const [row] = await ours`select used_bytes::int as bytes, image_num from users where id = ${owner}`;
        expect(row).toEqual({ bytes: u.bytes, image_num: u.count });
      }
      const [s1] = await ours`select used_bytes::int as b from strategies where id = 1`;
      expect(s1!.b).toBe(
        expectImported()
          .filter((i) => i.strategyId === 1)
          .reduce((a, i) => a + i.bytes.length, 0),
      );
      // nothing copied twice, Lsky's files untouched (copy mode): DATA_DIR/uploads holds each imported object once
      expect(filesUnder(join(dataDir, "uploads")).filter((p) => !p.startsWith("."))).toHaveLength(expectImported().length);
      expect(readFileSync(join(site.roots.uploads, site.images[0]!.path, site.images[0]!.name))).toEqual(Buffer.from(site.images[0]!.bytes));
    });

    test("tokens: ID|PLAINTEXT as clients hold it uploads; limits as in Lsky", async () => {
      const [alice, bob, carol, readOnly, daves] = site.tokens;
      // alice's Lsky id 1 is taken here (dave's token): found by its imported mapping; bob's and carol's ids are kept
      expect(await mapped("token", 1)).not.toBe(1);
      expect(await mapped("token", 2)).toBe(2);
      expect(await mapped("token", 3)).toBe(3);
      const [row] = await ours`select user_id, kind, label, expired_at, revoked_at, last_used_at from tokens where id = ${(await mapped("token", 1))!}`;
      expect(row).toEqual({
        user_id: await mapped("user", 1),
        kind: "permanent",
        label: "alice@example.com",
        expired_at: null,
        revoked_at: null,
        last_used_at: shanghai("2024-05-01 10:00:00"),
      });
      const a = await upload(clientToken(alice!));
      expect(a.status, JSON.stringify(a.json)).toBe(200);
      expect(a.json.data.links.url.startsWith(`${base}/i/`)).toBe(true);
      const c3 = await upload(clientToken(carol!));
      expect(c3.status, JSON.stringify(c3.json)).toBe(200);
      // the profile answers as the account
      const profile = await api("GET", "/api/v1/profile", clientToken(carol!));
      expect(profile.json.data.email).toBe("carol@example.com");
      // bob's account was frozen in Lsky: disabled here
      expect((await upload(clientToken(bob!))).status).toBe(403);
      // refused tokens do not authenticate; a Lsky id with another token's secret does not either
      expect((await upload(clientToken(readOnly!))).status).toBe(401);
      expect((await upload(clientToken(daves!))).status).toBe(401);
      expect((await upload(`2|${alice!.plain}`)).status).toBe(401);
    });

    test("a PicGo configured for the old host (the real picgo-plugin-lankong) uploads unchanged", async () => {
      const token = clientToken(site.tokens[0]!);
      const settings = {
        lskyProVersion: "V2",
        server: base,
        token: `Bearer ${token}`,
        strategyId: "1",
        albumId: "1",
        permission: 0,
        ignoreCertErr: false,
        syncDelete: false,
      };
      const plugin = await loadLankong();
      let url: string;
      let key: string;
      if (plugin) {
        const uploaders: Record<string, { handle: (ctx: any) => Promise<any> }> = {};
        const notifications: unknown[] = [];
        const picgo = {
          getConfig: (k: string) => (k === "picBed.lankong" ? settings : undefined),
          helper: { uploader: { register: (name: string, u: any) => (uploaders[name] = u) } },
          on: () => {},
          emit: (_event: string, payload: unknown) => notifications.push(payload),
          Request: { request: picgoRequest },
          request: picgoRequest,
          log: { info() {}, warn() {}, error() {}, success() {} },
          output: [{ fileName: "from-picgo.png", extname: ".png", buffer: Buffer.from(await makeImage("png", 31, 17)), width: 31, height: 17 }] as any[],
        };
        plugin(picgo).register();
        await uploaders.lankong!.handle(picgo);
        expect(notifications).toEqual([]);
        ({ imgUrl: url, id: key } = picgo.output[0]);
      } else {
        const m = multipart([
          { name: "file", value: await makeImage("png", 31, 17), filename: "from-picgo.png" },
          { name: "strategy_id", value: "1" },
          { name: "album_id", value: "1" },
          { name: "permission", value: "0" },
        ]);
        const res = await fetch(`${base}/api/v1/upload`, {
          method: "POST",
          headers: { authorization: settings.token, "content-type": m.contentType },
          body: m.body,
        });
        const body = (await res.json()) as any;
        expect(res.status).toBe(200);
        ({ url, key } = { url: body.data.links.url, key: body.data.key });
      }
      const [row] = await ours`select user_id, album_id, strategy_id, is_public from images where key = ${key}`;
      expect(row).toEqual({ user_id: await mapped("user", 1), album_id: 1, strategy_id: 1, is_public: false });
      expect((await fetch(url)).status).toBe(200);
    });

    test("delete keys clients stored delete", async () => {
      const image = site.images.find((i) => i.userId === 1 && i.expect === "import" && i.albumId === null)!;
      const address = `${base}/i/${image.path}/${image.name}`;
      expect((await fetch(address)).status).toBe(200);
      const res = await api("DELETE", `/api/v1/images/${image.key}`, clientToken(site.tokens[0]!));
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      expect((await fetch(address)).status).toBe(404);
      // another account's key is not theirs to delete
      const other = site.images.find((i) => i.userId === 3 && i.expect === "import")!;
      expect((await api("DELETE", `/api/v1/images/${other.key}`, clientToken(site.tokens[0]!))).status).toBe(404);
    });

    test("a second run changes nothing (and brings back nothing deleted since)", async () => {
      const before = await snapshot(ours);
      const filesBefore = filesUnder(join(dataDir, "uploads"));
      const run = await cli([...args, "--json"], env);
      expect(run.code, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout);
      for (const [kind, counts] of Object.entries(report.counts) as [string, { imported: number }][]) expect(counts.imported, kind).toBe(0);
      expect(report.counts.image).toEqual({ imported: 0, skipped: expectImported().length, refused: expectRefused().length });
      expect(await snapshot(ours)).toEqual(before);
      expect(filesUnder(join(dataDir, "uploads"))).toEqual(filesBefore);
    });
  });
}

test("--adopt keeps local files where they are; bad arguments are refused before anything is read", async () => {
  const dir = join(work, "adopt");
  const dbName = `imghost_lsky_adopt_${crypto.randomUUID().replace(/-/g, "").slice(0, 10)}`;
  await admin.unsafe(`create database ${dbName}`);
  const url = Object.assign(new URL(serverUrl), { pathname: `/${dbName}` }).toString();
  const db = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const file = join(dir, "lsky.sqlite");
    mkdirSync(dir, { recursive: true });
    const sql = new SQL({ adapter: "sqlite", filename: file, create: true });
    const site = await buildLskySite(sql, "sqlite", join(dir, "lsky"), "http://127.0.0.1:9", TAKEN_EMAIL);
    await sql.close();
    const env = { DATABASE_URL: url, DATA_DIR: join(dir, "data"), BASE_URL: "http://127.0.0.1:9" };
    const base = ["import", "lsky", "--database", `sqlite://${file}`, "--uploads", site.roots.uploads];

    const bad = await cli([...base, "--strategy-root", "two=/x"], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--strategy-root "two=/x": write it as <lsky strategy id>=<dir>');
    const notLsky = await cli(["import", "lsky", "--database", `sqlite://${join(dir, "nothing.sqlite")}`, "--uploads", "/tmp"], env);
    expect(notLsky.code).toBe(1);
    expect(notLsky.stderr).toContain("no SQLite file at");
    const missing = await cli(["import", "lsky", "--uploads", "/tmp"], env);
    expect(missing.stderr).toContain("needs --database <url>");

    const run = await cli([...base, "--strategy-root", `2=${site.roots.other}`, "--adopt", "--json"], env);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.adopt).toBe(true);
    const s1 = report.strategies.find((s: any) => s.lsky_id === 1);
    const [strategy] = await db`select config from strategies where id = ${s1.id}`;
    expect(strategy!.config).toEqual({ root: site.roots.uploads });
    // nothing was copied: only the two records whose Lsky path is another's here got a file of their own, beside Lsky's
    expect(filesUnder(join(dir, "data", "uploads"))).toEqual([]);
    const [{ n }] = await db`select count(*)::int as n from images where strategy_id = ${s1.id}`;
    // no account holds dave's email on this side: his image comes in too
    expect(n).toBe(site.images.filter((i) => i.strategyId === 1 && (typeof i.expect !== "object" || i.userId === 4)).length);
    const lskyFiles = filesUnder(site.roots.uploads);
    for (const m of report.moved) expect(lskyFiles).toContain(m.new_url.replace(/^.*\/i\//, ""));
  } finally {
    await db.end({ timeout: 5 });
    await admin.unsafe(`drop database if exists ${dbName} with (force)`);
  }
});
