import { z } from "zod";
import { parseAllowList } from "./webhooks/address-guard.ts";
import { parseKey } from "./webhooks/secret-box.ts";
import { LOG_LEVELS } from "./observability/log.ts";
import type { SmtpConfig } from "./services/mail/config.ts";

/** Whether the runtime knows `name` as an IANA time zone (or an offset zone like UTC, Etc/GMT+2). */
function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const bool = z.enum(["true", "false", "1", "0", "yes", "no"]).transform((v) => v === "true" || v === "1" || v === "yes");

/**
 * The environment the server and the CLI read. Every variable here has its description in `envDocs` below, from
 * which `bun run docs:config` writes the table of docs/configuration.md and deploy/image-host.env.
 */
export const envShape = z.object({
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
  RECONCILE_INTERVAL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(7 * 86_400)
    .default(3600),
  UPLOAD_READ_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
  UPLOAD_BODIES_PER_ADDRESS: z.coerce.number().int().min(1).max(10_000).default(4),
  UPLOAD_BODIES_TOTAL: z.coerce.number().int().min(1).max(100_000).default(64),
  CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(1).max(1_000_000).default(64),
  CONNECTIONS_TOTAL: z.coerce.number().int().min(1).max(1_000_000).default(4096),
  BODY_READ_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  UPLOAD_BODIES_PER_CALLER: z.coerce.number().int().min(1).max(100_000).default(16),
  LOG_FORMAT: z.enum(["json", "pretty"], { error: (i) => `${JSON.stringify(i.input)} is not a log format: json or pretty` }).optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS, { error: (i) => `${JSON.stringify(i.input)} is not a log level: ${LOG_LEVELS.join(", ")}` }).default("info"),
  LOG_OBJECT_REQUESTS: bool.default(true),
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters (generate one with: openssl rand -base64 24)").optional(),
  // hosts and ranges a webhook may reach although loopback, private or link-local
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
  // the site's mail (services/mail/config.ts): set, they win over the admin Settings' SMTP fields
  SMTP_HOST: z
    .string()
    .trim()
    .max(253)
    .regex(/^[A-Za-z0-9.:[\]-]+$/, "must be a host name or an address")
    .optional(),
  SMTP_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  SMTP_SECURITY: z.enum(["starttls", "tls", "none"], { error: (i) => `${JSON.stringify(i.input)} is not starttls, tls or none` }).default("starttls"),
  SMTP_USERNAME: z.string().max(254).optional(),
  SMTP_PASSWORD: z.string().max(512).optional(),
  MAIL_FROM: z.email("must be an email address").max(254).optional(),
  TZ: z
    .string()
    .refine(isTimeZone, { error: (i) => `${JSON.stringify(i.input)} is not a time zone (use a name like UTC or Europe/Paris)` })
    .optional(),
});

export const envSchema = envShape
  .superRefine((e, ctx) => {
    if (e.SMTP_HOST && !e.MAIL_FROM) ctx.addIssue({ code: "custom", path: ["MAIL_FROM"], message: "must be set with SMTP_HOST (the sender's address)" });
  })
  .transform((e) => ({
    ...e,
    BASE_URL: (e.BASE_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ""),
  }));

/** The SMTP server the environment gives (SMTP_HOST set), or undefined: the admin Settings' then apply. */
export function smtpFromEnv(env: Env): SmtpConfig | undefined {
  if (!env.SMTP_HOST || !env.MAIL_FROM) return undefined;
  return {
    host: env.SMTP_HOST,
    port: env.SMTP_PORT ?? (env.SMTP_SECURITY === "tls" ? 465 : env.SMTP_SECURITY === "none" ? 25 : 587),
    security: env.SMTP_SECURITY,
    username: env.SMTP_USERNAME ?? "",
    password: env.SMTP_PASSWORD ?? "",
    from: env.MAIL_FROM,
  };
}

function isKey(v: string) {
  try {
    parseKey(v, "WEBHOOK_SECRET_KEY");
    return true;
  } catch {
    return false;
  }
}

export type Env = z.infer<typeof envSchema>;

/**
 * What a variable is for, in the words of docs/configuration.md (Markdown; links relative to docs/). The same text,
 * as plain comments, documents it in deploy/image-host.env; `bun run docs:config` writes both from here.
 */
export interface VariableDoc {
  /** The default as the table shows it; left out, the schema's own default (or "—" when there is none). */
  default?: string;
  description: string;
  /** A value deploy/image-host.env sets; otherwise the variable is there commented out. */
  deploy?: string;
  /** The commented-out value deploy/image-host.env shows when it sets none (else the default, else empty). */
  example?: string;
  /** Said only in deploy/image-host.env, about running under the systemd unit. */
  deployNote?: string;
  /** false: left out of deploy/image-host.env (for a server started by hand only). */
  inEnvFile?: boolean;
}

/** Every variable of the schema, in the order the docs list them (the type makes a missing one a compile error). */
export const envDocs: { [K in keyof z.input<typeof envShape>]-?: VariableDoc } = {
  HOST: {
    description: "Listening address.",
    deploy: "127.0.0.1",
    deployNote: "Behind a reverse proxy on the same machine, listen on loopback only.",
  },
  PORT: {
    description: "Listening port.",
    deploy: "3000",
    deployNote: "A port below 1024 would need AmbientCapabilities=CAP_NET_BIND_SERVICE in the unit: behind a proxy, keep a high port on 127.0.0.1.",
  },
  BASE_URL: {
    default: "`http://localhost:$PORT`",
    description:
      "The public address used in every returned URL (image links, `delete_url`, the user center's `Origin` check). Behind a TLS proxy: the https address people use, without a trailing slash.",
    deploy: "https://img.example.com",
  },
  TRUST_PROXY: {
    default: "`false`",
    description:
      "How many proxies of yours stand in front (`true` = 1; nginx alone: 1): the client address is the `X-Forwarded-For` entry that many places from the right, the one your outermost proxy appended. `0` when the server is reached directly: a client could otherwise choose its own address for the failed-authentication throttle and the per-address upload bounds. Left at `0` behind a proxy, every client has the proxy's address: one client's bad tokens throttle everyone.",
    deploy: "1",
  },
  DATA_DIR: {
    description: "The embedded PostgreSQL (`postgres/`, its log `postgres.log`), local uploads (`uploads/`), `admin-token` and `webhook-secret-key`.",
    deploy: "/var/lib/image-host",
    deployNote:
      "The unit's StateDirectory= creates /var/lib/image-host for the service user; keep DATA_DIR there, since ProtectSystem=strict leaves only it writable.",
  },
  DATABASE_URL: {
    description: "`postgres://…`: use this PostgreSQL server (15 or newer) instead of the embedded database; required for several instances.",
    example: "postgres://imagehost:secret@db.internal:5432/imagehost",
  },
  ADMIN_TOKEN: {
    default: "generated",
    description:
      "The admin API token (at least 32 characters; `openssl rand -base64 32`). If unset, read from or generated at the first start into `DATA_DIR/admin-token` (mode 600). Several instances must share one value.",
  },
  SWEEP_INTERVAL_SECONDS: { description: "How often expired images are removed, in seconds (1–3600)." },
  RECONCILE_INTERVAL_SECONDS: {
    description: "How often stored objects are reconciled with the image records, in seconds (60–604800); it also runs once at start.",
  },
  UPLOAD_READ_TIMEOUT_SECONDS: {
    description:
      "An upload body must arrive within this many seconds (1–3600), or 408. Keep the systemd unit's `TimeoutStopSec=` and the proxy's body and read timeouts above it.",
  },
  UPLOAD_BODIES_PER_ADDRESS: {
    description: "Upload bodies one client address may send at once while the sender is unknown (guests, form tokens); 429 beyond. Per instance.",
  },
  UPLOAD_BODIES_PER_CALLER: {
    description:
      "Upload bodies one known caller (a token's account) may send at once on this instance, its share of the total; 400 beyond, with `Retry-After`.",
  },
  UPLOAD_BODIES_TOTAL: { description: "Upload bodies the process receives at once, from everyone; 429 beyond, with `Retry-After`. Per instance." },
  BODY_READ_TIMEOUT_SECONDS: {
    description: "Every other body (API JSON ≤ 1 MB, user-center forms ≤ 64 KB) must arrive within this many seconds (1–3600), or 408.",
  },
  CONNECTIONS_PER_ADDRESS: {
    description: "Requests in progress per client address (IPv6 counted by its /64); beyond, 429 with `Connection: close`. Per instance.",
  },
  CONNECTIONS_TOTAL: {
    description:
      "Requests in progress in all; beyond, 503 with `Connection: close`. Keep the process's open-files limit (`LimitNOFILE=` in the systemd unit) above it. Per instance.",
  },
  LOG_FORMAT: {
    default: "`json`, or `pretty` on a terminal",
    description:
      "`json`: one JSON object per line with every field (for journald, Loki, Elasticsearch…); `pretty`: one readable line per request, `METHOD route status duration request_id=… caller=…`.",
    example: "json",
  },
  LOG_LEVEL: {
    description: "`fatal`, `error`, `warn`, `info` (one line per request), `debug` (adds the health and metrics probes), `trace` or `silent`.",
  },
  LOG_OBJECT_REQUESTS: {
    description:
      "`false`: no access line for `/i/…` object requests (still counted in the metrics; failures still logged), for when a proxy in front logs them already: the line costs more than serving a small cached object (see [operations: logs](operations.md#logs)).",
  },
  METRICS_TOKEN: {
    description:
      "When set (at least 16 characters; `openssl rand -base64 24`), `GET /metrics` needs `Authorization: Bearer <METRICS_TOKEN>`; unset, it answers only clients on this machine that talk to the server directly (no forwarding headers): scrape `http://127.0.0.1:3000/metrics`.",
  },
  WEBHOOK_ALLOW: {
    default: "—",
    description:
      "Hosts, addresses or ranges (`purge.internal,10.20.0.0/16`) a site-wide webhook, or one of a group granted `webhook_allow_internal`, may reach although loopback, private or link-local; everything else inside your network is refused.",
    example: "purge.internal,10.20.0.0/16",
  },
  WEBHOOK_SECRET_KEY: {
    default: "generated",
    description:
      "32 bytes (base64 or 64 hex digits; `openssl rand -base64 32`) that seal the webhook signing secrets; if unset, read from or generated at the first start into `DATA_DIR/webhook-secret-key` (mode 600). Every instance of one site needs the same key. A backup never holds this variable's value: keep it with the archive.",
  },
  WEBHOOK_CONCURRENCY: {
    description:
      "The webhook queue's jobs one instance runs at once (1–64). A send does not hold one: sends are bounded at 4 per endpoint, 8 per account and 256 for all users' endpoints.",
  },
  SMTP_HOST: {
    description:
      "The SMTP server of the site's mail (password reset, email verification, the test mail). Set, the `SMTP_` variables and `MAIL_FROM` win over the SMTP fields of the admin Settings, which then show these values read-only; unset, the admin Settings' apply (see [administration: mail](administration.md#mail)).",
    example: "smtp.example.com",
  },
  SMTP_PORT: { default: "587, 465 with `tls`, 25 with `none`", description: "The SMTP server's port.", example: "587" },
  SMTP_SECURITY: {
    description:
      "`starttls`: a plain connection that must be upgraded to TLS (port 587); `tls`: TLS from the first byte (port 465); `none`: no TLS, for a relay on this machine.",
  },
  SMTP_USERNAME: { description: "The SMTP login; unset, no authentication.", example: "images@example.com" },
  SMTP_PASSWORD: { description: "The SMTP password. Never shown by the admin API or pages.", example: "" },
  MAIL_FROM: { description: "The sender's address (required with `SMTP_HOST`); the sender's name is the site's name.", example: "images@example.com" },
  TZ: {
    default: "the system's",
    description:
      "The time zone of the `YYYY-MM-DD HH:MM:SS` times in answers (the contract's format), an IANA name such as `UTC` or `Europe/Paris`. A name that is not a time zone is refused at start (the runtime would silently use UTC).",
    example: "UTC",
  },
};

/** Variables read outside the schema, by the runtime or by one module. */
export const otherVariableDocs: Record<string, VariableDoc> = {
  UV_THREADPOOL_SIZE: {
    default: "`16` under `bun run server` and the systemd unit",
    description:
      "libuv's thread pool (file I/O, sharp). It also bounds the decodes run at once: as many as the machine's cores, at most `UV_THREADPOOL_SIZE` − 1.",
    example: "16",
    deployNote: "The unit sets 16, as `bun run server` does; override it here if needed.",
  },
  IMAGE_HOST_NO_USER_NAMESPACE: {
    description:
      "`1`: a server started as root runs the embedded PostgreSQL as the system user `postgres` instead of in a user namespace (see [topology: as root](topology.md#as-root)).",
    inEnvFile: false,
  },
};

/** Variables whose value a start-up error never shows (DATABASE_URL may hold a password). */
const SECRET_VARIABLES = new Set(["ADMIN_TOKEN", "METRICS_TOKEN", "DATABASE_URL", "WEBHOOK_SECRET_KEY", "SMTP_PASSWORD"]);

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
      const shown =
        given === undefined || SECRET_VARIABLES.has(name) || issue.message.includes(JSON.stringify(given)) ? "" : ` (given: ${JSON.stringify(given)})`;
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
