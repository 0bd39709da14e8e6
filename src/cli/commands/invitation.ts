/** Invitations to sign up while registration is closed: make, list and withdraw them (the admin API's /api/admin/invitations). */
import { payload } from "../client.ts";
import { command, type CommandGroup } from "../command.ts";
import { usageError } from "../errors.ts";
import { cell } from "../output.ts";
import { parseId, parseInteger } from "../values.ts";
import { morePages, PAGE_USAGE, pageOptions } from "./user.ts";

/** `90m`, `36h`, `7d` or seconds, as seconds. */
export function parseDuration(value: string): number {
  const m = /^(\d{1,9})([smhd]?)$/.exec(value.trim());
  if (!m) throw usageError(`--expires-in: ${JSON.stringify(value)} is not a duration (e.g. 90m, 36h, 7d, or seconds)`);
  const unit = { "": 1, s: 1, m: 60, h: 3600, d: 86_400 }[m[2] as "" | "s" | "m" | "h" | "d"];
  return Number(m[1]) * unit;
}

export const invitationCommands: CommandGroup = {
  title: "Invitations:",
  commands: {
    create: command({
      usage: "[--uses <n>] [--expires-in <duration>] [--group <id>] [--note <text>]",
      summary:
        "Make an invitation link (printed alone on the last line, shown only once): --uses accounts (default 1), valid --expires-in (90m, 36h, 7d; default 7d), into --group (default: the default group)",
      options: ["uses", "expires_in", "group", "note"],
      async run({ options, api, out }) {
        const body = {
          max_uses: options.uses === undefined ? 1 : parseInteger(options.uses, "--uses"),
          expires_in: parseDuration(options.expires_in ?? "7d"),
          group_id: options.group === undefined ? undefined : parseId(options.group, "--group"),
          note: options.note ?? "",
        };
        const made = await payload(api().POST("/api/admin/invitations", { body }));
        out.result(made, () => {
          out.line(
            `Made invitation ${made.id}: ${made.max_uses} use(s) into group ${made.group_id}, until ${made.expired_at}; the link is shown only once (withdraw with: invitation revoke ${made.id}):`,
          );
          out.line(made.url);
        });
      },
    }),
    list: command({
      usage: PAGE_USAGE,
      summary: "List the invitations (never their codes), newest first, a page at a time",
      notes: ["    columns: ID, NOTE, GROUP, USES (used/allowed), STATUS (active, used_up, expired, revoked), EXPIRES, CREATED"],
      options: ["page", "per_page"],
      async run({ options, api, out }) {
        const data = await payload(api().GET("/api/admin/invitations", { params: { query: pageOptions(options) } }));
        out.result(data, () => {
          out.table(
            ["ID", "NOTE", "GROUP", "USES", "STATUS", "EXPIRES", "CREATED"],
            data.invitations.map((i) => [cell(i.id), cell(i.note || null), cell(i.group_id), `${i.uses}/${i.max_uses}`, i.status, i.expired_at, i.created_at]),
          );
          morePages(out, data, "invitations");
        });
      },
    }),
    revoke: command({
      usage: "<invitation-id>",
      summary: "Withdraw an invitation: its link stops working; accounts made with it stay",
      args: ["invitation"],
      async run({ args, api, out }) {
        const id = parseId(args.invitation, "invitation id");
        const { invitation } = await payload(api().DELETE("/api/admin/invitations/{id}", { params: { path: { id } } }));
        out.result(invitation, () => out.line(`Withdrew invitation ${id} (${invitation.uses}/${invitation.max_uses} used).`));
      },
    }),
  },
};
