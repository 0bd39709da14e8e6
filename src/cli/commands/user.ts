import type { components } from "../../../openapi/schema";
import { payload, type AdminApi } from "../client.ts";
import { command, requireOption, type CommandGroup } from "../command.ts";
import { CliError, usageError } from "../errors.ts";
import { cell, type Output } from "../output.ts";
import { parseCapacity, parseId } from "../values.ts";

type AdminUser = components["schemas"]["AdminUser"];
type CreateUserInput = components["schemas"]["CreateUserInput"];
type UpdateUserInput = components["schemas"]["UpdateUserInput"];

/** A line under a listing that is not the last page: how to see the next. */
export function morePages(out: Output, data: { current_page: number; last_page: number; total: number }, what: string) {
  if (data.last_page > 1)
    out.line(
      `Page ${data.current_page} of ${data.last_page} (${data.total} ${what})${data.current_page < data.last_page ? `: --page ${data.current_page + 1} for more` : ""}.`,
    );
}

/** `--page` and `--per-page` of a listing, as the admin API's `page` and `per_page`. */
export const pageOptions = (options: { page?: string; per_page?: string }) => ({
  page: options.page === undefined ? undefined : parseId(options.page, "--page"),
  per_page: options.per_page === undefined ? undefined : parseId(options.per_page, "--per-page"),
});

/** The usage of a listing's paging options. */
export const PAGE_USAGE = "[--page <n>] [--per-page <n>]";

/** `<user>` is a username or a numeric id. */
const isId = (ref: string) => /^\d+$/.test(ref);

async function findUserByName(api: AdminApi, username: string): Promise<AdminUser> {
  const { users } = await payload(api.GET("/api/admin/users", { params: { query: { username } } }));
  const user = users.find((u) => u.username === username) ?? users[0];
  if (!user) throw new CliError(`unknown user '${username}'`);
  return user;
}

async function getUser(api: AdminApi, ref: string): Promise<AdminUser> {
  if (isId(ref)) return payload(api.GET("/api/admin/users/{id}", { params: { path: { id: parseId(ref, "user id") } } }));
  return findUserByName(api, ref);
}

/** The id of `<user>` (a username is looked up) and how messages name it. */
export async function resolveUser(api: AdminApi, ref: string): Promise<{ id: number; label: string }> {
  if (isId(ref)) return { id: parseId(ref, "user id"), label: `user ${ref}` };
  const user = await findUserByName(api, ref);
  return { id: user.id, label: `${user.username} (id ${user.id})` };
}

function showUser(out: Output, u: AdminUser) {
  out.keyValues({ ...u, capacity_kb: u.capacity_kb === null ? "default (the group's)" : u.capacity_kb });
}

const ifGiven = <T>(value: string | undefined, parse: (value: string) => T) => (value === undefined ? undefined : parse(value));

const parseGroup = (value: string) => parseId(value, "--group");

const setEnabled = (enabled: boolean) =>
  command({
    usage: "<user>",
    summary: enabled ? "Enable a user's account" : "Disable a user's account (its API calls get 403)",
    args: ["user"],
    async run({ args, api, out }) {
      const { id } = await resolveUser(api(), args.user);
      const user = await payload(api().PATCH("/api/admin/users/{id}", { params: { path: { id } }, body: { enabled } }));
      out.result(user, () => out.line(`User ${user.username} (id ${user.id}) ${enabled ? "enabled" : "disabled"}.`));
    },
  });

export const userCommands: CommandGroup = {
  title: "Users (<user> is a username or a numeric id):",
  commands: {
    create: command({
      usage: "<username> --email <e> [--name <n>] [--group <id>] [--capacity <kb>] [--admin]",
      summary: "Create a user (then 'user set-password' for the user center's sign-in); --admin: an administrator of the site's admin pages",
      args: ["username"],
      // --password is declared only to refuse it with a reason
      options: ["email", "name", "password", "group", "capacity"],
      flags: ["admin"],
      async run(inv) {
        const { args, options, api, out } = inv;
        if (options.password !== undefined) {
          throw usageError(
            `${inv.name} takes no --password (the process list and the shell history would keep it): create the user, then run 'user set-password ${args.username}'`,
          );
        }
        const email = requireOption(inv, "email", "<e>");
        const body: CreateUserInput = {
          username: args.username,
          email,
          name: options.name,
          group_id: ifGiven(options.group, parseGroup),
          capacity_kb: ifGiven(options.capacity, parseCapacity),
          ...(options.admin === "true" ? { role: "admin" as const } : {}),
        };
        const user = await payload(api().POST("/api/admin/users", { body }));
        out.result(user, () => {
          out.line(`Created user ${user.username} (id ${user.id}).`);
          showUser(out, user);
        });
      },
    }),
    show: command({
      usage: "<user>",
      summary: "Show one user",
      args: ["user"],
      async run({ args, api, out }) {
        const user = await getUser(api(), args.user);
        out.result(user, () => showUser(out, user));
      },
    }),
    list: command({
      usage: PAGE_USAGE,
      summary: "List the users, a page at a time (default: the first 100)",
      options: ["page", "per_page"],
      async run({ options, api, out }) {
        const query = pageOptions(options);
        const data = await payload(api().GET("/api/admin/users", { params: { query } }));
        out.result(data, () => {
          out.table(
            ["ID", "USERNAME", "NAME", "EMAIL", "GROUP", "ENABLED", "CAPACITY_KB", "USED_KB", "IMAGES", "ALBUMS"],
            data.users.map((u) => [
              cell(u.id),
              u.username,
              u.name,
              u.email,
              cell(u.group_id),
              u.enabled ? "yes" : "no",
              u.capacity_kb === null ? "default" : cell(u.capacity_kb),
              cell(u.used_kb),
              cell(u.image_num),
              cell(u.album_num),
            ]),
          );
          morePages(out, data, "users");
        });
      },
    }),
    "set-password": command({
      usage: "<user>",
      summary: "Set the password a user signs in to the user center with (read from standard input, or typed at a prompt)",
      notes: ["    e.g. printf '%s\\n' \"$PASSWORD\" | bun run cli user set-password alice; the user's sessions end"],
      args: ["user"],
      async run({ args, api, out, readSecret }) {
        const { id } = await resolveUser(api(), args.user);
        const password = await readSecret(`New password for ${args.user}: `, "Again: ");
        if (password === "") throw new CliError("no password given: type it at the prompt, or send it on standard input");
        const user = await payload(api().PATCH("/api/admin/users/{id}", { params: { path: { id } }, body: { password } }));
        out.result(user, () => out.line(`Password set for ${user.username} (id ${user.id}); their signed-in sessions have ended.`));
      },
    }),
    "reset-second-factor": command({
      usage: "<user>",
      summary: "Remove a user's second factors (authenticator app, recovery codes, passkeys): the way back for a lost phone or key",
      notes: ["    the password and the sessions stay; where the site requires a second factor, the user sets one up at the next sign-in"],
      args: ["user"],
      async run({ args, api, out }) {
        const { id, label } = await resolveUser(api(), args.user);
        const reset = await payload(api().DELETE("/api/admin/users/{id}/second-factors", { params: { path: { id } } }));
        out.result(reset, () =>
          out.line(
            `Removed the second factors of ${label}: ${reset.totp_removed ? "the authenticator app, " : ""}${reset.recovery_codes_removed} recovery codes, ${reset.passkeys_removed} passkeys.`,
          ),
        );
      },
    }),
    "set-role": command({
      usage: "<user> admin|user",
      summary: "Make a user an administrator of the site's admin pages, or a user again",
      args: ["user", "role"],
      async run({ name, args, api, out }) {
        if (args.role !== "admin" && args.role !== "user") throw usageError(`${name}: the role is admin or user, not "${args.role}"`);
        const { id } = await resolveUser(api(), args.user);
        const user = await payload(api().PATCH("/api/admin/users/{id}", { params: { path: { id } }, body: { role: args.role } }));
        out.result(user, () => out.line(`User ${user.username} (id ${user.id}) is now ${user.role === "admin" ? "an administrator" : "a user"}.`));
      },
    }),
    enable: setEnabled(true),
    disable: setEnabled(false),
    set: command({
      usage: "<user> [--group <id>] [--capacity <kb|default>] [--name <n>]",
      summary: "Change a user's group, capacity or display name",
      args: ["user"],
      options: ["group", "capacity", "name"],
      async run({ name, args, options, api, out }) {
        const body: UpdateUserInput = {
          group_id: ifGiven(options.group, parseGroup),
          capacity_kb: ifGiven(options.capacity, parseCapacity),
          name: options.name,
        };
        if (Object.keys(options).length === 0) throw usageError(`${name} needs at least one of --group, --capacity, --name`);
        const { id } = await resolveUser(api(), args.user);
        const user = await payload(api().PATCH("/api/admin/users/{id}", { params: { path: { id } }, body }));
        out.result(user, () => {
          out.line(`Updated user ${user.username} (id ${user.id}).`);
          showUser(out, user);
        });
      },
    }),
  },
};
