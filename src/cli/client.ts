/**
 * The admin API client: openapi-fetch over the committed spec's types, so a request or response
 * that drifts from openapi/schema.d.ts fails the type check. It talks to a running server at
 * BASE_URL with ADMIN_TOKEN and never opens the database.
 */
import { readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { userInfo } from "node:os";
import { join, resolve } from "node:path";
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { paths } from "../../openapi/schema";
import { CliError } from "./errors.ts";

export type Env = Record<string, string | undefined>;
export type AdminApi = Client<paths>;

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

/**
 * Who this process runs as, for messages: `alice (uid 1000)`, or `uid 1000` when the uid has no name. The name comes
 * from the user database (/etc/passwd, else `id -un`), not from $USER, which sudo and su may leave as it was (and
 * which Bun's os.userInfo() reads).
 */
function currentUser(): string {
  const uid = process.getuid?.();
  if (uid === undefined) return userInfo().username;
  const name = nameInPasswd(uid) ?? nameFromId();
  return name ? `${name} (uid ${uid})` : `uid ${uid}`;
}

function nameInPasswd(uid: number): string | undefined {
  try {
    return readFileSync("/etc/passwd", "utf8")
      .split("\n")
      .map((line) => line.split(":"))
      .find((f) => f.length > 2 && f[2] === String(uid))?.[0];
  } catch {
    return undefined;
  }
}

function nameFromId(): string | undefined {
  const r = spawnSync("id", ["-un"], { encoding: "utf8", timeout: 2000 });
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : undefined;
}

const TOKEN_HINTS = [
  "Set ADMIN_TOKEN to the server's admin token, or DATA_DIR to the server's data directory",
  "(the server writes DATA_DIR/admin-token at its first start when ADMIN_TOKEN is unset).",
];

/** ADMIN_TOKEN, else the contents of DATA_DIR/admin-token; a file that is missing, empty or unreadable says which. */
function resolveAdminToken(env: Env): string {
  if (env.ADMIN_TOKEN) return env.ADMIN_TOKEN;
  const file = resolve(join(env.DATA_DIR || "./data", "admin-token"));
  let token: string;
  try {
    token = readFileSync(file, "utf8").trim();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new CliError(`no admin token: ADMIN_TOKEN is not set and ${file} does not exist`, TOKEN_HINTS);
    }
    if (code === "EACCES" || code === "EPERM") {
      throw new CliError(`cannot read the admin token: permission denied on ${file} for ${currentUser()}`, [
        "Run the CLI as the user the server runs as (the owner of DATA_DIR), e.g. with sudo -u,",
        "or set ADMIN_TOKEN to the server's admin token.",
      ]);
    }
    throw new CliError(`cannot read the admin token from ${file}: ${(e as Error).message}`, TOKEN_HINTS);
  }
  if (!token) throw new CliError(`no admin token: ADMIN_TOKEN is not set and ${file} is empty`, TOKEN_HINTS);
  return token;
}

export function connect(env: Env): AdminApi {
  const baseUrl = resolveBaseUrl(env);
  const token = resolveAdminToken(env);
  const api = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${token}`, accept: "application/json" } });
  api.use(onlyTheApi(baseUrl));
  return api;
}

/**
 * Turns what is not an answer of the API (no server, or a body that is not the JSON envelope)
 * into a CliError, before openapi-fetch tries to read the body as the spec's types.
 */
function onlyTheApi(baseUrl: string): Middleware {
  return {
    onError({ error }) {
      return new CliError(`cannot reach the server at BASE_URL=${baseUrl} (${error instanceof Error ? error.message : String(error)})`, [
        "Is the server running (bun run server)? Set BASE_URL to its address if it is not the default.",
      ]);
    },
    async onResponse({ request, response }) {
      if (!isEnvelope(await response.clone().text())) {
        throw new CliError(`unexpected HTTP ${response.status} answer from ${request.method} ${request.url} (not the JSON API envelope)`, [
          `Check that BASE_URL=${baseUrl} points at the image host.`,
        ]);
      }
    },
  };
}

function isEnvelope(text: string): boolean {
  try {
    const body: unknown = JSON.parse(text);
    return typeof body === "object" && body !== null && "status" in body && typeof body.status === "boolean";
  } catch {
    return false;
  }
}

/** The contract's envelope, less its `data`; `errors` (field → messages) comes with validation failures. */
interface EnvelopeHead {
  status: boolean;
  message?: string;
  errors?: Record<string, string[]>;
}

/** What openapi-fetch resolves to: the success body in `data`, an error status's body in `error`. */
interface ApiResult<SuccessBody> {
  data?: EnvelopeHead & SuccessBody;
  error?: EnvelopeHead;
  response: Response;
}

/** The `data` of a successful answer; a failure becomes a CliError. */
export async function payload<T>(request: Promise<ApiResult<{ data: T }>>): Promise<T> {
  const { data, error, response } = await request;
  if (response.ok && data?.status === true) return data.data;
  throw failure(response, error ?? data);
}

/** Awaits an operation whose `data` is null (the generated types leave null-typed fields out, so there is nothing to return). */
export async function succeeded(request: Promise<ApiResult<object>>): Promise<void> {
  const { data, error, response } = await request;
  if (!(response.ok && data?.status === true)) throw failure(response, error ?? data);
}

/**
 * The server's message, a line per field error, and a hint on 401. `envelope` is the error body, or the
 * success-status body of a 2xx answer whose envelope says `status: false`.
 */
function failure(response: Response, envelope: EnvelopeHead | undefined): CliError {
  // the message is the first field error (errors.ts): listed again under its field it would be said twice
  const message = envelope?.message || `HTTP ${response.status}`;
  const details = Object.entries(envelope?.errors ?? {}).flatMap(([field, messages]) =>
    [messages]
      .flat()
      .filter((m) => m !== message)
      .map((m) => `  ${field}: ${m}`),
  );
  if (response.status === 401) details.push("Check ADMIN_TOKEN (or DATA_DIR/admin-token): it must match the server's.");
  return new CliError(message, details);
}
