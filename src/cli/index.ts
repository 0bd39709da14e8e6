/**
 * Administration CLI: a thin HTTP client of the server's admin API (/api/admin/*).
 * It never opens the database; it talks to a running server at BASE_URL with ADMIN_TOKEN.
 *
 *   bun run cli <command> [args] [--json]
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { components } from "../../openapi/schema";

export type Env = Record<string, string | undefined>;
export interface Io {
  out(s: string): void;
  err(s: string): void;
}

const USAGE = `Usage: bun run cli <command> [arguments] [--json]

Users (<user> is a username or a numeric id):
  user create <username> --email <e> [--name <n>] [--password <p>] [--group <id>] [--capacity <kb>]
                                     Create a user
  user show <user>                   Show one user
  user list                          List all users
  user enable <user>                 Enable a user's account
  user disable <user>                Disable a user's account (its API calls get 403)
  user set <user> [--group <id>] [--capacity <kb|default>] [--name <n>]
                                     Change a user's group, capacity or display name

Tokens:
  token create <user>                Create a permanent API token (printed alone on the last line)
  token revoke <token-id>            Revoke a token

Settings:
  settings get                       Show the site settings
  settings set <api_enabled|guest_upload_enabled> <true|false>
                                     Change a site setting

Groups:
  group list                         List user groups
  group create <name> [--field value ...]
                                     Create a group
  group set <id> --field value ...   Change a group
    fields: --enabled, --allow-api, --is-default, --review-fail-open (true|false);
            --max-file-size-kb, --max-pixels, --default-capacity-kb, --review-timeout-ms (integer);
            --uploads-per-minute|-hour|-day|-week|-month, --concurrent-uploads,
            --retention-max-seconds (integer or null); --review-provider none|webhook;
            --review-webhook-url <url|null>; --allowed-extensions jpg,png,...; --strategy-ids 2,1;
            --name <name>

Storage strategies:
  strategy list                      List storage strategies
  strategy create <name> --driver local|s3 [--quota-kb <N|null>] [--config '<json>'] [--enabled true|false]
                                     Create a storage strategy
  strategy set <id> [--name <n>] [--driver local|s3] [--quota-kb <N|null>] [--config '<json>'] [--enabled true|false]
                                     Change a storage strategy

Albums:
  album create <user> <name>         Create an album for a user

Other:
  help, --help                       Show this help

Options:
  --json                             Print the raw response data as JSON

Environment:
  BASE_URL      Server address (default http://localhost:$PORT, PORT defaulting to 3000)
  ADMIN_TOKEN   Admin token (default: the contents of $DATA_DIR/admin-token, DATA_DIR defaulting to ./data)`;

/** A failure to report as `error: <message>` (plus field errors and hints), exit code 1. */
class CliError extends Error {
  constructor(
    message: string,
    readonly details: string[] = [],
    readonly showUsage = false,
  ) {
    super(message);
  }
}

const usageError = (message: string) => new CliError(message, [], true);

// ---------------------------------------------------------------------------------------------
// Arguments

interface Parsed {
  positionals: string[];
  flags: Map<string, string>;
  json: boolean;
  help: boolean;
}

/** Hand parsing: every `--flag` takes a value (`--flag v` or `--flag=v`) except --json and --help. */
function parseArgs(argv: string[]): Parsed {
  const parsed: Parsed = { positionals: [], flags: new Map(), json: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      parsed.positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === "--json") parsed.json = true;
    else if (arg === "--help" || arg === "-h") parsed.help = true;
    else if (arg.startsWith("--") && arg.length > 2) {
      const eq = arg.indexOf("=");
      const name = (eq === -1 ? arg.slice(2) : arg.slice(2, eq)).replace(/-/g, "_");
      let value: string;
      if (eq !== -1) value = arg.slice(eq + 1);
      else {
        const next = argv[i + 1];
        if (next === undefined || (next.startsWith("--") && next.length > 2)) throw usageError(`option --${arg.slice(2)} needs a value`);
        value = next;
        i++;
      }
      if (parsed.flags.has(name)) throw usageError(`option --${name.replace(/_/g, "-")} given twice`);
      parsed.flags.set(name, value);
    } else parsed.positionals.push(arg);
  }
  return parsed;
}

const dashed = (name: string) => `--${name.replace(/_/g, "-")}`;

function onlyFlags(flags: Map<string, string>, allowed: readonly string[], command: string) {
  for (const name of flags.keys()) {
    if (!allowed.includes(name)) throw usageError(`unknown option ${dashed(name)} for '${command}'`);
  }
}

function positionals(p: Parsed, count: number, synopsis: string): string[] {
  const args = p.positionals.slice(2);
  if (args.length !== count) {
    throw usageError(`${args.length < count ? "missing" : "too many"} arguments; usage: ${synopsis}`);
  }
  return args;
}

// ---------------------------------------------------------------------------------------------
// Value parsing

function parseBool(value: string, label: string): boolean {
  const v = value.toLowerCase();
  if (v === "true") return true;
  if (v === "false") return false;
  throw usageError(`${label} must be true or false, got '${value}'`);
}

function parseInt_(value: string, label: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw usageError(`${label} must be an integer, got '${value}'`);
  return Number(value.trim());
}

const parseNullableInt = (value: string, label: string) => (value === "null" ? null : parseInt_(value, label));

function parseId(value: string, label: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw usageError(`${label} must be a positive integer id, got '${value}'`);
  return Number(value);
}

const splitList = (value: string) =>
  value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

function parseJsonObject(value: string, label: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (e) {
    throw usageError(`${label} must be a JSON object: ${(e as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw usageError(`${label} must be a JSON object`);
  return parsed as Record<string, unknown>;
}

type FieldType = "string" | "nullable_string" | "bool" | "int" | "nullable_int" | "string_list" | "int_list" | "json";

function parseField(type: FieldType, value: string, label: string): unknown {
  switch (type) {
    case "string":
      return value;
    case "nullable_string":
      return value === "null" ? null : value;
    case "bool":
      return parseBool(value, label);
    case "int":
      return parseInt_(value, label);
    case "nullable_int":
      return parseNullableInt(value, label);
    case "string_list":
      return splitList(value).map((s) => s.toLowerCase());
    case "int_list":
      return splitList(value).map((s) => parseInt_(s, `${label} item`));
    case "json":
      return parseJsonObject(value, label);
  }
}

const GROUP_FIELDS: Record<string, FieldType> = {
  name: "string",
  enabled: "bool",
  allow_api: "bool",
  is_default: "bool",
  max_file_size_kb: "int",
  allowed_extensions: "string_list",
  max_pixels: "int",
  uploads_per_minute: "nullable_int",
  uploads_per_hour: "nullable_int",
  uploads_per_day: "nullable_int",
  uploads_per_week: "nullable_int",
  uploads_per_month: "nullable_int",
  concurrent_uploads: "nullable_int",
  retention_max_seconds: "nullable_int",
  default_capacity_kb: "int",
  review_provider: "string",
  review_webhook_url: "nullable_string",
  review_timeout_ms: "int",
  review_fail_open: "bool",
  strategy_ids: "int_list",
};

const STRATEGY_FIELDS: Record<string, FieldType> = {
  name: "string",
  driver: "string",
  config: "json",
  quota_kb: "nullable_int",
  enabled: "bool",
};

/** Turns `--field value` flags into a JSON body, typed by the field table; unknown flags are errors. */
function fieldsBody(flags: Map<string, string>, table: Record<string, FieldType>, command: string): Record<string, unknown> {
  onlyFlags(flags, Object.keys(table), command);
  const body: Record<string, unknown> = {};
  for (const [name, value] of flags) body[name] = parseField(table[name]!, value, dashed(name));
  return body;
}

// ---------------------------------------------------------------------------------------------
// HTTP

interface Client {
  baseUrl: string;
  call<T = any>(method: string, path: string, body?: unknown): Promise<T>;
}

function resolveBaseUrl(env: Env): string {
  const raw = env.BASE_URL || `http://localhost:${env.PORT || 3000}`;
  try {
    const url = new URL(raw);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error();
  } catch {
    throw new CliError(`BASE_URL is not an http(s) URL: '${raw}'`);
  }
  return raw.replace(/\/+$/, "");
}

function resolveAdminToken(env: Env): string {
  if (env.ADMIN_TOKEN) return env.ADMIN_TOKEN;
  const file = resolve(join(env.DATA_DIR || "./data", "admin-token"));
  const token = existsSync(file) ? readFileSync(file, "utf8").trim() : "";
  if (!token) {
    throw new CliError(`no admin token: ADMIN_TOKEN is not set and ${file} does not exist or is empty`, [
      "Set ADMIN_TOKEN to the server's admin token, or DATA_DIR to the server's data directory",
      "(the server writes DATA_DIR/admin-token at its first start when ADMIN_TOKEN is unset).",
    ]);
  }
  return token;
}

function makeClient(env: Env): Client {
  const baseUrl = resolveBaseUrl(env);
  const token = resolveAdminToken(env);
  return {
    baseUrl,
    async call(method, path, body) {
      const url = `${baseUrl}${path}`;
      let res: Response;
      try {
        res = await fetch(url, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            accept: "application/json",
            ...(body !== undefined ? { "content-type": "application/json" } : {}),
          },
          body: body !== undefined ? JSON.stringify(body) : undefined,
        });
      } catch (e) {
        throw new CliError(`cannot reach the server at BASE_URL=${baseUrl} (${(e as Error).message})`, [
          "Is the server running (bun run server)? Set BASE_URL to its address if it is not the default.",
        ]);
      }
      const text = await res.text();
      let envelope: { status?: unknown; message?: unknown; data?: unknown; errors?: unknown } | undefined;
      try {
        envelope = JSON.parse(text);
      } catch {}
      if (typeof envelope !== "object" || envelope === null || typeof envelope.status !== "boolean") {
        throw new CliError(`unexpected HTTP ${res.status} answer from ${method} ${url} (not the JSON API envelope)`, [
          `Check that BASE_URL=${baseUrl} points at the image host.`,
        ]);
      }
      if (!res.ok || envelope.status !== true) {
        const message = typeof envelope.message === "string" && envelope.message ? envelope.message : `HTTP ${res.status}`;
        const details: string[] = [];
        if (envelope.errors && typeof envelope.errors === "object") {
          for (const [field, messages] of Object.entries(envelope.errors as Record<string, unknown>)) {
            for (const m of Array.isArray(messages) ? messages : [messages]) details.push(`  ${field}: ${String(m)}`);
          }
        }
        if (res.status === 401) details.push("Check ADMIN_TOKEN (or DATA_DIR/admin-token): it must match the server's.");
        throw new CliError(message, details);
      }
      return envelope.data as any;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Output

function formatValue(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(Math.round(v * 100) / 100);
  if (Array.isArray(v)) return v.map(formatValue).join(",");
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function keyValues(io: Io, obj: Record<string, unknown>) {
  const width = Math.max(0, ...Object.keys(obj).map((k) => k.length));
  for (const [k, v] of Object.entries(obj)) io.out(`${`${k}:`.padEnd(width + 1)} ${formatValue(v)}`);
}

function table(io: Io, headers: string[], rows: string[][]) {
  if (rows.length === 0) {
    io.out("(none)");
    return;
  }
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  io.out(line(headers));
  for (const r of rows) io.out(line(r));
}

const cell = (v: unknown) => (v === null || v === undefined ? "-" : formatValue(v));

/** The admin API's user, as the committed spec describes it. */
type AdminUser = components["schemas"]["AdminUser"];

function showUser(io: Io, u: AdminUser) {
  keyValues(io, { ...u, capacity_kb: u.capacity_kb === null ? "default (the group's)" : u.capacity_kb });
}

// ---------------------------------------------------------------------------------------------
// Commands

/** A username or a numeric id → the user's id (usernames are looked up; unknown → error). */
async function resolveUserId(client: Client, ref: string): Promise<{ id: number; label: string }> {
  if (/^\d+$/.test(ref)) return { id: parseId(ref, "user id"), label: `user ${ref}` };
  const user = await findUserByName(client, ref);
  return { id: user.id, label: `${user.username} (id ${user.id})` };
}

async function findUserByName(client: Client, username: string): Promise<AdminUser> {
  const { users } = await client.call<{ users: AdminUser[] }>("GET", `/api/admin/users?username=${encodeURIComponent(username)}`);
  const user = users.find((u) => u.username === username) ?? users[0];
  if (!user) throw new CliError(`unknown user '${username}'`);
  return user;
}

async function getUser(client: Client, ref: string): Promise<AdminUser> {
  if (/^\d+$/.test(ref)) return client.call<AdminUser>("GET", `/api/admin/users/${parseId(ref, "user id")}`);
  return findUserByName(client, ref);
}

type Handler = (p: Parsed, client: () => Client, io: Io) => Promise<void>;

const print = (p: Parsed, io: Io, data: unknown, human: () => void) => {
  if (p.json) io.out(JSON.stringify(data, null, 2));
  else human();
};

const commands: Record<string, Record<string, Handler>> = {
  user: {
    async create(p, client, io) {
      const [username] = positionals(p, 1, "user create <username> --email <e> [...]");
      onlyFlags(p.flags, ["email", "name", "password", "group", "capacity"], "user create");
      const email = p.flags.get("email");
      if (email === undefined) throw usageError("user create needs --email <e>");
      const body: Record<string, unknown> = { username, email };
      if (p.flags.has("name")) body.name = p.flags.get("name");
      if (p.flags.has("password")) body.password = p.flags.get("password");
      if (p.flags.has("group")) body.group_id = parseId(p.flags.get("group")!, "--group");
      if (p.flags.has("capacity")) {
        const v = p.flags.get("capacity")!;
        body.capacity_kb = v === "default" || v === "null" ? null : parseInt_(v, "--capacity");
      }
      const user = await client().call<AdminUser>("POST", "/api/admin/users", body);
      print(p, io, user, () => {
        io.out(`Created user ${user.username} (id ${user.id}).`);
        showUser(io, user);
      });
    },
    async show(p, client, io) {
      const [ref] = positionals(p, 1, "user show <user>");
      onlyFlags(p.flags, [], "user show");
      const user = await getUser(client(), ref!);
      print(p, io, user, () => showUser(io, user));
    },
    async list(p, client, io) {
      positionals(p, 0, "user list");
      onlyFlags(p.flags, [], "user list");
      const data = await client().call<{ users: AdminUser[] }>("GET", "/api/admin/users");
      print(p, io, data, () =>
        table(
          io,
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
        ),
      );
    },
    enable: (p, client, io) => setEnabled(p, client, io, true),
    disable: (p, client, io) => setEnabled(p, client, io, false),
    async set(p, client, io) {
      const [ref] = positionals(p, 1, "user set <user> [--group <id>] [--capacity <kb|default>] [--name <n>]");
      onlyFlags(p.flags, ["group", "capacity", "name"], "user set");
      const body: Record<string, unknown> = {};
      if (p.flags.has("group")) body.group_id = parseId(p.flags.get("group")!, "--group");
      if (p.flags.has("capacity")) {
        const v = p.flags.get("capacity")!;
        body.capacity_kb = v === "default" || v === "null" ? null : parseInt_(v, "--capacity");
      }
      if (p.flags.has("name")) body.name = p.flags.get("name");
      if (Object.keys(body).length === 0) throw usageError("user set needs at least one of --group, --capacity, --name");
      const c = client();
      const { id } = await resolveUserId(c, ref!);
      const user = await c.call<AdminUser>("PATCH", `/api/admin/users/${id}`, body);
      print(p, io, user, () => {
        io.out(`Updated user ${user.username} (id ${user.id}).`);
        showUser(io, user);
      });
    },
  },

  token: {
    async create(p, client, io) {
      const [ref] = positionals(p, 1, "token create <user>");
      onlyFlags(p.flags, [], "token create");
      const c = client();
      const { id, label } = await resolveUserId(c, ref!);
      const data = await c.call<{ id: number; token: string }>("POST", `/api/admin/users/${id}/tokens`);
      print(p, io, data, () => {
        io.out(`Created token ${data.id} for ${label}; it is shown only once (revoke with: token revoke ${data.id}):`);
        io.out(data.token);
      });
    },
    async revoke(p, client, io) {
      const [ref] = positionals(p, 1, "token revoke <token-id>");
      onlyFlags(p.flags, [], "token revoke");
      // Accept the full `id|raw` value too: its id is the part before the bar.
      const id = parseId(ref!.includes("|") ? ref!.slice(0, ref!.indexOf("|")) : ref!, "token id");
      const data = await client().call<null>("DELETE", `/api/admin/tokens/${id}`);
      print(p, io, data, () => io.out(`Revoked token ${id}.`));
    },
  },

  settings: {
    async get(p, client, io) {
      positionals(p, 0, "settings get");
      onlyFlags(p.flags, [], "settings get");
      const data = await client().call<Record<string, unknown>>("GET", "/api/admin/settings");
      print(p, io, data, () => keyValues(io, data));
    },
    async set(p, client, io) {
      const [rawKey, rawValue] = positionals(p, 2, "settings set <api_enabled|guest_upload_enabled> <true|false>");
      onlyFlags(p.flags, [], "settings set");
      const key = rawKey!.replace(/-/g, "_");
      if (key !== "api_enabled" && key !== "guest_upload_enabled") {
        throw usageError(`unknown setting '${rawKey}': use api_enabled or guest_upload_enabled`);
      }
      const data = await client().call<Record<string, unknown>>("PATCH", "/api/admin/settings", {
        [key]: parseBool(rawValue!, key),
      });
      print(p, io, data, () => keyValues(io, data));
    },
  },

  group: {
    async list(p, client, io) {
      positionals(p, 0, "group list");
      onlyFlags(p.flags, [], "group list");
      const data = await client().call<{ groups: Record<string, any>[] }>("GET", "/api/admin/groups");
      print(p, io, data, () =>
        table(
          io,
          ["ID", "NAME", "FLAGS", "MAX_FILE_KB", "CAPACITY_KB", "UPLOADS m/h/d/w/mo", "CONCURRENT", "REVIEW", "STRATEGIES"],
          data.groups.map((g) => [
            cell(g.id),
            g.name,
            [g.enabled ? "enabled" : "disabled", g.is_default && "default", g.is_guest && "guest", g.allow_api ? "api" : "no-api"]
              .filter(Boolean)
              .join(","),
            cell(g.max_file_size_kb),
            cell(g.default_capacity_kb),
            [g.uploads_per_minute, g.uploads_per_hour, g.uploads_per_day, g.uploads_per_week, g.uploads_per_month].map(cell).join("/"),
            cell(g.concurrent_uploads),
            g.review_provider,
            g.strategy_ids.length ? g.strategy_ids.join(",") : "-",
          ]),
        ),
      );
    },
    async create(p, client, io) {
      const [name] = positionals(p, 1, "group create <name> [--field value ...]");
      const body = { ...fieldsBody(p.flags, GROUP_FIELDS, "group create"), name };
      const group = await client().call<Record<string, unknown>>("POST", "/api/admin/groups", body);
      print(p, io, group, () => {
        io.out(`Created group ${group.name} (id ${group.id}).`);
        keyValues(io, group);
      });
    },
    async set(p, client, io) {
      const [ref] = positionals(p, 1, "group set <id> --field value ...");
      const id = parseId(ref!, "group id");
      const body = fieldsBody(p.flags, GROUP_FIELDS, "group set");
      if (Object.keys(body).length === 0) throw usageError("group set needs at least one --field value");
      const group = await client().call<Record<string, unknown>>("PATCH", `/api/admin/groups/${id}`, body);
      print(p, io, group, () => {
        io.out(`Updated group ${group.name} (id ${group.id}).`);
        keyValues(io, group);
      });
    },
  },

  strategy: {
    async list(p, client, io) {
      positionals(p, 0, "strategy list");
      onlyFlags(p.flags, [], "strategy list");
      const data = await client().call<{ strategies: Record<string, any>[] }>("GET", "/api/admin/strategies");
      print(p, io, data, () =>
        table(
          io,
          ["ID", "NAME", "DRIVER", "ENABLED", "QUOTA_KB", "USED_KB", "CONFIG"],
          data.strategies.map((s) => [
            cell(s.id),
            s.name,
            s.driver,
            s.enabled ? "yes" : "no",
            s.quota_kb === null ? "unlimited" : cell(s.quota_kb),
            cell(s.used_kb),
            JSON.stringify(s.config),
          ]),
        ),
      );
    },
    async create(p, client, io) {
      const [name] = positionals(p, 1, "strategy create <name> --driver local|s3 [...]");
      const body: Record<string, unknown> = { ...fieldsBody(p.flags, STRATEGY_FIELDS, "strategy create"), name };
      if (body.driver === undefined) throw usageError("strategy create needs --driver local|s3");
      const s = await client().call<Record<string, unknown>>("POST", "/api/admin/strategies", body);
      print(p, io, s, () => {
        io.out(`Created strategy ${s.name} (id ${s.id}).`);
        keyValues(io, s);
      });
    },
    async set(p, client, io) {
      const [ref] = positionals(p, 1, "strategy set <id> [--field value ...]");
      const id = parseId(ref!, "strategy id");
      const body = fieldsBody(p.flags, STRATEGY_FIELDS, "strategy set");
      if (Object.keys(body).length === 0) throw usageError("strategy set needs at least one --field value");
      const s = await client().call<Record<string, unknown>>("PATCH", `/api/admin/strategies/${id}`, body);
      print(p, io, s, () => {
        io.out(`Updated strategy ${s.name} (id ${s.id}).`);
        keyValues(io, s);
      });
    },
  },

  album: {
    async create(p, client, io) {
      const [ref, name] = positionals(p, 2, "album create <user> <name>");
      onlyFlags(p.flags, [], "album create");
      const c = client();
      const { id, label } = await resolveUserId(c, ref!);
      const album = await c.call<{ id: number; name: string }>("POST", `/api/admin/users/${id}/albums`, { name });
      print(p, io, album, () => io.out(`Created album ${album.id} "${album.name}" for ${label}.`));
    },
  },
};

async function setEnabled(p: Parsed, client: () => Client, io: Io, enabled: boolean) {
  const verb = enabled ? "enable" : "disable";
  const [ref] = positionals(p, 1, `user ${verb} <user>`);
  onlyFlags(p.flags, [], `user ${verb}`);
  const c = client();
  const { id } = await resolveUserId(c, ref!);
  const user = await c.call<AdminUser>("PATCH", `/api/admin/users/${id}`, { enabled });
  print(p, io, user, () => io.out(`User ${user.username} (id ${user.id}) ${enabled ? "enabled" : "disabled"}.`));
}

/** Runs one CLI invocation; returns the exit code. */
export async function main(argv: string[], env: Env, io: Io): Promise<number> {
  try {
    const p = parseArgs(argv);
    const [group, action] = p.positionals;
    if (p.help || group === undefined || group === "help") {
      io.out(USAGE);
      return 0;
    }
    const actions = Object.hasOwn(commands, group) ? commands[group]! : undefined;
    const handler = actions && action !== undefined && Object.hasOwn(actions, action) ? actions[action]! : undefined;
    if (!handler) {
      io.err(
        actions
          ? `error: unknown command '${[group, action].filter(Boolean).join(" ")}' (${group} takes: ${Object.keys(actions).join(", ")})`
          : `error: unknown command '${group}'`,
      );
      io.err("");
      io.err(USAGE);
      return 1;
    }
    let client: Client | undefined;
    await handler(p, () => (client ??= makeClient(env)), io);
    return 0;
  } catch (e) {
    if (!(e instanceof CliError)) {
      io.err(`error: unexpected failure: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      return 1;
    }
    io.err(`error: ${e.message}`);
    for (const line of e.details) io.err(line);
    if (e.showUsage) io.err("Run 'bun run cli --help' for the list of commands.");
    return 1;
  }
}

if (import.meta.main) {
  const code = await main(process.argv.slice(2), process.env, {
    out: (s) => console.log(s),
    err: (s) => console.error(s),
  });
  process.exitCode = code;
}
