/**
 * The benchmarks: the real server against nginx and against the upload's floor, the image cells, the user center at
 * scale, webhooks, memory, hostile containers, and a comparison with another commit. Prints figures, never asserts.
 *
 *   bun run bench                          every part, each writing its section of BENCHMARKS.md
 *   bun run bench --quick                  every part, one short round each; prints only (unless --out FILE)
 *   bun run bench --only PART              one part: core, images, pages, webhooks, memory, hostile, compare
 *   bun run bench --baseline REF           compare against commit REF (the full run then ends with compare)
 *   bun run bench --only pages --baseline REF --out FILE
 *                                          the user center's cells, REF and this checkout side by side
 *   options: --out FILE (write there instead), --no-write, --rounds N (the compare's interleaved rounds; more
 *   steady the medians on a busy machine)
 *
 * Everything runs on 127.0.0.1; every server, database and child is stopped at the end, on failure and on SIGINT too.
 */
import { join, resolve } from "node:path";
import { BUDGET_S, type Part, PARTS } from "./bench/parts/index.ts";
import { type Section, writeSection } from "./bench/lib/report.ts";
import { cleanup, interrupted, ROOT } from "./bench/lib/run.ts";
import { ensureTools, type Tools } from "./bench/lib/server.ts";

const argv = process.argv.slice(2);
const value = (flag: string) => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : undefined);
const quick = argv.includes("--quick");
const only = value("--only");
const baseline = value("--baseline");
const rounds = value("--rounds") ? Number(value("--rounds")) : undefined;
if (rounds !== undefined && !(Number.isInteger(rounds) && rounds > 0)) {
  console.error("bench: --rounds takes a whole number above 0");
  process.exit(2);
}
const out = value("--out") ? resolve(value("--out")!) : quick || argv.includes("--no-write") ? null : join(ROOT, "BENCHMARKS.md");
if (only !== undefined && !(only in PARTS)) {
  console.error(`bench: --only ${only}: the parts are ${Object.keys(PARTS).join(", ")}`);
  process.exit(2);
}
const parts = (only ? [only] : Object.keys(PARTS).filter((p) => p !== "compare" || baseline)) as Part[];
const command = `bun run bench${argv.length ? ` ${argv.join(" ")}` : ""}`;
const started = performance.now();
const log = (m: string) => console.log(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${m}`);
const budget = parts.reduce((s, p) => s + BUDGET_S[p][quick ? 1 : 0] * (p === "compare" && rounds ? Math.max(1, rounds / 3) : 1), 60);
const watchdog = setTimeout(() => {
  console.error(`\nbench: time budget of ${budget} s exceeded; stopping.`);
  void cleanup().finally(() => process.exit(2));
}, budget * 1000);
watchdog.unref();

let tools: Promise<Tools> | undefined;
let code = 0;
for (const part of parts) {
  const t0 = performance.now();
  log(`${part}${quick ? " (--quick)" : ""}…`);
  try {
    const section = await PARTS[part]({
      quick,
      command,
      log,
      tools: () => (tools ??= ensureTools()),
      baseline: part === "pages" && !only ? undefined : baseline,
      rounds,
    });
    console.log(`\n${section}`);
    if (out) writeSection(out, part as Section, section);
    log(`${part}: ${((performance.now() - t0) / 1000).toFixed(0)} s${out ? `; its section written to ${out}` : ""}`);
  } catch (e) {
    if (interrupted) break;
    console.error(`bench: ${part} failed (its section is left as it was):`, e);
    code = 1;
  }
  await cleanup(); // each part's servers, databases and directories, before the next part measures
}
clearTimeout(watchdog);
await cleanup();
process.exit(code);
