/**
 * The upload and serving cells against another commit, side by side in one run (only ratios measured together mean
 * anything on a shared machine). The baseline runs from a temporary `git worktree` of REF (HEAD by default), with this
 * checkout's node_modules when REF's lockfile is the same and its own `bun install` (from Bun's cache) otherwise; both
 * servers on PostgreSQL, as `bun run server` starts them, rounds interleaved.
 */
import { readFileSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { treeCpu } from "../../../test/support/proc.ts";
import { type BenchImage, benchImages } from "../lib/images.ts";
import { render } from "../lib/report.ts";
import { fmt, freshDatabase, markdownTable, median, onCleanup, ratio, ROOT, run, startFacts, tempDir } from "../lib/run.ts";
import { createAccount, startAppServer, uploadOnce } from "../lib/server.ts";
import { Wrk } from "../lib/wrk.ts";
import type { PartOptions } from "./index.ts";

const TOLERANCE = 0.05; // a fall in rate beyond this share is reported as a regression

/** A detached worktree of `ref` at `dir`/baseline, removed at the end, with dependencies; its commit. */
export async function worktreeOf(ref: string, dir: string): Promise<string> {
  const rev = await run(["git", "-C", ROOT, "rev-parse", "--verify", `${ref}^{commit}`]);
  if (rev.code !== 0) throw new Error(`--baseline ${ref}: git knows no such commit`);
  const tree = join(dir, "baseline");
  const add = await run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, rev.stdout.trim()]);
  if (add.code !== 0) throw new Error(`git worktree add failed: ${add.stderr}`);
  onCleanup(`worktree ${tree}`, async () => {
    await run(["git", "-C", ROOT, "worktree", "remove", "--force", tree]);
    rmSync(tree, { recursive: true, force: true });
  });
  if (readFileSync(join(tree, "bun.lock"), "utf8") === readFileSync(join(ROOT, "bun.lock"), "utf8")) {
    symlinkSync(join(ROOT, "node_modules"), join(tree, "node_modules"));
  } else {
    const install = await run(["bun", "install", "--frozen-lockfile", "--cwd", tree], { timeoutMs: 300_000 });
    if (install.code !== 0) throw new Error(`bun install in the baseline's worktree failed: ${install.stderr.slice(-1000)}`);
  }
  return rev.stdout.trim();
}

export async function runCompare(o: PartOptions): Promise<string> {
  const cfg = o.quick ? { rounds: 1, seconds: 2, warmup: 1 } : { rounds: 3, seconds: 5, warmup: 2 };
  if (o.rounds) cfg.rounds = o.rounds;
  const facts = await startFacts(o.command);
  const tools = await o.tools();
  const dir = tempDir("compare");
  const images = await benchImages(dir);
  const ref = o.baseline ?? "HEAD";
  await worktreeOf(ref, dir);
  const sides: { side: string; server: Awaited<ReturnType<typeof startAppServer>>; tokens: string[]; served: string }[] = [];
  for (const [side, root] of [
    ["baseline", join(dir, "baseline")],
    ["current", ROOT],
  ] as const) {
    const server = await startAppServer({ label: side, dataDir: join(dir, `data-${side}`), databaseUrl: await freshDatabase("imghost_compare"), root });
    const tokens = (await Promise.all([0, 1, 2, 3].map((i) => createAccount(server, `compare${i}`)))).map((a) => a.token);
    sides.push({ side, server, tokens, served: (await uploadOnce(server, tokens[0]!, images.served)).path });
  }
  const wrk = new Wrk(tools.wrk);
  const cells: { label: string; c: number; upload?: BenchImage }[] = [
    { label: `serve ${images.served.label}, c=16`, c: 16 },
    { label: `upload ${images.png.label}, c=4`, c: 4, upload: images.png },
    { label: `upload ${images.png.label}, c=16`, c: 16, upload: images.png },
    { label: `upload ${images.jpeg.label}, c=4`, c: 4, upload: images.jpeg },
  ];
  const measure = async (s: (typeof sides)[number], cell: (typeof cells)[number], seconds: number) => {
    const before = treeCpu(s.server.pid).total; // the server and its decode processes: work moved there is still charged
    const r = cell.upload
      ? await wrk.run({
          url: `${s.server.base}/api/v1/upload`,
          connections: cell.c,
          seconds,
          upload: { bodyFile: cell.upload.bodyFile, contentType: cell.upload.contentType, tokens: s.tokens },
        })
      : await wrk.run({ url: `${s.server.base}${s.served}`, connections: cell.c, seconds });
    const accepted = r.requests - r.statusErrors;
    return { rate: accepted / r.seconds, p99: r.p99ms, cpu: (treeCpu(s.server.pid).total - before) / Math.max(1, accepted), errors: r.errors };
  };
  const rows = [];
  for (const cell of cells) {
    const runs: Record<string, Awaited<ReturnType<typeof measure>>[]> = { baseline: [], current: [] };
    for (const s of sides) await measure(s, cell, cfg.warmup);
    for (let round = 0; round < cfg.rounds; round++)
      for (const s of round % 2 ? [...sides].reverse() : sides) runs[s.side]!.push(await measure(s, cell, cfg.seconds));
    const m = (side: string, k: "rate" | "p99" | "cpu") => median(runs[side]!.map((x) => x[k]));
    const r = m("current", "rate") / m("baseline", "rate");
    const errors = [...runs.baseline!, ...runs.current!].reduce((n, x) => n + x.errors, 0);
    o.log(`compare: ${cell.label}: baseline ${fmt(m("baseline", "rate"))} req/s, current ${fmt(m("current", "rate"))} req/s (${ratio(r)})`);
    rows.push([
      cell.label,
      fmt(m("baseline", "rate")),
      fmt(m("current", "rate")),
      ratio(r),
      `${fmt(m("baseline", "p99"))} / ${fmt(m("current", "p99"))}`,
      `${m("baseline", "cpu").toFixed(2)} / ${m("current", "cpu").toFixed(2)}`,
      ratio(m("current", "cpu") / m("baseline", "cpu")),
      r >= 1 - TOLERANCE ? "yes" : `**no** (${((1 - r) * 100).toFixed(1)} % slower)${errors ? `, ${errors} failed requests` : ""}`,
    ]);
  }
  for (const s of sides) await s.server.stop();
  return render("compare", {
    facts: facts.facts([
      ["baseline", ref === "HEAD" ? "`HEAD`: the commit above, without the uncommitted changes" : `\`${ref}\``],
      [
        "rounds",
        `${cfg.rounds} interleaved of ${cfg.seconds} s per cell, medians; load average at the end ${os
          .loadavg()
          .map((x) => x.toFixed(2))
          .join(" / ")}`,
      ],
    ]),
    table: markdownTable(
      [
        "cell",
        "baseline req/s",
        "current req/s",
        "rate ×",
        "p99 ms (baseline / current)",
        "CPU ms/req (baseline / current)",
        "CPU ×",
        `within ${TOLERANCE * 100} %`,
      ],
      rows,
    ),
    tolerance: TOLERANCE * 100,
  });
}
