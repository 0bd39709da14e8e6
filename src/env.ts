import { z } from "zod";
import { parseAllowList } from "./webhooks/address-guard.ts";
import { parseKey } from "./webhooks/secret-box.ts";
import { LOG_LEVELS } from "./observability/log.ts";

/** Whether the runtime knows `name` as an IANA time zone (or an offset zone like UTC, Etc/GMT+2). */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const bool = z
  .enum(["true", "false", "1", "0", "yes", "no"])
  .transform((v) => v === "true" || v === "1" || v === "yes");

export const envSchema = z
  .object({
    PORT: z
      .string()
      .default("3000")
      .transform((v, ctx) => {
        const port = /^\d{1,5}$/.test(v.trim()) ? Number(v) : NaN;
        if (!(port >= 0 && port <= 65535)) {
          ctx.addIssue({ code: "custom", message: `${JSON.stringify(v)} is not a port number (0–65535)` });
          return z.NEVER;
        }
        return port;
      }),
    HOST: z.string().min(1).default("0.0.0.0"),
    DATA_DIR: z.string().min(1).default("./data"),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, "must be a postgres:// or postgresql:// URL")
      .optional(),
    BASE_URL: z.url({ protocol: /^https?$/ }).optional(),
    ADMIN_TOKEN: z.string().min(32, "must be at least 32 characters (generate one with: openssl rand -base64 32)").optional(),
    TRUST_PROXY: z
      .union([bool, z.string().regex(/^\d+$/, "").transform(Number)], {
        error: "must be true, false or the number of proxies in front of the server (0–10)",
      })
      .transform((v) => (v === true ? 1 : v === false ? 0 : v))
      .pipe(z.number().int().min(0, "").max(10, "must be at most 10 proxies"))
      .default(0),
    SWEEP_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
    RECONCILE_INTERVAL_SECONDS: z.coerce.number().int().min(60).max(7 * 86_400).default(3600),
    UPLOAD_READ_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
    UPLOAD_BODIES_PER_ADDRESS: z.coerce.number().int().min(1).max(10_000).default(4),
    UPLOAD_BODIES_TOTAL: z.coerce.number().int().min(1).max(100_000).default(64),
    CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(1).max(1_000_000).default(64),
    CONNECTIONS_TOTAL: z.coerce.number().int().min(1).max(1_000_000).default(4096),
    BODY_READ_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
    UPLOAD_BODIES_PER_CALLER: z.coerce.number().int().min(1).max(100_000).default(16),
    LOG_FORMAT: z.enum(["json", "pretty"], { error: (i) => `${JSON.stringify(i.input)} is not a log format: json or pretty` }).optional(),
    LOG_LEVEL: z
      .enum(LOG_LEVELS, { error: (i) => `${JSON.stringify(i.input)} is not a log level: ${LOG_LEVELS.join(", ")}` })
      .default("info"),
    LOG_OBJECT_REQUESTS: bool.default(true),
    METRICS_TOKEN: z.string().min(16, "must be at least 16 characters (generate one with: openssl rand -base64 24)").optional(),
    // issue 19: webhooks. Hosts and ranges a webhook may reach although loopback, private or link-local
    WEBHOOK_ALLOW: z
      .string()
      .optional()
      .transform((v, ctx) => {
        try {
          return parseAllowList(v);
        } catch (e) {
          ctx.addIssue({ code: "custom", message: (e as Error).message.replace(/^WEBHOOK_ALLOW: /, "") });
          return z.NEVER;
        }
      }),
    WEBHOOK_SECRET_KEY: z
      .string()
      .optional()
      .refine((v) => v === undefined || isKey(v), "must be 32 bytes: 64 hex digits or base64 (generate one with: openssl rand -base64 32)"),
    WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(8),
    TZ: z
      .string()
      .refine(isTimeZone, { error: (i) => `${JSON.stringify(i.input)} is not a time zone (use a name like UTC or Europe/Paris)` })
      .optional(),
  })
  .transform((e) => ({
    ...e,
    BASE_URL: (e.BASE_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ""),
  }));

function isKey(v: string) {
  try {
    parseKey(v, "WEBHOOK_SECRET_KEY");
    return true;
  } catch {
    return false;
  }
}

export type Env = z.infer<typeof envSchema>;

/** Variables whose value a start-up error never shows (DATABASE_URL may hold a password). */
const SECRET_VARIABLES = new Set(["ADMIN_TOKEN", "METRICS_TOKEN", "DATABASE_URL", "WEBHOOK_SECRET_KEY"]);

/**
 * The environment, or one line per bad variable naming it and showing what was given (never a secret):
 * `PORT: "abc" is not a port number (0–65535)`.
 */
export function parseEnv(source: Record<string, string | undefined> = process.env): { env: Env } | { problems: string[] } {
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== "")) as Record<string, string>;
  const parsed = envSchema.safeParse(cleaned);
  if (parsed.success) return { env: parsed.data };
  return {
    problems: parsed.error.issues.map((issue) => {
      const name = issue.path.join(".");
      const given = cleaned[name];
      const shown = given === undefined || SECRET_VARIABLES.has(name) || issue.message.includes(JSON.stringify(given)) ? "" : ` (given: ${JSON.stringify(given)})`;
      return `${name}: ${issue.message}${shown}`;
    }),
  };
}

/** Parses the environment once; on a bad value prints which variable is wrong and exits with 1. */
export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  const parsed = parseEnv(source);
  if ("problems" in parsed) {
    for (const line of parsed.problems) console.error(line);
    process.exit(1);
  }
  return parsed.env;
}
