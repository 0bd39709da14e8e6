import { and, eq, gt, isNull } from "drizzle-orm";
import type { Deps } from "../deps.ts";
import { deleteSessionsOfUser } from "../db/repositories/sessions.ts";
import { groups, passwordLinks, users } from "../db/schema.ts";
import { hashPassword } from "./passwords.ts";
import { randomToken, sha256Hex } from "./secrets.ts";

/**
 * A one-time link to set a password: valid for an hour, used once; only its SHA-256 is stored. It dies with the
 * account's other ways in (db/repositories/sessions.ts, deleteSessionsOfUser): when the password changes by any path,
 * another link of the account is used, the account signs out everywhere or is disabled. A disabled account's or
 * group's link is refused whatever the path that disabled it.
 */
export const PASSWORD_LINK_MS = 3_600_000;
/** Links an account may have outstanding: a new one beyond ends the oldest. */
const LINKS_PER_ACCOUNT = 5;

const passwordLinkUrl = (deps: Deps, token: string) => `${deps.config.baseUrl}/user/password/${token}`;

/** Makes a link for the account; null when there is no such account. */
export async function createPasswordLink(deps: Deps, userId: number): Promise<{ url: string; expiresAt: Date } | null> {
  const token = randomToken(32);
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + PASSWORD_LINK_MS);
  const made = await deps.db.transaction(async (tx) => {
    const [user] = await tx.select({ id: users.id }).from(users).where(eq(users.id, userId)).for("update");
    if (!user) return false;
    const live = await tx.select({ id: passwordLinks.id }).from(passwordLinks).where(eq(passwordLinks.userId, userId)).orderBy(passwordLinks.id);
    for (const old of live.slice(0, Math.max(0, live.length - LINKS_PER_ACCOUNT + 1))) await tx.delete(passwordLinks).where(eq(passwordLinks.id, old.id));
    await tx.insert(passwordLinks).values({ userId, tokenHash: sha256Hex(token), expiresAt, createdAt: now });
    return true;
  });
  return made ? { url: passwordLinkUrl(deps, token), expiresAt } : null;
}

/** The account a live, unused link names (for the page that asks for the new password), or null. */
export async function findPasswordLink(deps: Deps, token: string) {
  if (!/^[\w-]{20,100}$/.test(token)) return null;
  const [row] = await deps.db
    .select({ id: passwordLinks.id, userId: passwordLinks.userId, username: users.username })
    .from(passwordLinks)
    .innerJoin(users, eq(users.id, passwordLinks.userId))
    .innerJoin(groups, eq(groups.id, users.groupId))
    .where(
      and(
        eq(passwordLinks.tokenHash, sha256Hex(token)),
        isNull(passwordLinks.usedAt),
        gt(passwordLinks.expiresAt, deps.clock()),
        eq(users.enabled, true),
        eq(groups.enabled, true),
      ),
    );
  return row ?? null;
}

/**
 * Sets the password through a link, once: the link is marked used in the same transaction (a second use, or two at
 * once, finds it used), and the account's sessions and other links end, as with any new password. False when the
 * link is not live.
 */
export async function usePasswordLink(deps: Deps, token: string, password: string): Promise<boolean> {
  const link = await findPasswordLink(deps, token);
  if (!link) return false;
  const passwordHash = await hashPassword(password);
  return deps.db.transaction(async (tx) => {
    const used = await tx
      .update(passwordLinks)
      .set({ usedAt: deps.clock() })
      .where(and(eq(passwordLinks.id, link.id), isNull(passwordLinks.usedAt), gt(passwordLinks.expiresAt, deps.clock())))
      .returning({ id: passwordLinks.id });
    if (used.length === 0) return false;
    await tx.update(users).set({ passwordHash }).where(eq(users.id, link.userId));
    await deleteSessionsOfUser(tx, link.userId);
    return true;
  });
}
