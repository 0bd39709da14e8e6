/**
 * The size of each page's HTML, here and in another checkout, with the same seeded data: an administrator with four
 * images, two albums, two API tokens, an endpoint of their own and one of the site; another user; the pages asked
 * in English, signed in or not, in-process (the test harness: a fresh database per run).
 *
 *   bun scripts/page-sizes.ts                         this checkout's sizes
 *   bun scripts/page-sizes.ts --baseline DIR          DIR's and this checkout's, side by side, with the ratio
 *   bun scripts/page-sizes.ts --json [--root DIR]     one checkout's sizes as JSON (what --baseline runs in DIR)
 *   --time N                                          also renders each page N times (in-process) and gives the median ms
 *   --dump OUT                                        also writes each page's HTML to OUT/<page>.html (and OUT/before/)
 *
 * DIR is a checkout of another commit with its dependencies, e.g.
 *   git worktree add --detach /tmp/html-base REF && ln -s "$PWD/node_modules" /tmp/html-base/node_modules
 * The databases live on TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres), created and dropped.
 * Keys, dates and ids differ between the two runs in value, not in length.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const root = resolve(flag("--root") ?? resolve(import.meta.dir, ".."));
const times = Number(flag("--time") ?? 0);
const dump = flag("--dump") ? resolve(flag("--dump")!) : undefined;
process.env.TEST_DATABASE_URL ??= "postgres://postgres@127.0.0.1:5432/postgres";

const PASSWORD = "correct horse battery";

/** The pages, by name: path, and whether the administrator is signed in. */
function pagesOf(s: { imageKey: string; otherUserId: number; userWebhook: number; adminWebhook: number; passwordLink: string }) {
  return [
    ["dashboard", "/user/dashboard", true],
    ["upload", "/user/upload", true],
    ["images", "/user/images", true],
    ["images-empty", "/user/images?q=nothing-is-called-this", true],
    ["image", `/user/images/${s.imageKey}`, true],
    ["albums", "/user/albums", true],
    ["tokens", "/user/tokens", true],
    ["integrations", "/user/integrations", true],
    ["webhooks", "/user/webhooks", true],
    ["webhook", `/user/webhooks/${s.userWebhook}`, true],
    ["account", "/user/account", true],
    ["error-signed-in", "/user/images/no-such-image", true],
    ["admin", "/user/admin", true],
    ["admin-users", "/user/admin/users", true],
    ["admin-user", `/user/admin/users/${s.otherUserId}`, true],
    ["admin-groups", "/user/admin/groups", true],
    ["admin-group-new", "/user/admin/groups/new", true],
    ["admin-group", "/user/admin/groups/1", true],
    ["admin-strategies", "/user/admin/strategies", true],
    ["admin-strategy-new", "/user/admin/strategies/new", true],
    ["admin-strategy", "/user/admin/strategies/1", true],
    ["admin-settings", "/user/admin/settings", true],
    ["admin-images", "/user/admin/images", true],
    ["admin-maintenance", "/user/admin/maintenance", true],
    ["admin-webhooks", "/user/admin/webhooks", true],
    ["admin-webhook", `/user/admin/webhooks/${s.adminWebhook}`, true],
    ["admin-audit", "/user/admin/audit", true],
    ["sign-in", "/user/login", false],
    ["register", "/user/register", false],
    ["password-link", s.passwordLink, false],
    ["error", "/user/no-such-page", false],
  ] as const;
}

async function measure(dir: string): Promise<Record<string, { status: number; bytes: number; gzip: number; ms?: number }>> {
  const harness = await import(`${dir}/test/support/harness.ts`);
  const { visitorClass } = await import(`${dir}/test/support/visitor.ts`);
  const { makeImage, makeNoisyJpeg } = await import(`${dir}/test/support/images.ts`);
  const { parseAllowList } = await import(`${dir}/src/webhooks/address-guard.ts`);
  const { secretBox } = await import(`${dir}/src/webhooks/secret-box.ts`);
  const ctx = await harness.createTestContext({ webhooks: { box: secretBox(randomBytes(32)), allow: parseAllowList("127.0.0.1") } });
  try {
    let n = 0;
    const Visitor = visitorClass(
      () => ctx,
      () => `198.51.100.${++n}`,
      PASSWORD,
    );
    await ctx.admin("PATCH", "/api/admin/settings", { registration_enabled: true });
    await ctx.admin("PATCH", "/api/admin/groups/1", { webhook_allow_internal: true });
    const me = await ctx.admin("POST", "/api/admin/users", {
      username: "mei",
      email: "mei.lin@example.com",
      name: "Mei Lin",
      role: "admin",
      password: PASSWORD,
    });
    const { token } = await ctx.admin("POST", `/api/admin/users/${me.id}/tokens`, { label: "PicGo on the laptop" });
    await ctx.admin("POST", `/api/admin/users/${me.id}/tokens`, { label: "ShareX" });
    const trip = await ctx.admin("POST", `/api/admin/users/${me.id}/albums`, { name: "Kyoto, autumn 2026" });
    await ctx.admin("POST", `/api/admin/users/${me.id}/albums`, { name: "Screenshots" });
    let imageKey = "";
    const files: [string, Uint8Array, string][] = [
      ["IMG_20261128_143015_HDR_portrait_mode_from_the_phone_camera.jpg", await makeNoisyJpeg(640, 420), "image/jpeg"],
      ["diagram.png", await makeImage("png", 320, 200, "#cc6633"), "image/png"],
      ["icon.webp", await makeImage("webp", 96, 96, "#3a7"), "image/webp"],
      ["banner.png", await makeImage("png", 1200, 300, "#335588"), "image/png"],
    ];
    for (const [i, [filename, bytes, contentType]] of files.entries()) {
      const fields: Record<string, string> = {};
      if (i === 0) fields.album_id = String(trip.id);
      if (i === 1) fields.permission = "0";
      const res = await ctx.upload(token, { bytes, filename, contentType }, fields);
      if (res.status !== 200) throw new Error(`upload ${filename} → ${res.status} ${JSON.stringify(res.body)}`);
      if (i === 0) imageKey = res.body.data.key;
    }
    const carol = await ctx.admin("POST", "/api/admin/users", { username: "carol", email: "carol@example.com", name: "Carol Ortega" });
    await ctx.admin("PATCH", `/api/admin/users/${carol.id}`, { capacity_kb: 512_000, name: "Carol O." });
    const newcomer = await ctx.admin("POST", "/api/admin/users", { username: "newcomer", email: "newcomer@example.com", name: "New Comer" });
    const link = await ctx.admin("POST", `/api/admin/users/${newcomer.id}/password-link`);
    const hook = await ctx.admin("POST", "/api/admin/webhooks", {
      url: "http://127.0.0.1:9/site-events",
      description: "Moderation queue",
      events: ["image.uploaded", "user.disabled"],
    });
    const visitor = new Visitor();
    const signedIn = await visitor.signIn("mei");
    if (signedIn.status !== 303) throw new Error(`sign-in → ${signedIn.status}`);
    const made = await visitor.post("/user/webhooks", {
      url: "http://127.0.0.1:9/my-hook",
      description: "Sync to my notes",
      "event_image.uploaded": "1",
      "event_image.deleted": "1",
    });
    if (made.status >= 400) throw new Error(`webhook form → ${made.status}`);
    const list = await (await visitor.get("/user/webhooks")).text();
    const userWebhook = Number(/\/user\/webhooks\/(\d+)"/.exec(list)?.[1] ?? 0);
    const pages = pagesOf({
      imageKey,
      otherUserId: carol.id,
      userWebhook,
      adminWebhook: hook.endpoint?.id ?? hook.id,
      passwordLink: new URL(link.url).pathname,
    });
    const out: Record<string, { status: number; bytes: number; gzip: number; ms?: number }> = {};
    const anonymous = new Visitor();
    for (const [name, path, signed] of pages) {
      const who = signed ? visitor : anonymous;
      const res = await who.get(path);
      const body = await res.text();
      out[name] = { status: res.status, bytes: Buffer.byteLength(body), gzip: Bun.gzipSync(body).length };
      if (times > 0) {
        const ms: number[] = [];
        for (let i = 0; i < times; i++) {
          const t0 = performance.now();
          await (await who.get(path)).text();
          ms.push(performance.now() - t0);
        }
        out[name]!.ms = ms.sort((a, b) => a - b)[Math.floor(ms.length / 2)];
      }
      if (dump) {
        mkdirSync(dump, { recursive: true });
        writeFileSync(join(dump, `${name}.html`), body);
      }
    }
    return out;
  } finally {
    await ctx.close();
    await harness.stopTestDatabases?.();
    rmSync(harness.testLog.file, { force: true });
  }
}

if (args.includes("--json")) {
  console.log(JSON.stringify(await measure(root)));
  process.exit(0);
}

const baselineDir = flag("--baseline");
const here = await measure(root);
let before: Record<string, { status: number; bytes: number; gzip: number; ms?: number }> | undefined;
if (baselineDir) {
  const child = Bun.spawnSync(
    [
      "bun",
      import.meta.path,
      "--json",
      "--root",
      resolve(baselineDir),
      ...(times ? ["--time", String(times)] : []),
      ...(dump ? ["--dump", join(dump, "before")] : []),
    ],
    {
      cwd: resolve(baselineDir),
      env: process.env,
      stderr: "pipe",
    },
  );
  const line = child.stdout.toString().trim().split("\n").at(-1) ?? "";
  if (child.exitCode !== 0 || !line.startsWith("{")) throw new Error(`the baseline's run failed: ${child.stderr.toString().slice(-2000)}`);
  before = JSON.parse(line);
}
const rows = Object.entries(here).map(([name, now]) => ({ name, was: before?.[name], now }));
const ratioOf = (a: number, b: number | undefined) => (b ? `${(a / b).toFixed(3)}${a / b >= 1.1 ? " ⚠" : ""}` : "—");
const size = (r: { status: number; bytes: number } | undefined) => (r ? `${r.bytes}${r.status !== 200 ? ` (${r.status})` : ""}` : "—");
if (before) {
  const t = times > 0;
  console.log(`| page | before (B) | after (B) | after/before | gzip before | gzip after | gzip after/before |${t ? " ms before | ms after |" : ""}`);
  console.log(`|---|---:|---:|---:|---:|---:|---:|${t ? "---:|---:|" : ""}`);
  for (const { name, was, now } of rows) {
    const same = was && was.status === now.status;
    console.log(
      `| ${name} | ${size(was)} | ${size(now)} | ${same ? ratioOf(now.bytes, was.bytes) : "—"} | ${was?.gzip ?? "—"} | ${now.gzip} | ${same ? ratioOf(now.gzip, was.gzip) : "—"} |${t ? ` ${was?.ms?.toFixed(2) ?? "—"} | ${now.ms?.toFixed(2)} |` : ""}`,
    );
  }
} else {
  console.log("| page | bytes | gzip |");
  console.log("|---|---:|---:|");
  for (const { name, now } of rows) console.log(`| ${name} | ${size(now)} | ${now.gzip} |`);
}
