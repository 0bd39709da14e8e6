/**
 * Where the site's mail goes: an SMTP server, set in the environment (SMTP_HOST…) or in the admin Settings. The
 * environment wins: when SMTP_HOST is set, every SMTP field comes from the environment and the stored ones are
 * ignored (docs/decisions/mail.md). The stored password is sealed with the site's secret key, like the webhook
 * signing secrets, and never leaves the server.
 */
import type { Settings } from "../../db/repositories/settings.ts";
import type { Deps } from "../../deps.ts";

export const SMTP_SECURITY = ["starttls", "tls", "none"] as const;
/** `starttls`: plain connection upgraded, upgrade required (port 587); `tls`: TLS from the first byte (465); `none`: no TLS. */
export type SmtpSecurity = (typeof SMTP_SECURITY)[number];

export interface SmtpConfig {
  host: string;
  port: number;
  security: SmtpSecurity;
  username: string;
  password: string;
  /** The sender's address; the display name is the site's name. */
  from: string;
}

export type MailSource = "environment" | "settings" | "none";

/** The SMTP server in use and where its settings come from; null when mail is not set up. */
export function effectiveSmtp(deps: Deps, settings: Settings): { source: MailSource; smtp: SmtpConfig | null } {
  const env = deps.config.mail;
  if (env) return { source: "environment", smtp: env };
  if (!settings.smtpHost || !settings.mailFrom) return { source: "none", smtp: null };
  return {
    source: "settings",
    smtp: {
      host: settings.smtpHost,
      port: settings.smtpPort,
      security: settings.smtpSecurity as SmtpSecurity,
      username: settings.smtpUsername,
      password: settings.smtpPasswordSealed ? openPassword(deps, settings.smtpPasswordSealed) : "",
      from: settings.mailFrom,
    },
  };
}

function openPassword(deps: Deps, sealed: string): string {
  const box = deps.config.webhooks?.box;
  if (!box) throw new Error("the SMTP password is sealed, and this instance has no secret key to open it");
  return box.open(sealed);
}

/** Seals a password to store it; throws when the instance has no secret key (never in a server: it makes one). */
export function sealPassword(deps: Deps, password: string): string {
  const box = deps.config.webhooks?.box;
  if (!box) throw new Error("this instance has no secret key to seal the SMTP password");
  return box.seal(password);
}
