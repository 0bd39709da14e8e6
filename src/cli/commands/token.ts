import { payload, succeeded } from "../client.ts";
import { command, type CommandGroup } from "../command.ts";
import { cell } from "../output.ts";
import { parseId } from "../values.ts";
import { morePages, resolveUser } from "./user.ts";

export const tokenCommands: CommandGroup = {
  title: "Tokens:",
  commands: {
    create: command({
      usage: "<user>",
      summary: "Create a permanent API token (printed alone on the last line)",
      args: ["user"],
      async run({ args, api, out }) {
        const { id, label } = await resolveUser(api(), args.user);
        const token = await payload(api().POST("/api/admin/users/{id}/tokens", { params: { path: { id } } }));
        out.result(token, () => {
          out.line(`Created token ${token.id} for ${label}; it is shown only once (revoke with: token revoke ${token.id}):`);
          out.line(token.token);
        });
      },
    }),
    list: command({
      usage: "<user> [--page <n>] [--per-page <n>]",
      summary: "List a user's tokens (never their secrets), a page at a time (default: the first 100)",
      args: ["user"],
      options: ["page", "per_page"],
      async run({ args, options, api, out }) {
        const { id } = await resolveUser(api(), args.user);
        const query = {
          page: options.page === undefined ? undefined : parseId(options.page, "--page"),
          per_page: options.per_page === undefined ? undefined : parseId(options.per_page, "--per-page"),
        };
        const data = await payload(api().GET("/api/admin/users/{id}/tokens", { params: { path: { id }, query } }));
        out.result(data, () => {
          out.table(
            ["ID", "KIND", "CREATED", "EXPIRES", "REVOKED", "PARENT"],
            data.tokens.map((t) => [cell(t.id), t.kind, t.created_at, cell(t.expired_at), cell(t.revoked_at), cell(t.parent_token_id)]),
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
