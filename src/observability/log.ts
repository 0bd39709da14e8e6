/**
 * Logging: pino, one JSON object a line (LOG_FORMAT=json, the default when stdout is not a terminal) or a readable
 * line (LOG_FORMAT=pretty, the default on a terminal), at LOG_LEVEL. A pretty line is the message and then, as
 * `key=value`, only what the message does not already say (see prettyMessage): every field is in the JSON form.
 *
 * A request's work logs through the logger of its request (it carries `request_id`), found with `logFor(deps)`:
 * the request middleware runs the rest of the request inside `withLogger`, so services need no logger parameter.
 * Background work (sweeper, reconciler) runs inside `withLogger` with a logger of its own name.
 *
 * Secrets never reach a line: the request log is built from named fields (the route pattern, never the URL and
 * never a header), and errors go through `serializeError`, which drops what a database error carries of the
 * statement's parameters (a token hash, a password hash, a strategy's S3 keys). `redact` is a second net.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import pino, { type DestinationStream, type Logger } from "pino";
import pretty, { prettyFactory } from "pino-pretty";

export type { Logger };
type LogFormat = "json" | "pretty";
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

interface LogOptions {
  format: LogFormat;
  level: LogLevel;
  /** Where lines go (default: standard output). */
  destination?: DestinationStream;
}

const REDACTED_KEYS = ["authorization", "cookie", "password", "token", "adminToken", "secret_access_key", "access_key_id"];

/**
 * Fields a pretty line leaves out: pino's own, and the request line's sizes and client address (its message already
 * reads `GET /route 200 1.2 ms`); the JSON form keeps them.
 */
const PRETTY_OMITTED = new Set(["level", "time", "pid", "hostname", "name", "msg", "bytes_in", "bytes_out", "client"]);

const prettyValue = (v: unknown): string => {
  const text = typeof v === "string" ? v : JSON.stringify(v);
  return typeof v === "string" && /[\s="]/.test(v) ? JSON.stringify(v) : text;
};

/** Whether the message spells out this value: as one of its words (`7` is not said by `41.7`), or verbatim if it holds a space. */
const says = (message: string, words: Set<string>, value: string) => value !== "" && (/\s/.test(value) ? message.includes(value) : words.has(value));

/**
 * A pretty line's text: the message, then `key=value` for each field the message does not already spell out (the
 * request line's method, route, status and duration are in its message; its request_id is not), then an error's
 * type and message, and at error level its stack on the lines below.
 */
export function prettyMessage(log: Record<string, unknown>, messageKey = "msg"): string {
  const message = typeof log[messageKey] === "string" ? (log[messageKey] as string) : "";
  const parts = message ? [message] : [];
  const words = new Set(message.split(/\s+/).map((w) => w.replace(/^[(["']+|[)\]"',;:.…]+$/g, "")));
  let stack: string | undefined;
  for (const [key, value] of Object.entries(log)) {
    if (key === messageKey || PRETTY_OMITTED.has(key) || value === undefined || value === null) continue;
    if (key === "err" && typeof value === "object") {
      const err = value as { type?: string; message?: string; code?: unknown; stack?: string };
      parts.push(`err=${prettyValue(`${err.type ?? "Error"}: ${err.message ?? ""}${err.code !== undefined ? ` (${String(err.code)})` : ""}`)}`);
      stack = err.stack;
      continue;
    }
    if ((typeof value === "string" || typeof value === "number" || typeof value === "boolean") && says(message, words, String(value))) continue;
    parts.push(`${key}=${prettyValue(value)}`);
  }
  const text = parts.join(" ");
  const level = typeof log.level === "string" ? log.level : "";
  if (stack && (level === "error" || level === "fatal")) {
    const frames = stack
      .split("\n")
      .slice(1)
      .map((line) => `    ${line.trim()}`);
    if (frames.length > 0) return `${text}\n${frames.join("\n")}`;
  }
  return text;
}

const PRETTY = {
  translateTime: "SYS:HH:MM:ss.l",
  // `caller` would show as pino-pretty's call-site `<5>`: prettyMessage writes it as caller=5
  ignore: "pid,hostname,caller",
  // the fields are in the message (prettyMessage), not again as JSON after it; with the object hidden, singleLine
  // would only drop the line's end
  hideObject: true,
  singleLine: false,
  messageFormat: (log: Record<string, unknown>, messageKey: string) => prettyMessage(log, messageKey),
};

export function createLogger(options: LogOptions): Logger {
  let destination: DestinationStream;
  if (options.format === "pretty") {
    const given = options.destination;
    if (given) {
      const prettify = prettyFactory({ ...PRETTY, colorize: false });
      destination = { write: (line: string) => given.write(prettify(line)) };
    } else {
      destination = pretty({ ...PRETTY, destination: 1, sync: true, colorize: process.stdout.isTTY === true });
    }
  } else {
    // synchronous: the lines before a crash are written, not left in a buffer
    destination = options.destination ?? pino.destination({ dest: 1, sync: true });
  }
  return pino(
    {
      level: options.level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: serializeError },
      // named paths only: wildcard paths (`*.token`) make every line four times as slow to write
      redact: {
        paths: [...REDACTED_KEYS, "headers.authorization", "headers.cookie", "config.secret_access_key", "config.access_key_id"],
        censor: "[redacted]",
      },
    },
    destination,
  );
}

/** The process's logger when nothing else was configured: LOG_FORMAT/LOG_LEVEL of the environment, or their defaults. */
let fallback: Logger | undefined;
export function defaultLogger(): Logger {
  return (fallback ??= createLogger(logOptionsFrom(process.env)));
}

/** JSON unless standard output is a terminal. */
export const defaultLogFormat = (): LogFormat => (process.stdout.isTTY ? "pretty" : "json");

function logOptionsFrom(env: Record<string, string | undefined>): LogOptions {
  const format = env.LOG_FORMAT === "json" || env.LOG_FORMAT === "pretty" ? env.LOG_FORMAT : defaultLogFormat();
  const level = (LOG_LEVELS as readonly string[]).includes(env.LOG_LEVEL ?? "") ? (env.LOG_LEVEL as LogLevel) : "info";
  return { format, level };
}

const current = new AsyncLocalStorage<Logger>();

/** Runs `fn` with `log` as the logger that `logFor` finds (a request's, or a background job's). */
export function withLogger<T>(log: Logger, fn: () => T): T {
  return current.run(log, fn);
}

/** The logger of the work in progress: its request's or job's, else the service's own. */
export function logFor(deps: { log?: Logger }): Logger {
  return current.getStore() ?? deps.log ?? defaultLogger();
}

const PARAMS_IN_MESSAGE = /\nparams: [\s\S]*$/;
const MAX_CAUSES = 3;

/**
 * An error as a log field: type, message, code, stack and causes. A Drizzle query error's message ends with the
 * statement's parameters (`params: …`), which may be secrets: they are cut from the message and the stack, and the
 * `params`/`parameters` properties are not copied.
 */
export function serializeError(err: unknown, depth = 0): Record<string, unknown> {
  if (!(err instanceof Error)) return { message: String(err) };
  const out: Record<string, unknown> = { type: err.name, message: err.message.replace(PARAMS_IN_MESSAGE, "") };
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" || typeof code === "number") out.code = code;
  if (err.stack) {
    const firstFrame = err.stack.indexOf("\n    at ");
    out.stack = firstFrame >= 0 ? `${err.name}: ${out.message}${err.stack.slice(firstFrame)}` : err.stack.replace(PARAMS_IN_MESSAGE, "");
  }
  if (err.cause !== undefined && depth < MAX_CAUSES) out.cause = serializeError(err.cause, depth + 1);
  return out;
}
