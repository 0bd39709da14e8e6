/** Resident memory and CPU time of a process, from /proc (Linux). */
import { readdirSync, readFileSync } from "node:fs";

/** VmRSS in KB, or NaN once the process is gone. */
export function rssKb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** Proportional set size in KB (shared pages divided among their users), or NaN. */
export function pssKb(pid: number): number {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** Every process below pid (children, grandchildren…). */
export function descendants(pid: number): number[] {
  const found: number[] = [];
  const pending = [pid];
  while (pending.length) {
    const p = pending.pop()!;
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      let children = "";
      try {
        children = readFileSync(`/proc/${p}/task/${task}/children`, "utf8");
      } catch {}
      for (const c of children.split(" ").filter(Boolean).map(Number)) {
        found.push(c);
        pending.push(c);
      }
    }
  }
  return found;
}

const TICKS_PER_SECOND = 100; // USER_HZ; getconf CLK_TCK is 100 on every Linux we run on

/** User + system CPU time of all the process's threads, in ms. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // after "pid (comm) ": state is field 3, utime field 14, stime field 15
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

interface Sample {
  t: number;
  kb: number;
}

/**
 * Samples VmRSS of the watched processes every 50 ms, for peaks over a window and the level at an instant; and,
 * every 250 ms, the summed PSS of the processes they started (an embedded database server's processes), which
 * a server's own RSS does not include. PSS, not RSS: the database processes share their buffers.
 */
export class RssSampler {
  private readonly series = new Map<number, Sample[]>();
  private readonly children = new Map<number, Sample[]>();
  private readonly timer: ReturnType<typeof setInterval>;
  private tick = 0;

  constructor(readonly everyMs = 50) {
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  watch(pid: number) {
    if (!this.series.has(pid)) {
      this.series.set(pid, []);
      this.children.set(pid, []);
    }
    this.sample();
  }

  private sample() {
    const t = performance.now();
    const withChildren = this.tick++ % 5 === 0;
    for (const [pid, samples] of this.series) {
      const kb = rssKb(pid);
      if (!Number.isFinite(kb)) continue;
      samples.push({ t, kb });
      if (withChildren) {
        const below = descendants(pid);
        if (below.length) this.children.get(pid)!.push({ t, kb: below.reduce((sum, c) => sum + (pssKb(c) || 0), 0) });
      }
    }
  }

  /** The highest sample in [t0, t1]; `children`: of the processes below it. */
  peak(pid: number, t0: number, t1: number, children = false): number {
    let max = NaN;
    for (const s of (children ? this.children : this.series).get(pid) ?? []) if (s.t >= t0 && s.t <= t1 && !(s.kb <= max)) max = s.kb;
    return max;
  }

  /** The last sample at or before t. */
  at(pid: number, t: number, children = false): number {
    let last = NaN;
    for (const s of (children ? this.children : this.series).get(pid) ?? []) {
      if (s.t > t) break;
      last = s.kb;
    }
    return last;
  }

  stop() {
    clearInterval(this.timer);
  }
}
