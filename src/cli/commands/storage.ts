import type { components } from "../../../openapi/schema";
import { payload } from "../client.ts";
import { command, type CommandGroup } from "../command.ts";
import type { Output } from "../output.ts";
import { QUARANTINE_DAYS, QUARANTINE_PREFIX } from "../../services/reconcile/names.ts";

type Reconciliation = components["schemas"]["Reconciliation"];
type LocationReconciliation = components["schemas"]["LocationReconciliation"];

/** `label: summary`, then the listed entries, and how many the server left out of its list. */
function listed(out: Output, label: string, summary: string, count: number, entries: string[]) {
  out.line(`  ${label}: ${summary}`);
  for (const entry of entries) out.line(`    ${entry}`);
  if (count > entries.length) out.line(`    … and ${count - entries.length} more`);
}

function printLocation(out: Output, l: LocationReconciliation, dryRun: boolean) {
  const found = (n: number, removed: number, verb = "removed") => `${n} found${dryRun ? "" : `, ${removed} ${verb}`}`;
  out.line(`${l.strategies.map((s) => `#${s.id} ${s.name}`).join(", ")} (${l.driver}):`);
  out.line(
    `  objects scanned: ${l.objects_scanned} (${l.recent_objects} younger than the grace period, ${l.unrecognised_objects} not named by this service: left alone)`,
  );
  listed(
    out,
    "orphans",
    found(l.orphans_found, l.orphans_removed, `moved to ${QUARANTINE_PREFIX}<date>/ (kept ${QUARANTINE_DAYS} days)`),
    l.orphans_found,
    l.orphans,
  );
  out.line(`  temporary files of abandoned writes: ${found(l.parts_found, l.parts_removed)}`);
  const missing = l.missing_objects.map((m) => `${m.key}: ${m.path}`);
  listed(out, "records whose object is missing", String(l.records_missing_object), l.records_missing_object, missing);
  if (l.errors.length > 0) listed(out, "errors", String(l.errors.length), l.errors.length, l.errors);
}

function printReconciliation(out: Output, r: Reconciliation) {
  if (r.skipped) {
    out.line("Another reconciliation is running (on this or another instance): nothing was scanned.");
    return;
  }
  out.line(`${r.dry_run ? "Dry run (nothing removed)" : "Reconciled"} in ${r.duration_ms} ms; grace period ${r.grace_seconds} s.`);
  for (const location of r.locations) printLocation(out, location, r.dry_run);
}

export const storageCommands: CommandGroup = {
  title: "Storage:",
  commands: {
    reconcile: command({
      usage: "[--dry-run]",
      summary: `Quarantine stored objects no image names (purged after ${QUARANTINE_DAYS} days); report images whose object is missing`,
      flags: ["dry_run"],
      async run({ options, api, out }) {
        const report = await payload(api().POST("/api/admin/storage/reconcile", { body: { dry_run: options.dry_run === "true" } }));
        out.result(report, () => printReconciliation(out, report));
      },
    }),
  },
};
