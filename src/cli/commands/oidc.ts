/**
 * `oidc …`: the OpenID Connect providers of the sign-in page (docs/single-sign-on.md), through the admin API. The
 * client secret is read from standard input (--secret), never from the command line, and never printed.
 */
import type { components } from "../../../openapi/schema";
import { payload, succeeded } from "../client.ts";
import { command, type CommandGroup, flag } from "../command.ts";
import { CliError, usageError } from "../errors.ts";
import { cell } from "../output.ts";
import { parseBool, parseId, parseInteger, splitList } from "../values.ts";

type ProviderInput = components["schemas"]["UpdateOidcProviderInput"];
type Provider = components["schemas"]["OidcProvider"];

/** The fields given as options, by how they are typed; `client_secret` comes from standard input. */
const TEXT = ["label", "issuer", "client_id", "scopes", "username_claim", "email_claim"] as const;
const NULLABLE = ["groups_claim", "admin_group"] as const;
const BOOLS = ["auto_provision", "enabled"] as const;
const OPTIONS = ["slug", ...TEXT, ...NULLABLE, ...BOOLS, "group_map"] as const;
type Option = (typeof OPTIONS)[number];

const FIELD_NOTES = [
  "    fields: --label <button text>, --issuer <url>, --client-id <id>, --scopes 'openid profile email',",
  "            --username-claim <claim>, --email-claim <claim>, --groups-claim <claim|null>, --admin-group <value|null>,",
  "            --group-map 'family=3,friends=4' (provider group = our group id; 'null' for none),",
  "            --auto-provision true|false, --enabled true|false;",
  "    --secret reads the client secret from standard input (printf '%s\\n' \"$SECRET\" | bun run cli oidc …); --no-secret removes it",
] as const;

/** The body of `add` and `set` from the options given. */
function bodyOf(options: Partial<Record<Option, string>>): ProviderInput {
  const body: Record<string, unknown> = {};
  if (options.slug !== undefined) body.slug = options.slug;
  for (const name of TEXT) if (options[name] !== undefined) body[name] = options[name];
  for (const name of NULLABLE) if (options[name] !== undefined) body[name] = options[name] === "null" ? null : options[name];
  for (const name of BOOLS) if (options[name] !== undefined) body[name] = parseBool(options[name]!, flag(name));
  if (options.group_map !== undefined) {
    body.group_map =
      options.group_map === "null"
        ? []
        : splitList(options.group_map).map((pair) => {
            const at = pair.lastIndexOf("=");
            if (at < 1) throw usageError(`${flag("group_map")}: write each entry as <provider group>=<group id>, not "${pair}"`);
            return { value: pair.slice(0, at).trim(), group_id: parseInteger(pair.slice(at + 1).trim(), `${flag("group_map")} group id`) };
          });
  }
  return body as ProviderInput;
}

function show(out: Parameters<Parameters<typeof command>[0]["run"]>[0]["out"], verb: string, p: Provider) {
  out.result(p, () => {
    out.line(`${verb} provider ${p.slug} (id ${p.id}). Register this redirect URI at the provider: ${p.redirect_uri}`);
    out.keyValues(p);
  });
}

export const oidcCommands: CommandGroup = {
  title: "Identity providers (OpenID Connect sign-in):",
  commands: {
    list: command({
      usage: "",
      summary: "List the identity providers of the sign-in page, with their redirect URIs",
      async run({ api, out }) {
        const data = await payload(api().GET("/api/admin/oidc-providers"));
        out.result(data, () =>
          out.table(
            ["ID", "SLUG", "LABEL", "ISSUER", "FLAGS", "IDENTITIES", "REDIRECT_URI"],
            data.providers.map((p) => [
              cell(p.id),
              p.slug,
              p.label,
              p.issuer,
              [p.enabled ? "enabled" : "disabled", p.auto_provision && "auto-provision", p.client_secret_set ? "secret" : "public"].filter(Boolean).join(","),
              cell(p.identities),
              p.redirect_uri,
            ]),
          ),
        );
      },
    }),
    show: command({
      usage: "<id>",
      summary: "Show an identity provider (never its secret)",
      args: ["id"],
      async run({ args, api, out }) {
        const id = parseId(args.id, "id");
        show(out, "Read", await payload(api().GET("/api/admin/oidc-providers/{id}", { params: { path: { id } } })));
      },
    }),
    add: command({
      usage: "<slug> --label <text> --issuer <url> --client-id <id> [--secret] [--field value ...]",
      summary: "Add an identity provider; its redirect URI is BASE_URL/user/oidc/<slug>/callback",
      notes: FIELD_NOTES,
      args: ["slug"],
      options: OPTIONS.filter((o) => o !== "slug"),
      flags: ["secret"],
      async run({ name, args, options, api, out, readSecret }) {
        const body = bodyOf({ ...options, slug: args.slug });
        for (const required of ["label", "issuer", "client_id"] as const) {
          if (body[required] === undefined) throw usageError(`${name} needs ${flag(required)}`);
        }
        const secret = (options as Record<string, string | undefined>).secret ? await readSecret("Client secret: ") : "";
        if ((options as Record<string, string | undefined>).secret && secret === "") throw new CliError("no client secret given on standard input");
        const made = await payload(
          api().POST("/api/admin/oidc-providers", {
            body: { ...body, slug: args.slug, label: body.label!, issuer: body.issuer!, client_id: body.client_id!, client_secret: secret },
          }),
        );
        show(out, "Added", made);
      },
    }),
    set: command({
      usage: "<id> [--field value ...] [--secret | --no-secret]",
      summary: "Change an identity provider; the fields not given stay",
      notes: [...FIELD_NOTES, "    --slug <slug> changes the redirect URI (register the new one at the provider)"],
      args: ["id"],
      options: OPTIONS,
      flags: ["secret", "no_secret"],
      async run({ args, options, api, out, readSecret }) {
        const id = parseId(args.id, "id");
        const flags = options as Record<string, string | undefined>;
        const body = bodyOf(options);
        if (flags.secret && flags.no_secret) throw usageError("give --secret or --no-secret, not both");
        if (flags.secret) {
          body.client_secret = await readSecret("Client secret: ");
          if (body.client_secret === "") throw new CliError("no client secret given on standard input");
        }
        if (flags.no_secret) body.client_secret = "";
        if (Object.keys(body).length === 0) throw usageError("nothing to change: give at least one field");
        show(out, "Changed", await payload(api().PATCH("/api/admin/oidc-providers/{id}", { params: { path: { id } }, body })));
      },
    }),
    remove: command({
      usage: "<id>",
      summary: "Remove an identity provider and the identities linked through it (the accounts stay)",
      args: ["id"],
      async run({ args, api, out }) {
        const id = parseId(args.id, "id");
        await succeeded(api().DELETE("/api/admin/oidc-providers/{id}", { params: { path: { id } } }));
        out.result({ removed: id }, () => out.line(`Removed provider ${id}.`));
      },
    }),
  },
};
