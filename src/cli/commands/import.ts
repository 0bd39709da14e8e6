/**
 * `import lsky`: a local operation on this server's database and storage (DATABASE_URL or DATA_DIR), reading a
 * Lsky Pro database and its files; not a call to the admin API, which has no importer. The work is in
 * services/import/lsky/; docs/moving-from-lsky.md is the walk-through.
 */
import { parseEnv } from "../../env.ts";
import { type ImportReport, importFromLsky, LskyImportError, type Progress } from "../../services/import/lsky/index.ts";
import { command, type CommandGroup, optionList, requireOption } from "../command.ts";
import { CliError, usageError } from "../errors.ts";

const PHASES: Record<Progress["phase"], string> = {
  strategy: "strategies",
  group: "groups",
  user: "users",
  album: "albums",
  image: "images",
  token: "tokens",
};

/**
 * Progress on standard error: a bar redrawn in place on a terminal, plain lines in a pipe (a phase's start, its
 * first record, then at most one line a second, and its end), so a log keeps a readable trace.
 */
export function progressPrinter(write: (s: string) => void, tty: boolean, now: () => number = Date.now) {
  let last = 0;
  let phase = "";
  return {
    update({ phase: kind, done, total }: Progress) {
      const name = PHASES[kind];
      const t = now();
      if (tty) {
        if (done !== total && done > 1 && t - last < 100) return;
        last = t;
        const width = 30;
        const filled = total > 0 ? Math.round((done / total) * width) : width;
        write(`\r${name.padEnd(10)} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total}\x1b[K${done === total ? "\n" : ""}`);
        return;
      }
      const first = name !== phase;
      phase = name;
      if (!first && done !== 1 && done !== total && t - last < 1000) return;
      last = t;
      write(`${name} ${done}/${total}\n`);
    },
  };
}

function printReport(line: (s: string) => void, r: ImportReport) {
  line(`${r.dry_run ? "Dry run (nothing written): " : ""}Lsky Pro import from ${r.source} in ${(r.duration_ms / 1000).toFixed(1)} s`);
  line("");
  line(`${"".padEnd(12)}${"imported".padStart(10)}${"skipped".padStart(10)}${"refused".padStart(10)}`);
  for (const [kind, c] of Object.entries(r.counts)) {
    line(`${PHASES[kind as Progress["phase"]].padEnd(12)}${String(c.imported).padStart(10)}${String(c.skipped).padStart(10)}${String(c.refused).padStart(10)}`);
  }
  line("(skipped: imported by an earlier run)");
  if (r.strategies.length > 0) {
    line("");
    line("Strategies:");
    for (const s of r.strategies) {
      const where = s.id === null ? "not imported" : `strategy ${s.id}${s.root ? `, files ${r.adopt ? "kept in" : "copied from"} ${s.root}` : ""}`;
      line(`  Lsky ${s.lsky_id} "${s.name}" (${s.driver}): ${where}${s.legacy_url ? `; its former addresses ${s.legacy_url}/… answer 301` : ""}`);
    }
  }
  if (r.refused.length > 0) {
    line("");
    line(`Refused (${r.refused.length}):`);
    for (const x of r.refused) line(`  ${x.kind} ${x.lsky_id} ${x.what}: ${x.reason}`);
  }
  if (r.moved.length > 0) {
    line("");
    line(`Imported under a new address (${r.moved.length}):`);
    for (const m of r.moved) line(`  image ${m.key}: ${m.old_url} -> ${m.new_url} (${m.reason})`);
  }
  if (r.notes.length > 0) {
    line("");
    line("Notes:");
    for (const n of r.notes) line(`  ${n}`);
  }
}

export const importCommands: CommandGroup = {
  title: "Importing another host (local operations on DATA_DIR / DATABASE_URL):",
  commands: {
    lsky: command({
      usage: "--database <url> --uploads <dir> [--strategy-root <id>=<dir> …] [--adopt] [--dry-run] [--timezone <zone>]",
      summary: "Import a Lsky Pro 2.x site: groups, strategies, users, albums, images and tokens, keeping keys, addresses and passwords",
      options: ["database", "uploads", "strategy_root", "timezone"],
      flags: ["adopt", "dry_run"],
      repeatable: ["strategy_root"],
      notes: [
        "    --database mysql://user:pass@host/lsky, postgres://… or sqlite:///path/to/database.sqlite (read only, never written).",
        "    --uploads: Lsky's storage/app/uploads; --strategy-root ID=DIR for a local strategy whose files are elsewhere.",
        "    --adopt keeps local files where they are (the strategy's root becomes Lsky's); otherwise they are copied to DATA_DIR/uploads.",
        "    --timezone: Lsky's time zone for its timestamps (default Asia/Shanghai, Lsky Pro's own). Runs again safely: what is imported is skipped.",
        "    See docs/moving-from-lsky.md: back up both sides first.",
      ],
      async run(inv) {
        const { options, out } = inv;
        const database = requireOption(inv, "database", "<url>");
        const uploads = requireOption(inv, "uploads", "<dir>");
        const strategyRoots = new Map<number, string>();
        for (const spec of optionList(options.strategy_root)) {
          const m = /^(\d{1,10})=(.+)$/.exec(spec);
          if (!m) throw usageError(`--strategy-root ${JSON.stringify(spec)}: write it as <lsky strategy id>=<dir>, e.g. --strategy-root 2=/srv/lsky/other`);
          strategyRoots.set(Number(m[1]), m[2]!);
        }
        const parsed = parseEnv();
        if ("problems" in parsed)
          throw new CliError(
            "invalid environment",
            parsed.problems.map((line) => `  ${line}`),
          );
        const env = parsed.env;
        const progress = progressPrinter((s) => process.stderr.write(s), process.stderr.isTTY === true);
        let report: ImportReport;
        try {
          report = await importFromLsky({
            database,
            uploads,
            strategyRoots,
            adopt: options.adopt === "true",
            dryRun: options.dry_run === "true",
            timeZone: options.timezone ?? "Asia/Shanghai",
            databaseUrl: env.DATABASE_URL,
            dataDir: env.DATA_DIR,
            baseUrl: env.BASE_URL,
            onProgress: (p) => progress.update(p),
          });
        } catch (e) {
          if (e instanceof LskyImportError) throw new CliError(e.message, e.details);
          throw e;
        }
        out.result(report, () => printReport((s) => out.line(s), report));
      },
    }),
  },
};
