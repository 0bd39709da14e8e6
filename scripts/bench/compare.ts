/**
 * The upload and serving cells against another commit, side by side in one run: this machine is noisy, so only
 * ratios measured together mean anything. Prints figures, never asserts; benchmarks are not tests.
 *
 *   bun run bench --only compare --baseline REF [--quick]   these cells alone (writes their section of BENCHMARKS.md)
 *   bun run bench --baseline REF                            the full bench runs them at its end
 *   bun run scripts/bench/compare.ts --baseline REF [--quick] [--markdown FILE]
 *
 * REF is any commit git knows (a hash, a tag, `main~5`); without it the cells compare the working tree with HEAD.
 * The baseline runs from a temporary `git worktree` of REF that shares this checkout's node_modules. Both servers
 * run on PostgreSQL (a fresh database each on the bench's server), as package.json's "server" script starts them,
 * with the same environment; rounds are interleaved (baseline, current, then current, baseline…) and the table
 * shows medians. Per cell: accepted answers per second (wrk), p99, and the CPU per answer of the server's process tree.
 */
import { existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { type BenchImage, kb, makeImages } from "./images.ts";
import { cpuMs, descendants } from "./procfs.ts";
import { type Account, type AppServer, createAccount, startAppServer } from "./servers.ts";
import type { Tools } from "./tools.ts";
import { fmt, fmtRatio, freshDatabase, markdownTable, median, onCleanup, ROOT, run, standaloneSection, writeSection } from "./util.ts";
import { Wrk, type WrkResult } from "./wrk.ts";

export const COMPARE_HEADING = "## Upload and serving against a baseline";
export const COMPARE_CELLS_BUDGET_S = { full: 420, quick: 180 };
/** A fall in rate beyond this share is reported as a regression. */
const TOLERANCE = 0.05;

const configFor = (quick: boolean) => (quick ? { rounds: 1, seconds: 2, warmup: 1 } : { rounds: 3, seconds: 5, warmup: 2 });

type Side = "baseline" | "current";

interface Cell {
  label: string;
  connections: number;
  /** The upload's image, or none: serving the ~100 KB JPEG. */
  upload?: BenchImage;
}

interface Measured {
  rate: number;
  p99ms: number;
  cpuPerReq: number;
  errors: number;
}

interface Target {
  side: Side;
  server: AppServer;
  uploaders: Account[];
  servedPath: string;
}

/** A worktree of `ref` in a temporary directory, with this checkout's node_modules; removed at cleanup. */
async function worktreeOf(ref: string): Promise<{ dir: string; commit: string }> {
  const rev = await run(["git", "-C", ROOT, "rev-parse", "--verify", `${ref}^{commit}`]);
  if (rev.code !== 0) throw new Error(`--baseline ${ref}: git knows no such commit`);
  const commit = rev.stdout.trim();
  const dir = join(mkdtempSync(join(os.tmpdir(), "imghost-baseline-")), "tree");
  const add = await run(["git", "-C", ROOT, "worktree", "add", "--detach", dir, commit]);
  if (add.code !== 0) throw new Error(`git worktree add failed: ${add.stderr}`);
  onCleanup(`worktree ${dir}`, async () => {
    await run(["git", "-C", ROOT, "worktree", "remove", "--force", dir]);
    rmSync(join(dir, ".."), { recursive: true, force: true });
  });
  if (!existsSync(join(dir, "node_modules"))) symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  return { dir, commit };
}

async function startTarget(side: Side, root: string, pgUrl: string, dir: string, served: BenchImage): Promise<Target> {
  const databaseUrl = await freshDatabase(pgUrl, "imghost_compare");
  const adminToken = Buffer.from(crypto.getRandomValues(new Uint8Array(30))).toString("base64url");
  const server = await startAppServer({ label: side, dataDir: join(dir, `data-${side}`), adminToken, databaseUrl, root });
  const uploaders: Account[] = [];
  for (let i = 0; i < 4; i++) uploaders.push(await createAccount(server, `compare${i}`));
  const res = await fetch(`${server.base}/api/v1/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${uploaders[0]!.token}`, "content-type": served.contentType },
    body: await Bun.file(served.bodyFile).arrayBuffer(),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${side}: upload → ${res.status} ${text.slice(0, 300)}`);
  return { side, server, uploaders, servedPath: new URL((JSON.parse(text) as { data: { url: string } }).data.url).pathname };
}

/** CPU of the server and the processes it runs (its decode processes: work moved there is still charged). */
const treeCpuMs = (pid: number) => [pid, ...descendants(pid)].reduce((sum, p) => sum + (cpuMs(p) || 0), 0);

async function measure(wrk: Wrk, t: Target, cell: Cell, seconds: number): Promise<Measured> {
  const before = treeCpuMs(t.server.pid);
  let r: WrkResult;
  if (cell.upload) {
    r = await wrk.run({
      url: `${t.server.base}/api/v1/upload`,
      connections: cell.connections,
      seconds,
      upload: { bodyFile: cell.upload.bodyFile, contentType: cell.upload.contentType, tokens: t.uploaders.map((u) => u.token) },
    });
  } else {
    r = await wrk.run({ url: `${t.server.base}${t.servedPath}`, connections: cell.connections, seconds });
  }
  const cpu = treeCpuMs(t.server.pid) - before;
  const accepted = r.requests - r.statusErrors;
  return { rate: accepted / r.seconds, p99ms: r.p99ms, cpuPerReq: accepted > 0 ? cpu / accepted : NaN, errors: r.errors };
}

export async function runCompareCells(o: {
  quick: boolean;
  command: string;
  log: (m: string) => void;
  tools: Tools;
  pgUrl: string;
  baseline?: string;
}): Promise<{ section: string }> {
  const cfg = configFor(o.quick);
  const dir = mkdtempSync(join(os.tmpdir(), "imghost-compare-"));
  onCleanup(`rm ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
  const images = await makeImages(dir);
  const ref = o.baseline ?? "HEAD";
  const tree = await worktreeOf(ref);
  const head = (await run(["git", "-C", ROOT, "log", "-1", "--format=%h"])).stdout.trim();
  const dirty = (await run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "package.json", "drizzle"])).stdout.trim() !== "";
  o.log(`compare: baseline ${ref} (${tree.commit.slice(0, 10)}) against ${head}${dirty ? " + uncommitted changes" : ""}`);

  const targets = [await startTarget("baseline", tree.dir, o.pgUrl, dir, images.served), await startTarget("current", ROOT, o.pgUrl, dir, images.served)];
  const wrk = new Wrk(o.tools.wrk, dir);
  const cells: Cell[] = [
    { label: `serve ${kb(images.served)} JPEG, c=16`, connections: 16 },
    { label: `upload ${images.png.label} (${kb(images.png)}), c=4`, connections: 4, upload: images.png },
    { label: `upload ${images.png.label} (${kb(images.png)}), c=16`, connections: 16, upload: images.png },
    { label: `upload ${images.jpeg.label} (${kb(images.jpeg)}), c=4`, connections: 4, upload: images.jpeg },
  ];
  const results = new Map<string, Record<Side, Measured[]>>();
  for (const cell of cells) {
    const runs: Record<Side, Measured[]> = { baseline: [], current: [] };
    results.set(cell.label, runs);
    // a short warm-up of each, then the rounds, the order turning each round
    for (const t of targets) await measure(wrk, t, cell, cfg.warmup);
    for (let round = 0; round < cfg.rounds; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) runs[t.side].push(await measure(wrk, t, cell, cfg.seconds));
    }
    const b = median(runs.baseline.map((m) => m.rate));
    const c = median(runs.current.map((m) => m.rate));
    o.log(`compare: ${cell.label}: baseline ${fmt(b)} req/s, current ${fmt(c)} req/s (${fmtRatio(c / b)})`);
  }
  for (const t of targets) await t.server.stop();

  const rows = cells.map((cell) => {
    const runs = results.get(cell.label)!;
    const m = (side: Side, k: keyof Measured) => median(runs[side].map((x) => x[k]));
    const ratio = m("current", "rate") / m("baseline", "rate");
    const errors = runs.baseline.concat(runs.current).reduce((n, x) => n + x.errors, 0);
    return [
      cell.label,
      fmt(m("baseline", "rate")),
      fmt(m("current", "rate")),
      fmtRatio(ratio),
      `${fmt(m("baseline", "p99ms"))} / ${fmt(m("current", "p99ms"))}`,
      `${m("baseline", "cpuPerReq").toFixed(2)} / ${m("current", "cpuPerReq").toFixed(2)}`,
      fmtRatio(m("current", "cpuPerReq") / m("baseline", "cpuPerReq")),
      ratio >= 1 - TOLERANCE ? "yes" : `**no** (${((1 - ratio) * 100).toFixed(1)} % slower)${errors ? `, ${errors} failed requests` : ""}`,
    ];
  });
  const table = markdownTable(
    ["cell", "baseline req/s", "current req/s", "rate ×", "p99 ms (baseline / current)", "CPU ms/req (baseline / current)", "CPU ×", `within ${TOLERANCE * 100} %`],
    rows,
  );
  const section = `${COMPARE_HEADING}

Generated by \`${o.command}\` on ${new Date().toISOString()}: baseline \`${ref}\` (${tree.commit.slice(0, 10)}) against ${head}${dirty ? " with uncommitted changes" : ""}, on PostgreSQL, ${cfg.rounds} interleaved round${cfg.rounds > 1 ? "s" : ""} of ${cfg.seconds} s per cell (medians), load average ${os.loadavg().map((x) => x.toFixed(2)).join(" / ")} at the end.

${table}

- **rate ×**: the current server's accepted answers per second ÷ the baseline's, measured in the same run; **CPU ×**: the same for the CPU per answer of the server and its decode processes (user + system, all threads). "within 5 %": whether the rate fell by at most 5 %.
- Both servers ran as \`bun run server\` starts them, each on a fresh database and DATA_DIR, with the main bench's settings (\`UPLOAD_BODIES_PER_ADDRESS=64\`, \`LOG_OBJECT_REQUESTS=false\`); uploads rotate over 4 accounts' tokens.
`;
  return { section };
}

export const writeCompareSection = (file: string, section: string) => writeSection(file, COMPARE_HEADING, section);

if (import.meta.main) {
  const { ensureTools } = await import("./tools.ts");
  const argv = process.argv.slice(2);
  const at = argv.indexOf("--baseline");
  await standaloneSection({
    name: "compare",
    budgets: COMPARE_CELLS_BUDGET_S,
    run: async ({ quick, command }) =>
      runCompareCells({
        quick,
        command,
        log: (m) => console.log(m),
        tools: await ensureTools(),
        pgUrl: process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres",
        baseline: at >= 0 ? argv[at + 1] : undefined,
      }),
    write: writeCompareSection,
  });
}
