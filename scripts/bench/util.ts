/** Small helpers shared by the benchmark's modules: paths, statistics, formatting, child processes, cleanup. */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";

export const ROOT = resolve(import.meta.dir, "../..");

// ---------------------------------------------------------------- statistics

export function median(xs: number[]): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Nearest-rank percentile. */
export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

// ---------------------------------------------------------------- formatting

/** Three significant figures at most, thousands separated: 27,000 / 512 / 12.3 / 0.85. */
export function fmt(x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return "–";
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x).toLocaleString("en-US");
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  return x.toFixed(2);
}
export const fmtRatio = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? "–" : `${x.toFixed(2)}×`);
export const mb = (kb: number | undefined) => (kb === undefined || !Number.isFinite(kb) ? "–" : String(Math.round(kb / 1024)));

/** A plain-text table: first column left-aligned, the others right-aligned. */
export function textTable(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

/** `align`: "right" = first column left, the others right (figures); "left" = all left (text). */
export function markdownTable(head: string[], rows: string[][], align: "right" | "left" = "right"): string {
  const esc = (s: string) => s.replace(/\|/g, "\\|");
  return [
    `| ${head.map(esc).join(" | ")} |`,
    `|${head.map((_, i) => (i === 0 || align === "left" ? "---" : "---:")).join("|")}|`,
    ...rows.map((r) => `| ${r.map(esc).join(" | ")} |`),
  ].join("\n");
}

// ---------------------------------------------------------------- processes

export async function run(cmd: string[], opts: { env?: Record<string, string | undefined>; timeoutMs?: number } = {}) {
  const proc = Bun.spawn(cmd, { env: opts.env as Record<string, string> | undefined, stdout: "pipe", stderr: "pipe" });
  const timer = opts.timeoutMs ? setTimeout(() => proc.kill("SIGKILL"), opts.timeoutMs) : undefined;
  // a child still running when the benchmark is stopped (a seeding, a wrk cell) is stopped with it
  const unregister = onCleanup(`${cmd[0]} (pid ${proc.pid})`, async () => {
    proc.kill("SIGTERM");
    await Promise.race([proc.exited, Bun.sleep(5000).then(() => proc.kill("SIGKILL"))]);
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  unregister();
  clearTimeout(timer);
  return { code, stdout, stderr };
}

export function which(name: string, fallbacks: string[] = []): string | null {
  return Bun.which(name) ?? fallbacks.find((f) => existsSync(f)) ?? null;
}

/** A loopback port nobody listens on right now (closed again before it is handed out). */
export function freePort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/** Keeps the last `max` characters a child wrote, so a failure can show why. */
export function tail(stream: ReadableStream<Uint8Array> | undefined, max = 8000): () => string {
  let text = "";
  if (stream) {
    void (async () => {
      const decoder = new TextDecoder();
      const reader = stream.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          text += decoder.decode(value, { stream: true });
          if (text.length > max * 2) text = text.slice(-max);
        }
      } catch {}
    })();
  }
  return () => text.slice(-max);
}

// ---------------------------------------------------------------- cleanup

const cleanups: { name: string; fn: () => Promise<unknown> | unknown }[] = [];

/** Registers an undo step; they run last-in first-out, each bounded to 15 s, however the run ends. */
export function onCleanup(name: string, fn: () => Promise<unknown> | unknown): () => void {
  const entry = { name, fn };
  cleanups.push(entry);
  return () => {
    const i = cleanups.indexOf(entry);
    if (i >= 0) cleanups.splice(i, 1);
  };
}

let cleaning: Promise<void> | undefined;
export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length) {
      const { name, fn } = cleanups.pop()!;
      const t0 = performance.now();
      try {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          Promise.resolve().then(fn),
          new Promise<void>((resolve) => {
            timer = setTimeout(() => {
              console.error(`cleanup: ${name} timed out after 15 s`);
              resolve();
            }, 15_000);
          }),
        ]).finally(() => clearTimeout(timer));
      } catch (e) {
        console.error(`cleanup: ${name}: ${(e as Error).message}`);
      }
      const ms = performance.now() - t0;
      if (ms > 2000) console.error(`cleanup: ${name} took ${(ms / 1000).toFixed(1)} s`);
    }
  })();
  return cleaning;
}

/** Set once a signal stopped the run: what fails after that is the stopping, not a finding. */
export let interrupted = false;

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\nbench: ${signal}, stopping servers…`);
    void cleanup().finally(() => process.exit(130));
  });
}

/**
 * A fresh database on the PostgreSQL server at `serverUrl`, dropped at cleanup: the URL of the new database. Each
 * topology's server gets its own, so runs never see each other's rows.
 */
export async function freshDatabase(serverUrl: string, prefix: string): Promise<string> {
  const { default: postgres } = await import("postgres");
  const name = `${prefix}_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  onCleanup(`drop database ${name}`, async () => {
    const c = postgres(serverUrl, { max: 1, onnotice: () => {} });
    try {
      await c.unsafe(`drop database if exists ${name} with (force)`);
    } finally {
      await c.end();
    }
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A section's cells run alone (`bun run scripts/bench/<name>.ts [--quick] [--markdown FILE]`): under a watchdog of
 * `budgets`, printing the section and writing it into FILE when asked, cleaning up however it ends.
 */
export async function standaloneSection(options: {
  name: string;
  budgets: { quick: number; full: number };
  run: (o: { quick: boolean; command: string }) => Promise<{ section: string }>;
  write: (file: string, section: string) => void;
}): Promise<never> {
  const argv = process.argv.slice(2);
  const quick = argv.includes("--quick");
  const mdArg = argv.indexOf("--markdown");
  const mdFile = mdArg >= 0 ? resolve(argv[mdArg + 1] ?? "") : null;
  const budget = quick ? options.budgets.quick : options.budgets.full;
  const watchdog = setTimeout(() => {
    console.error(`\n${options.name}: time budget of ${budget} s exceeded; stopping.`);
    void cleanup().finally(() => process.exit(2));
  }, budget * 1000);
  watchdog.unref();
  let code = 0;
  try {
    const r = await options.run({ quick, command: `bun run scripts/bench/${options.name}.ts${argv.length ? ` ${argv.join(" ")}` : ""}` });
    console.log(`\n${r.section}`);
    if (mdFile) {
      options.write(mdFile, r.section);
      console.log(`wrote the section to ${mdFile}`);
    }
  } catch (e) {
    if (!interrupted) console.error(e);
    code = 1;
  } finally {
    clearTimeout(watchdog);
    await cleanup();
  }
  process.exit(code);
}

/** Replaces the section under `heading` (up to the next `## ` heading) in `file`, or appends it; creates the file when missing. */
export function writeSection(file: string, heading: string, section: string) {
  const text = existsSync(file) ? readFileSync(file, "utf8") : "";
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.trim() === heading);
  const body = section.trimEnd().split("\n");
  let out: string[];
  if (start < 0) {
    const head = text.trimEnd();
    out = head ? [...head.split("\n"), "", ...body, ""] : [...body, ""];
  } else {
    let end = lines.findIndex((l, i) => i > start && l.startsWith("## "));
    if (end < 0) end = lines.length;
    const after = lines.slice(end);
    out = [...lines.slice(0, start), ...body, ...(after.length ? ["", ...after] : [""])];
  }
  writeFileSync(file, out.join("\n"));
}
