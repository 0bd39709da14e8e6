/**
 * The site's mails, in the recipient's language (the account's choice, else the site's default) and under the
 * site's name: a plain-text part and the same text as simple HTML, from the `mail.*` catalog entries. Every mail
 * says only what its recipient asked for: none tells whether another account exists.
 */
import type { Settings } from "../../db/repositories/settings.ts";
import type { Deps } from "../../deps.ts";
import type { Mail } from "../../services/mail/outbox.ts";
import { intlFor, isLocale, type Locale, type MessageKey } from "../i18n/index.ts";
import { identityOf } from "../site.ts";

export type MailKind = "reset" | "verify" | "test";

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The language of a mail to an account: its own choice, else the site's default. */
export const mailLocale = (accountLocale: string | null | undefined, settings: Settings): Locale =>
  isLocale(accountLocale) ? accountLocale : identityOf(settings).site.defaultLocale;

/** One mail of `kind` to `to`; `values` fill its text ({url}, {username}, {email}). */
export function composeMail(deps: Deps, settings: Settings, kind: MailKind, to: string, locale: Locale, values: Record<string, string> = {}): Mail {
  const intl = intlFor(locale);
  const site = identityOf(settings).site.name;
  const all = { site, home: deps.config.baseUrl, ...values };
  const text = (key: MessageKey) => intl.formatMessage({ id: key }, all) as string;
  const body = text(`mail.${kind}.body` as MessageKey);
  const footer = text("mail.footer");
  const paragraph = (p: string) =>
    `<p>${escapeHtml(p)
      .replace(/\n/g, "<br>\n")
      .replace(/https?:\/\/[^\s<]+/g, (u) => `<a href="${u}">${u}</a>`)}</p>`;
  const html = `<!doctype html><html lang="${locale}"><head><meta charset="utf-8"><title>${escapeHtml(text(`mail.${kind}.subject` as MessageKey))}</title></head><body>${body
    .split("\n\n")
    .map(paragraph)
    .join("\n")}\n<hr>\n<p><small>${escapeHtml(footer)}</small></p></body></html>`;
  return { to, fromName: site, subject: text(`mail.${kind}.subject` as MessageKey), text: `${body}\n\n-- \n${footer}\n`, html };
}
