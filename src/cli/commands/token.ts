import { payload, succeeded } from "../client.ts";
import { command, type CommandGroup } from "../command.ts";
import { cell } from "../output.ts";
import { parseId } from "../values.ts";
import { morePages, PAGE_USAGE, pageOptions, resolveUser } from "./user.ts";

export const tokenCommands: CommandGroup = {
  title: "Tokens:",
  commands: {
    create: command({
      usage: "<user> [--label <text>]",
      summary: 'Create a permanent API token (printed alone on the last line); --label names it, e.g. "laptop ShareX"',
      args: ["user"],
      options: ["label"],
      async run({ args, options, api, out }) {
        const user = await resolveUser(api(), args.user);
        const body = options.label === undefined ? undefined : { label: options.label };
        const token = await payload(api().POST("/api/admin/users/{id}/tokens", { params: { path: { id: user.id } }, body }));
        out.result(token, () => {
          const named = options.label?.trim() ? ` "${options.label.trim()}"` : "";
          out.line(`Created token ${token.id}${named} for ${user.label}; it is shown only once (revoke with: token revoke ${token.id}):`);
          out.line(token.token);
        });
      },
    }),
    list: command({
      usage: `<user> ${PAGE_USAGE}`,
      summary: "List a user's tokens (never their secrets), a page at a time (default: the first 100)",
      notes: ["    columns: ID, LABEL, KIND, CREATED, LAST USED (never: -), EXPIRES, REVOKED, PARENT (the token that issued a temporary one)"],
      args: ["user"],
      options: ["page", "per_page"],
      async run({ args, options, api, out }) {
        const { id } = await resolveUser(api(), args.user);
        const query = pageOptions(options);
        const data = await payload(api().GET("/api/admin/users/{id}/tokens", { params: { path: { id }, query } }));
        out.result(data, () => {
          out.table(
            ["ID", "LABEL", "KIND", "CREATED", "LAST USED", "EXPIRES", "REVOKED", "PARENT"],
            data.tokens.map((t) => [
              cell(t.id),
              cell(t.label || null),
              t.kind,
              t.created_at,
              cell(t.last_used_at),
              cell(t.expired_at),
              cell(t.revoked_at),
              cell(t.parent_token_id),
            ]),
          );
          morePages(out, data, "tokens");
        });
      },
    }),
    revoke: command({
      usage: "<token-id>",
      summary: "Revoke a token and the temporary tokens it issued",
      args: ["token"],
      async run({ args, api, out }) {
        // The full `id|raw` value is accepted too: its id is the part before the bar.
        const id = parseId(args.token.split("|")[0]!, "token id");
        await succeeded(api().DELETE("/api/admin/tokens/{id}", { params: { path: { id } } }));
        out.result(null, () => out.line(`Revoked token ${id}.`));
      },
    }),
  },
};
