/**
 * Logging: pino, one JSON object a line (LOG_FORMAT=json, the default when stdout is not a terminal) or a readable
 * line (LOG_FORMAT=pretty, the default on a terminal), at LOG_LEVEL.
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
export type LogFormat = "json" | "pretty";
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LogOptions {
  format: LogFormat;
  level: LogLevel;
  /** Where lines go (default: standard output). */
  destination?: DestinationStream;
}

const REDACTED_KEYS = ["authorization", "cookie", "password", "token", "adminToken", "secret_access_key", "access_key_id"];

const PRETTY = { translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname", singleLine: true } as const;

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

export function logOptionsFrom(env: Record<string, string | undefined>): LogOptions {
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
