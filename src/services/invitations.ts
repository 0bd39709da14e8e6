/**
 * Invitations: links an administrator makes for people to sign up while registration is closed (or into another
 * group than the default while it is open). Each has a number of uses, an expiry and the group its accounts join.
 * Only the code's SHA-256 is stored; the link is shown once. A use is charged by one conditional UPDATE in the
 * transaction that creates the account: under any concurrency an invitation makes at most `max_uses` accounts, and a
 * sign-up that fails gives its use back.
 */
import { and, count, desc, eq, gt, isNull, lt, sql } from "drizzle-orm";
import type { Executor } from "../db/client.ts";
import { groups, invitations } from "../db/schema.ts";
import type { Deps } from "../deps.ts";
import { randomToken, sha256Hex } from "./secrets.ts";

export type Invitation = typeof invitations.$inferSelect;

export const INVITATION_MAX_USES = 10_000;
export const INVITATION_MAX_SECONDS = 365 * 86_400;
const CODE = /^[\w-]{20,100}$/;

export const invitationUrl = (deps: Deps, code: string) => `${deps.config.baseUrl}/user/register?invite=${code}`;

export async function createInvitation(
  db: Executor,
  values: { groupId: number; maxUses: number; expiresAt: Date; note: string },
  now: Date,
): Promise<{ invitation: Invitation; code: string }> {
  const code = randomToken(24);
  const [invitation] = await db
    .insert(invitations)
    .values({ ...values, codeHash: sha256Hex(code), createdAt: now })
    .returning();
  return { invitation: invitation!, code };
}

export async function listInvitations(db: Executor, limit: number, offset: number): Promise<{ rows: Invitation[]; total: number }> {
  const rows = await db.select().from(invitations).orderBy(desc(invitations.id)).limit(limit).offset(offset);
  const [total] = await db.select({ n: count() }).from(invitations);
  return { rows, total: total?.n ?? 0 };
}

export async function getInvitation(db: Executor, id: number): Promise<Invitation | null> {
  const [row] = await db.select().from(invitations).where(eq(invitations.id, id));
  return row ?? null;
}

/** Ends an invitation now; null when there is none with this id. */
export async function revokeInvitation(db: Executor, id: number, now: Date): Promise<Invitation | null> {
  const [row] = await db
    .update(invitations)
    .set({ revokedAt: sql`coalesce(${invitations.revokedAt}, ${now.toISOString()}::timestamptz)` })
    .where(eq(invitations.id, id))
    .returning();
  return row ?? null;
}

/** Whether an invitation is usable now: not revoked, not expired, uses left, its group enabled. */
const live = (now: Date) =>
  and(isNull(invitations.revokedAt), gt(invitations.expiresAt, now), lt(invitations.uses, invitations.maxUses), eq(groups.enabled, true));

/** The live invitation a code names (for the sign-up page), or null. */
export async function findLiveInvitation(db: Executor, code: string, now: Date): Promise<Invitation | null> {
  if (!CODE.test(code)) return null;
  const [row] = await db
    .select({ invitation: invitations })
    .from(invitations)
    .innerJoin(groups, eq(groups.id, invitations.groupId))
    .where(and(eq(invitations.codeHash, sha256Hex(code)), live(now)));
  return row?.invitation ?? null;
}

/**
 * Charges one use of the invitation, inside the caller's transaction: a conditional UPDATE, so two sign-ups at once
 * cannot both take the last use. Returns the group the new account joins, or null when the invitation is not live.
 */
export async function chargeInvitation(tx: Executor, code: string, now: Date): Promise<{ id: number; groupId: number } | null> {
  if (!CODE.test(code)) return null;
  const [row] = await tx
    .update(invitations)
    .set({ uses: sql`${invitations.uses} + 1` })
    .where(
      and(
        eq(invitations.codeHash, sha256Hex(code)),
        isNull(invitations.revokedAt),
        gt(invitations.expiresAt, now),
        lt(invitations.uses, invitations.maxUses),
        sql`exists (select 1 from ${groups} where ${groups.id} = ${invitations.groupId} and ${groups.enabled})`,
      ),
    )
    .returning({ id: invitations.id, groupId: invitations.groupId });
  return row ?? null;
}
