/**
 * The user center's pages at scale: 100,000 images in an account and 10,000 users, the bar 100 ms p99 for search,
 * filter and album views. Per topology one server, two accounts signed in through POST /user/login (the gallery's
 * owner and an administrator), rows seeded with SQL in the worker process; wrk with the session cookie, rounds
 * interleaved (cells and topologies rotate), medians. With `--baseline REF` the two sides are REF (a git worktree, as
 * the compare part makes it) and this checkout, both on PostgreSQL: the same cells side by side in one run, the only
 * comparison this noisy machine allows.
 */
import os from "node:os";
import { join } from "node:path";
import { render } from "../lib/report.ts";
import { fmt, freshDatabase, markdownTable, median, postgresInfo, startFacts, tempDir, worker } from "../lib/run.ts";
import { admin, type AppServer, serverCommand, startAppServer } from "../lib/server.ts";
import { Wrk } from "../lib/wrk.ts";
import { worktreeOf } from "./compare.ts";
import type { PartOptions } from "./index.ts";

const TARGET_P99_MS = 100;
const [IMAGES, USERS, ALBUMS, CONNECTIONS] = [100_000, 10_000, 20, 16];
const WORDS = { common: "screenshot", rare: "zanzibar", user: "tanaka" };
type Key = "emb" | "pg" | "base" | "now";
const label: Record<Key, string> = { emb: "embedded", pg: "PostgreSQL", base: "baseline", now: "this checkout" };
/** Where each side's server runs from (undefined: this checkout); the baseline's worktree is set when there is one. */
const rootOf: Partial<Record<Key, string>> = {};
interface Seeded {
  ms: number;
  albums: { id: number; images: number }[];
  none: number;
  private: number;
  common: number;
  rare: number;
  users: number;
  matching: number;
}

async function signIn(server: AppServer, login: string, password: string): Promise<string> {
  const res = await fetch(`${server.base}/user/login`, {
    method: "POST",
    headers: { origin: server.base },
    body: new URLSearchParams({ login, password }),
    redirect: "manual",
  });
  await res.arrayBuffer();
  const cookie = /ih_session=([^;]+)/.exec(res.headers.get("set-cookie") ?? "");
  if (res.status !== 303 || !cookie) throw new Error(`${server.label}: sign-in of ${login} → ${res.status}, no session cookie`);
  return cookie[1]!;
}

async function getPage(base: string, path: string, cookie: string) {
  const t0 = performance.now();
  const res = await fetch(`${base}${path}`, { headers: { cookie: `ih_session=${cookie}` }, redirect: "manual" });
  const text = await res.text();
  const pageOf = /Page (\d[\d,]*) of (\d[\d,]*)/.exec(text);
  return { status: res.status, bytes: Buffer.byteLength(text), ms: performance.now() - t0, text, pageOf: pageOf ? `, page ${pageOf[1]} of ${pageOf[2]}` : "" };
}

async function setUp(key: Key, dir: string, quick: boolean, log: (m: string) => void) {
  const dataDir = join(dir, `data-${key}`);
  const url = key === "emb" ? undefined : await freshDatabase("imghost_pages");
  const root = rootOf[key];
  let server = await startAppServer({ label: `pages (${label[key]})`, dataDir, databaseUrl: url, root });
  const password = `bench-${crypto.randomUUID()}`;
  const owner = await admin<{ id: number }>(server, "POST", "/api/admin/users", {
    username: "gallery",
    email: "gallery@bench.invalid",
    capacity_kb: 1_000_000_000,
    password,
  });
  await admin(server, "POST", "/api/admin/users", { username: "siteadmin", email: "siteadmin@bench.invalid", password, role: "admin" });
  if (key === "emb") await server.stop(); // the embedded database belongs to one process
  const database = url ? { kind: "postgres", url } : { kind: "embedded" };
  const seed = await worker<Seeded>({ op: "seed-pages", database, dataDir, ownerId: owner.id, users: USERS, images: IMAGES, albums: ALBUMS, words: WORDS });
  if (key !== "emb") await server.stop();
  server = await startAppServer({ label: `pages (${label[key]})`, dataDir, adminToken: server.adminToken, databaseUrl: url, root });
  const reconcileMs = await server.waitForOutput(/"job":"reconciler"/, quick ? 120_000 : 600_000); // its run over the seeded rows
  const cookies = { owner: await signIn(server, "gallery", password), admin: await signIn(server, "siteadmin", password) };
  log(
    `pages, ${label[key]}: seeded ${seed.users.toLocaleString("en-US")} users and ${IMAGES.toLocaleString("en-US")} images in ${(seed.ms / 1000).toFixed(1)} s`,
  );
  return { key, server, cookies, seed, reconcileMs };
}

export async function runPages(o: PartOptions): Promise<string> {
  const cfg = o.quick ? { rounds: 1, seconds: 2, warm: 0, probes: 5 } : { rounds: 3, seconds: 3, warm: 1, probes: 15 };
  const facts = await startFacts(o.command);
  const tools = await o.tools();
  const pg = await postgresInfo();
  const dir = tempDir("pages");
  let keys: Key[] = pg.version ? ["emb", "pg"] : ["emb"];
  if (o.baseline) {
    if (!pg.version) throw new Error(`pages --baseline: PostgreSQL is not reachable (${pg.problem})`);
    const rev = await worktreeOf(o.baseline, dir);
    rootOf.base = join(dir, "baseline");
    label.base = `baseline ${rev.slice(0, 7)}`;
    keys = ["base", "now"];
  }
  o.log(`pages: setting up ${keys.map((k) => label[k]).join(" and ")}…`);
  const setups = await Promise.allSettled(keys.map((k) => setUp(k, dir, o.quick, o.log)));
  for (const s of setups) if (s.status === "rejected") throw s.reason;
  const tops = setups.map((s) => (s as PromiseFulfilledResult<Awaited<ReturnType<typeof setUp>>>).value);
  const seed = tops[0]!.seed;
  const n = (x: number) => x.toLocaleString("en-US");
  // the same cells on both; album ids are each database's own (the fullest album: the worst album view)
  const fullest = (s: Seeded) => [...s.albums].sort((a, b) => b.images - a.images)[0]!;
  const cells = [
    ["Images, newest first", "/user/images"],
    ["Images, oldest first", "/user/images?sort=oldest"],
    ["Images, largest first", "/user/images?sort=largest"],
    ["Images, private only", "/user/images?visibility=private"],
    [`one album (the fullest, ${n(fullest(seed).images)} images)`, "/user/images?album={album}"],
    [`in no album (${n(seed.none)})`, "/user/images?album=none"],
    [`search, common word (${n(seed.common)} match)`, `/user/images?q=${WORDS.common}`],
    [`search, rare word (${seed.rare} match)`, `/user/images?q=${WORDS.rare}`],
    ["search + public + largest", `/user/images?q=${WORDS.common}&visibility=public&sort=largest`],
    ["Images, page 100 of newest", "/user/images?page=100"],
    [`Albums (${ALBUMS}, with counts)`, "/user/albums"],
    ["admin: Users, page 1", "/user/admin/users"],
    [`admin: Users search (${seed.matching} match)`, `/user/admin/users?q=${WORDS.user}`],
    ["admin: Users, page 150", "/user/admin/users?page=150"],
  ].map(([label, path]) => ({ label: label!, path: path!, who: path!.startsWith("/user/admin") ? ("admin" as const) : ("owner" as const) }));
  const pathOf = (t: (typeof tops)[number], path: string) => path.replace("{album}", String(fullest(t.seed).id));

  // every page once (200, what it shows), then the single-request latency (c=1), which also warms them
  const shown = new Map<string, string>();
  const single = new Map<string, number>();
  const pageBytes = new Map<string, number>();
  const notes: string[] = [];
  for (const t of tops) {
    for (const cell of cells) {
      const r = await getPage(t.server.base, pathOf(t, cell.path), t.cookies[cell.who]);
      if (r.status !== 200) throw new Error(`${label[t.key]} ${cell.path} → ${r.status}: ${r.text.slice(0, 300)}`);
      const cards = (r.text.match(/<li class="image"/g) ?? []).length;
      const rows = (r.text.match(/<tr>/g) ?? []).length - (/<thead>/.test(r.text) ? 1 : 0);
      if (cell.path.startsWith("/user/images") && cards === 0) throw new Error(`${label[t.key]} ${cell.path}: no image on the page`);
      if (t === tops[0]) shown.set(cell.label, `${cell.path.startsWith("/user/images") ? `${cards} images` : `${rows} rows`}${r.pageOf}`);
      if (cell.path === "/user/albums") {
        const counts = [...r.text.matchAll(/<td data-label="Images">([\d,]+)<\/td>/g)].map((m) => Number(m[1]!.replace(/,/g, ""))).sort((a, b) => b - a);
        const seeded = t.seed.albums.map((a) => a.images).sort((a, b) => b - a);
        if (counts.join() !== seeded.join())
          notes.push(`**${label[t.key]}: the Albums page shows image counts ${counts.join(", ")}; the albums hold ${seeded.join(", ")}**`);
      }
      pageBytes.set(`${cell.label}|${t.key}`, r.bytes);
      const ms: number[] = [];
      for (let i = 0; i < cfg.probes; i++) ms.push((await getPage(t.server.base, pathOf(t, cell.path), t.cookies[cell.who])).ms);
      single.set(`${cell.label}|${t.key}`, median(ms));
    }
  }

  const wrk = new Wrk(tools.wrk);
  const measure = (t: (typeof tops)[number], cell: (typeof cells)[number], seconds: number) =>
    wrk.run({ url: `${t.server.base}${pathOf(t, cell.path)}`, connections: CONNECTIONS, seconds, headers: { Cookie: `ih_session=${t.cookies[cell.who]}` } });
  if (cfg.warm) for (const cell of cells) for (const t of tops) await measure(t, cell, cfg.warm);
  const runs = new Map<string, { rate: number; p50: number; p99: number }[]>();
  const loads: number[] = [];
  for (let round = 0; round < cfg.rounds; round++) {
    o.log(`pages: round ${round + 1} of ${cfg.rounds}`);
    loads.push(os.loadavg()[0]!);
    for (const cell of cells.map((_, i) => cells[(i + round * 5) % cells.length]!)) {
      for (const t of tops.map((_, i) => tops[(i + round) % tops.length]!)) {
        const r = await measure(t, cell, cfg.seconds);
        const where = `${cell.label}, ${label[t.key]}, round ${round + 1}`;
        if (r.errors > 0) notes.push(`${where}: ${r.errors} failed (${r.statusErrors} answers ≥ 400) of ${r.requests}`);
        // headers included, an answer is a little larger than the page; a redirect to the sign-in page is far smaller
        if (r.bytesPerRequest < pageBytes.get(`${cell.label}|${t.key}`)! * 0.9)
          notes.push(`${where}: ${fmt(r.bytesPerRequest)} bytes per answer: not the page?`);
        const none = r.requests === 0 ? NaN : 1; // no answer within the cell: its latency is unknown, not 0
        (runs.get(`${cell.label}|${t.key}`) ?? runs.set(`${cell.label}|${t.key}`, []).get(`${cell.label}|${t.key}`)!).push({
          rate: (r.requests - r.statusErrors) / r.seconds,
          p50: r.p50ms * none,
          p99: r.p99ms * none,
        });
      }
    }
  }
  for (const t of tops) await t.server.stop();
  const fig = (cell: string, k: Key, f: "rate" | "p50" | "p99") => median(runs.get(`${cell}|${k}`)!.map((r) => r[f]));
  const within = (cell: string, k: Key) => fig(cell, k, "p99") <= TARGET_P99_MS;
  const albumSizes = seed.albums.map((a) => a.images).sort((a, b) => b - a);
  return render("pages", {
    facts: facts.facts([
      ["software", `Bun ${Bun.version}, ${tools.wrkVersion}, PostgreSQL ${pg.version ?? `not reachable (${pg.problem})`}`],
      ["server", `\`${serverCommand()}\`, fresh DATA_DIR per topology, \`LOG_OBJECT_REQUESTS=false\``],
      [
        "load",
        `wrk, ${CONNECTIONS} connections, 2 threads, ${cfg.seconds} s per cell, ${cfg.rounds} round(s), the session cookie sent; 1-min load at each round's start: ${loads.map((l) => l.toFixed(2)).join(", ")}`,
      ],
    ]),
    target: TARGET_P99_MS,
    images: n(IMAGES),
    users: n(seed.users),
    seededUsers: n(USERS),
    private: `${n(seed.private)} (${((seed.private / IMAGES) * 100).toFixed(0)} %)`,
    common: `"${WORDS.common}" in ${n(seed.common)}, "${WORDS.rare}" in ${seed.rare}`,
    albums: `${ALBUMS}, holding ${n(albumSizes[0]!)} … ${n(albumSizes.at(-1)!)} images each (${n(IMAGES - seed.none)} in all); ${n(seed.none)} images in no album`,
    reconcile: tops.map((t) => `${label[t.key]} ${t.reconcileMs === null ? "not seen finishing" : `${(t.reconcileMs / 1000).toFixed(1)} s`}`).join(", "),
    seeding: tops.map((t) => `${label[t.key]} ${(t.seed.ms / 1000).toFixed(1)} s`).join(", "),
    results: markdownTable(
      ["cell", "page", "shown", ...keys.flatMap((k) => [`${label[k]} req/s`, "p50 ms", "p99 ms", "c=1 ms", `p99 ≤ ${TARGET_P99_MS}`])],
      cells.map((c) => [
        c.label,
        `\`${c.path.replace("{album}", String(fullest(seed).id))}\``,
        shown.get(c.label)!,
        ...keys.flatMap((k) => [
          fmt(fig(c.label, k, "rate")),
          fmt(fig(c.label, k, "p50")),
          fmt(fig(c.label, k, "p99")),
          fmt(single.get(`${c.label}|${k}`)),
          within(c.label, k) ? "yes" : "**no**",
        ]),
      ]),
    ),
    probes: cfg.probes,
    connections: CONNECTIONS,
    met: keys
      .map(
        (k) =>
          `- ${label[k]}: **${cells.filter((c) => within(c.label, k)).length} of ${cells.length}** cells within ${TARGET_P99_MS} ms p99${
            cells.some((c) => !within(c.label, k))
              ? ` (missed: ${cells
                  .filter((c) => !within(c.label, k))
                  .map((c) => c.label)
                  .join("; ")})`
              : ""
          }`,
      )
      .join("\n"),
    waiting: CONNECTIONS / os.availableParallelism(),
    perRound: markdownTable(
      ["cell", ...keys.map((k) => `${label[k]}: req/s (p99 ms) per round`)],
      cells.map((c) => [
        c.label,
        ...keys.map((k) =>
          runs
            .get(`${c.label}|${k}`)!
            .map((r) => `${fmt(r.rate)} (${fmt(r.p99)})`)
            .join(" · "),
        ),
      ]),
      true,
    ),
    notes: notes.length ? notes.map((x) => `- ${x}`).join("\n") : "- no failed requests; every answer was the page's size",
  });
}
