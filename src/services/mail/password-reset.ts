/**
 * Self-service password reset: the account named by an email address gets a one-time password link (the same links
 * an administrator makes, services/password-links.ts: an hour, used once). Whether the address has an account is
 * never said: the page answers the same, at once, and the lookup runs after the answer (web/forgot-password.tsx).
 * Mails one account receives are bounded here, in the database (every instance sees them): a fourth request within
 * the hour makes no link and sends nothing, silently.
 */
import { and, count, eq, gt, sql } from "drizzle-orm";
import { groups, passwordLinks, users } from "../../db/schema.ts";
import type { Deps } from "../../deps.ts";
import { createPasswordLink } from "../password-links.ts";

/** Reset links one account may be sent in an hour. */
export const RESETS_PER_ACCOUNT_HOUR = 3;

export interface ResetLink {
  email: string;
  username: string;
  locale: string | null;
  url: string;
}

/**
 * A reset link for the enabled account with this email (case ignored), or null: no such account, a disabled account
 * or group, or the account's hourly bound reached.
 */
export async function requestPasswordReset(deps: Deps, email: string): Promise<ResetLink | null> {
  const [user] = await deps.db
    .select({ id: users.id, email: users.email, username: users.username, locale: users.locale })
    .from(users)
    .innerJoin(groups, eq(groups.id, users.groupId))
    .where(and(sql`lower(${users.email}) = ${email.toLowerCase()}`, eq(users.enabled, true), eq(groups.enabled, true)));
  if (!user) return null;
  const hourAgo = new Date(deps.clock().getTime() - 3_600_000);
  const [recent] = await deps.db
    .select({ n: count() })
    .from(passwordLinks)
    .where(and(eq(passwordLinks.userId, user.id), gt(passwordLinks.createdAt, hourAgo)));
  if ((recent?.n ?? 0) >= RESETS_PER_ACCOUNT_HOUR) return null;
  const link = await createPasswordLink(deps, user.id);
  if (!link) return null;
  return { email: user.email, username: user.username, locale: user.locale, url: link.url };
}
