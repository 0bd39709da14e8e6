import { z } from "@hono/zod-openapi";
import type { Settings } from "../../../db/repositories/settings.ts";
import type { Deps } from "../../../deps.ts";
import { envelope } from "../../../http/schemas.ts";
import { effectiveSmtp, SMTP_SECURITY } from "../../../services/mail/config.ts";

const HOST = /^[A-Za-z0-9.:[\]-]*$/;

export const MailSettings = z
  .object({
    source: z.enum(["environment", "settings", "none"]).openapi({
      description:
        "Where the SMTP server in use comes from: `environment` (SMTP_HOST is set: the environment wins, the fields below show its values and the stored ones are ignored), `settings` (the stored fields), or `none` (mail is not set up: no reset or verification mail goes out)",
    }),
    smtp_host: z.string().openapi({ description: "The SMTP server's host name or address; empty = not set", example: "smtp.example.com" }),
    smtp_port: z.number().int().openapi({ example: 587 }),
    smtp_security: z.enum(SMTP_SECURITY).openapi({
      description: "`starttls`: upgrade required (port 587); `tls`: TLS from the first byte (port 465); `none`: no TLS (a relay on this machine)",
    }),
    smtp_username: z.string().openapi({ description: "Empty = no authentication", example: "images@example.com" }),
    smtp_password_set: z.boolean().openapi({ description: "Whether a password is set; the password itself is never returned" }),
    mail_from: z.string().openapi({ description: "The sender's address; the sender's name is the site's name", example: "images@example.com" }),
    email_verification: z.boolean().openapi({
      description:
        "An account made by sign-up (open registration or an invitation) uploads nothing until it confirms its email address by the link mailed to it (POST /api/v1/upload answers 403). Accounts made by an administrator, and accounts made before the switch was turned on, are not asked.",
    }),
  })
  .openapi("MailSettings");

export const MailSettingsInput = z
  .object({
    smtp_host: z.string().trim().max(253).regex(HOST, "Give a host name or an address."),
    smtp_port: z.number().int().min(1).max(65535),
    smtp_security: z.enum(SMTP_SECURITY),
    smtp_username: z.string().max(254),
    smtp_password: z.string().max(512).nullable().openapi({ description: "Write-only; null or empty removes it" }),
    mail_from: z.union([z.literal(""), z.email().max(254)]).openapi({ description: "The sender's address; empty = not set" }),
    email_verification: z.boolean(),
  })
  .partial()
  .strict()
  .openapi("MailSettingsInput");

export const MailSettingsResponse = envelope(MailSettings, "MailSettingsResponse");

export function toOutput(deps: Deps, s: Settings): z.infer<typeof MailSettings> {
  const { source, smtp } = effectiveSmtp(deps, s);
  if (source === "environment" && smtp) {
    return {
      source,
      smtp_host: smtp.host,
      smtp_port: smtp.port,
      smtp_security: smtp.security,
      smtp_username: smtp.username,
      smtp_password_set: smtp.password !== "",
      mail_from: smtp.from,
      email_verification: s.emailVerification,
    };
  }
  return {
    source,
    smtp_host: s.smtpHost,
    smtp_port: s.smtpPort,
    smtp_security: s.smtpSecurity as (typeof SMTP_SECURITY)[number],
    smtp_username: s.smtpUsername,
    smtp_password_set: s.smtpPasswordSealed !== null,
    mail_from: s.mailFrom,
    email_verification: s.emailVerification,
  };
}
