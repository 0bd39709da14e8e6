/**
 * Memory and CPU of a process tree, from /proc (Linux): the server process, its decode processes, an embedded
 * PostgreSQL's processes. The one implementation shared by the tests that watch a real server and the benchmarks.
 */
import { readdirSync, readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100; // USER_HZ: getconf CLK_TCK is 100 on every Linux we run on

const readKb = (file: string, field: string) => {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(file, "latin1"));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
};
/** VmRSS in KB, NaN once the process is gone. */
export const rssKb = (pid: number) => readKb(`/proc/${pid}/status`, "VmRSS");
/** Proportional set size in KB (shared pages divided among their users, so a tree's figures add up), NaN once gone. */
export const pssKb = (pid: number) => readKb(`/proc/${pid}/smaps_rollup`, "Pss");

/** The process and every process below it (children, grandchildren…), the process first. */
export function processTree(pid: number): number[] {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${tree[i]}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        tree.push(...readFileSync(`/proc/${tree[i]}/task/${task}/children`, "utf8").split(" ").filter(Boolean).map(Number));
      } catch {}
    }
  }
  return tree;
}

/** User + system CPU ms of all the process's threads (+ the children it reaped, when `reaped`); NaN once gone. */
export function cpuMs(pid: number, reaped = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // state is f[0]: utime f[11], stime f[12], cutime f[13], cstime f[14]
    return ((Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0)) * 1000) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

export type Kind = "server" | "decoder" | "database";
const kinds = new Map<number, Kind>();
/** What a process of the server's tree is: the root is the server; decode-worker.ts is a decode process; the rest is the database's. */
export function kindOf(pid: number, root: number): Kind {
  if (pid === root) return "server";
  let kind = kinds.get(pid);
  if (!kind) {
    let cmd = "";
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, "latin1");
    } catch {}
    kind = cmd.includes("decode-worker") ? "decoder" : "database";
    if (cmd) kinds.set(pid, kind);
  }
  return kind;
}

export type ByKind = Record<Kind | "total", number>;
const zero = (): ByKind => ({ server: 0, decoder: 0, database: 0, total: 0 });

/**
 * CPU ms spent so far by the server's tree, by kind: each process's own time plus the children it reaped, so a decode
 * process killed and waited for is still counted (in the server's). The difference of two readings is what ran between.
 */
export function treeCpu(root: number): ByKind {
  const out = zero();
  for (const pid of processTree(root)) {
    const ms = cpuMs(pid, true);
    if (!Number.isFinite(ms)) continue;
    out[kindOf(pid, root)] += ms;
    out.total += ms;
  }
  return out;
}
export const cpuSince = (a: ByKind, b: ByKind = zero()): ByKind => ({
  server: b.server - a.server,
  decoder: b.decoder - a.decoder,
  database: b.database - a.database,
  total: b.total - a.total,
});

/** Summed PSS (KB) of the server's tree, by kind, and the server's own VmRSS. */
export function treeMemory(root: number): { rss: number; pss: ByKind; processes: number } {
  const pss = zero();
  const tree = processTree(root);
  for (const pid of tree) {
    const kb = pssKb(pid);
    if (!Number.isFinite(kb)) continue;
    pss[kindOf(pid, root)] += kb;
    pss.total += kb;
  }
  return { rss: rssKb(root), pss, processes: tree.length };
}

export interface MemorySample {
  t: number;
  rss: number;
  pss: ByKind;
  processes: number;
}

/**
 * Samples a tree's memory every `everyMs` (the PSS of the whole tree every `pssEvery`-th sample, as reading every
 * process's smaps is the costlier part) until stopped: peaks over a window, the level at an instant.
 */
export class MemorySampler {
  readonly samples = new Map<number, MemorySample[]>();
  private readonly timer: ReturnType<typeof setInterval>;
  private tick = 0;
  constructor(
    readonly everyMs = 50,
    private readonly pssEvery = 1,
  ) {
    this.timer = setInterval(() => this.sample(), everyMs);
  }
  watch(pid: number) {
    if (!this.samples.has(pid)) this.samples.set(pid, []);
    this.sample();
    return this;
  }
  private sample() {
    const withPss = this.tick++ % this.pssEvery === 0;
    for (const [pid, list] of this.samples) {
      const m = withPss ? treeMemory(pid) : { rss: rssKb(pid), pss: { ...zero(), total: NaN }, processes: NaN };
      if (Number.isFinite(m.rss)) list.push({ t: performance.now(), ...m });
    }
  }
  /** The samples of `pid` taken in [t0, t1]. */
  between(pid: number, t0 = 0, t1 = Infinity): MemorySample[] {
    return (this.samples.get(pid) ?? []).filter((s) => s.t >= t0 && s.t <= t1);
  }
  /** The highest value of `pick` in [t0, t1] (NaN when none). */
  peak(pid: number, pick: (s: MemorySample) => number, t0 = 0, t1 = Infinity): number {
    const xs = this.between(pid, t0, t1).map(pick).filter(Number.isFinite);
    return xs.length ? Math.max(...xs) : NaN;
  }
  /** The last value of `pick` at or before t. */
  at(pid: number, pick: (s: MemorySample) => number, t = Infinity): number {
    const xs = this.between(pid, 0, t).map(pick).filter(Number.isFinite);
    return xs.length ? xs[xs.length - 1]! : NaN;
  }
  stop() {
    clearInterval(this.timer);
    this.sample();
  }
}
