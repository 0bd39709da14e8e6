import type { components } from "../../../openapi/schema";
import { payload } from "../client.ts";
import { command, type CommandGroup, requireOption } from "../command.ts";
import { parseId, parseInteger } from "../values.ts";

type StripMetadataItem = components["schemas"]["StripMetadataItem"];

/** `changed #12 abc (2026/11/02/x.jpg): EXIF GPS, XMP; 36498 → 35707 bytes` / `skipped #13 …: why` */
function describe(item: StripMetadataItem, dryRun: boolean): string {
  const what = item.action === "changed" ? (dryRun ? "would change" : "changed") : "skipped";
  const head = `${what} #${item.id} ${item.key} (${item.pathname})`;
  if (item.action === "skipped") return `${head}: ${item.reason ?? "no reason given"}`;
  const removed = item.removed.length ? item.removed.join(", ") : "nothing removed";
  return `${head}: ${removed}; ${item.size_before} → ${item.size_after} bytes${item.reason ? ` (${item.reason})` : ""}`;
}

export const imageCommands: CommandGroup = {
  title: "Images:",
  commands: {
    "strip-metadata": command({
      usage: "--group <id> [--dry-run] [--after-id <id>] [--batch <n>]",
      summary: "Apply a group's metadata policy to the images it already has (same addresses; resumable)",
      notes: [
        "    Works in batches in image id order (--batch, default 100); each line says what was changed or skipped and why.",
        "    Each batch is committed as it goes: run it again after an interruption (images already done are skipped as",
        "    'nothing to strip'), or start after an image id with --after-id.",
      ],
      options: ["group", "after_id", "batch"],
      flags: ["dry_run"],
      async run(inv) {
        const { options, api, out } = inv;
        const id = parseId(requireOption(inv, "group", "<id>"), "--group");
        const dryRun = options.dry_run === "true";
        const limit = options.batch === undefined ? 100 : parseInteger(options.batch, "--batch");
        let afterId = options.after_id === undefined ? 0 : parseInteger(options.after_id, "--after-id");
        const totals = { changed: 0, skipped: 0, bytesBefore: 0, bytesAfter: 0 };
        const all: StripMetadataItem[] = [];
        let policy = "";
        for (;;) {
          const batch = await payload(
            api().POST("/api/admin/groups/{id}/strip-metadata", { params: { path: { id } }, body: { dry_run: dryRun, after_id: afterId, limit } }),
          );
          policy = batch.policy;
          for (const item of batch.items) {
            all.push(item);
            if (item.action === "changed") {
              totals.changed++;
              totals.bytesBefore += item.size_before;
              totals.bytesAfter += item.size_after;
            } else totals.skipped++;
          }
          if (batch.next_after_id === null) break;
          afterId = batch.next_after_id;
        }
        const summary = { group_id: id, policy, dry_run: dryRun, changed: totals.changed, skipped: totals.skipped, items: all };
        out.result(summary, () => {
          for (const item of all) out.line(describe(item, dryRun));
          out.line(
            `${dryRun ? "Dry run (nothing written): would change" : "Changed"} ${totals.changed}, skipped ${totals.skipped} ` +
              `(group ${id}, policy ${policy}); ${totals.bytesBefore - totals.bytesAfter} bytes ${dryRun ? "would be " : ""}freed.`,
          );
        });
      },
    }),
  },
};
