/**
 * Email verification before the first upload, when the administrator turns it on (`email_verification`): an account
 * made by sign-up while it is on starts unverified, and its uploads are refused (services/upload/checks.ts) until it
 * follows the link mailed to it. A link is valid for a day, used once, stored as its SHA-256, and names the address it
 * was sent to: after an email change it verifies nothing. Accounts made by an administrator, and accounts older than
 * the switch, count as verified.
 */
import { and, count, eq, gt, isNull } from "drizzle-orm";
import { emailVerifications, users } from "../../db/schema.ts";
import type { Deps } from "../../deps.ts";
import { servicesOf } from "../index.ts";
import { randomToken, sha256Hex } from "../secrets.ts";

export const VERIFICATION_MS = 86_400_000;
/** Verification mails one account may be sent in an hour (sign-up's included). */
export const VERIFICATIONS_PER_ACCOUNT_HOUR = 3;

export const verificationUrl = (deps: Deps, token: string) => `${deps.config.baseUrl}/user/verify/${token}`;

/** A new link for the account's current address, or null when the account is verified, gone or at its hourly bound. */
export async function createEmailVerification(deps: Deps, userId: number): Promise<{ url: string; email: string } | null> {
  const now = deps.clock();
  const token = randomToken(32);
  return deps.db.transaction(async (tx) => {
    const [user] = await tx.select({ email: users.email, verified: users.emailVerified }).from(users).where(eq(users.id, userId)).for("update");
    if (!user || user.verified) return null;
    const [recent] = await tx
      .select({ n: count() })
      .from(emailVerifications)
      .where(and(eq(emailVerifications.userId, userId), gt(emailVerifications.createdAt, new Date(now.getTime() - 3_600_000))));
    if ((recent?.n ?? 0) >= VERIFICATIONS_PER_ACCOUNT_HOUR) return null;
    await tx.insert(emailVerifications).values({
      userId,
      email: user.email,
      tokenHash: sha256Hex(token),
      expiresAt: new Date(now.getTime() + VERIFICATION_MS),
      createdAt: now,
    });
    return { url: verificationUrl(deps, token), email: user.email };
  });
}

/**
 * Verifies the account a live link names, once: the link is marked used by a conditional UPDATE (a second use, or
 * two at once, finds it used) and only while the account's address is still the one it was sent to. Returns the
 * account's id, or null.
 */
export async function useEmailVerification(deps: Deps, token: string): Promise<number | null> {
  if (!/^[\w-]{20,100}$/.test(token)) return null;
  const now = deps.clock();
  const verified = await deps.db.transaction(async (tx) => {
    const [link] = await tx
      .update(emailVerifications)
      .set({ usedAt: now })
      .where(and(eq(emailVerifications.tokenHash, sha256Hex(token)), isNull(emailVerifications.usedAt), gt(emailVerifications.expiresAt, now)))
      .returning({ userId: emailVerifications.userId, email: emailVerifications.email });
    if (!link) return null;
    const [user] = await tx
      .update(users)
      .set({ emailVerified: true })
      .where(and(eq(users.id, link.userId), eq(users.email, link.email)))
      .returning({ id: users.id });
    return user?.id ?? null;
  });
  // the account's row is kept a second by the lookups of authentication: its next upload must see the change
  if (verified !== null) servicesOf(deps).lookups.clear();
  return verified;
}
