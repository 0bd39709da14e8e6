/**
 * The mails the pages send, after their answer (services/mail/outbox.ts): the page's answer and its timing are the
 * same whether a mail goes out, whether the account exists, and whether the SMTP server is slow or down.
 */
import { getSettings } from "../../db/repositories/settings.ts";
import type { Deps } from "../../deps.ts";
import { servicesOf } from "../../services/index.ts";
import { effectiveSmtp } from "../../services/mail/config.ts";
import { sendMail } from "../../services/mail/outbox.ts";
import { requestPasswordReset } from "../../services/mail/password-reset.ts";
import { createEmailVerification } from "../../services/mail/verification.ts";
import { composeMail, mailLocale } from "./compose.ts";
import { getUser } from "../../db/repositories/users.ts";

/** Whether mail is set up (from the environment or the settings). */
export async function mailConfigured(deps: Deps): Promise<boolean> {
  return effectiveSmtp(deps, await getSettings(deps.db)).smtp !== null;
}

/** Queues a reset link to the account with this address, if there is one; nothing otherwise. */
export function queuePasswordReset(deps: Deps, email: string): void {
  servicesOf(deps).mail.queue("password reset", async () => {
    const settings = await getSettings(deps.db);
    const { smtp } = effectiveSmtp(deps, settings);
    if (!smtp) return;
    const link = await requestPasswordReset(deps, email);
    if (!link) return;
    const locale = mailLocale(link.locale, settings);
    await sendMail(smtp, composeMail(deps, settings, "reset", link.email, locale, { username: link.username, url: link.url }));
  });
}

/** Queues a verification link to the account's address, if it still needs one (and within its hourly bound). */
export function queueEmailVerification(deps: Deps, userId: number): void {
  servicesOf(deps).mail.queue("email verification", async () => {
    const settings = await getSettings(deps.db);
    const { smtp } = effectiveSmtp(deps, settings);
    if (!smtp) return;
    const user = await getUser(deps.db, userId);
    if (!user) return;
    const link = await createEmailVerification(deps, userId);
    if (!link) return;
    const locale = mailLocale(user.locale, settings);
    await sendMail(smtp, composeMail(deps, settings, "verify", link.email, locale, { username: user.username, email: link.email, url: link.url }));
  });
}
