/** OpenID Connect providers, the identities accounts hold at them, and the sign-ins under way (services/oidc/). */
import { and, asc, desc, eq, gt, lt, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { groups, oidcFlows, oidcIdentities, oidcLinkRequests, oidcProviders, users } from "../schema.ts";
import { defined } from "./defined.ts";

export type OidcProvider = typeof oidcProviders.$inferSelect;
export type NewOidcProvider = typeof oidcProviders.$inferInsert;
export type OidcIdentity = typeof oidcIdentities.$inferSelect;
export type OidcFlow = typeof oidcFlows.$inferSelect;
export type OidcLinkRequest = typeof oidcLinkRequests.$inferSelect;

/** The most providers a site holds: the sign-in page shows one button each. */
export const OIDC_PROVIDERS_MAX = 20;

export async function listOidcProviders(db: Executor, onlyEnabled = false): Promise<OidcProvider[]> {
  return db
    .select()
    .from(oidcProviders)
    .where(onlyEnabled ? eq(oidcProviders.enabled, true) : undefined)
    .orderBy(asc(oidcProviders.id))
    .limit(OIDC_PROVIDERS_MAX);
}

export async function getOidcProvider(db: Executor, id: number): Promise<OidcProvider | null> {
  const [row] = await db.select().from(oidcProviders).where(eq(oidcProviders.id, id));
  return row ?? null;
}

export async function findOidcProviderBySlug(db: Executor, slug: string): Promise<OidcProvider | null> {
  const [row] = await db.select().from(oidcProviders).where(eq(oidcProviders.slug, slug));
  return row ?? null;
}

/** Inserts a provider unless the site holds OIDC_PROVIDERS_MAX already (null then), in one statement. */
export async function insertOidcProvider(db: Executor, values: NewOidcProvider): Promise<OidcProvider | null> {
  return db.transaction(async (tx) => {
    // one creation at a time: the count and the insert cannot interleave with another's
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext('oidc_providers'))`);
    const [{ count } = { count: 0 }] = await tx.select({ count: sql<number>`count(*)::int` }).from(oidcProviders);
    if (count >= OIDC_PROVIDERS_MAX) return null;
    const [row] = await tx.insert(oidcProviders).values(values).returning();
    return row!;
  });
}

export async function updateOidcProvider(db: Executor, id: number, patch: Partial<NewOidcProvider>, now: Date): Promise<OidcProvider | null> {
  const [row] = await db
    .update(oidcProviders)
    .set({ ...defined(patch), updatedAt: now })
    .where(eq(oidcProviders.id, id))
    .returning();
  return row ?? null;
}

export async function deleteOidcProvider(db: Executor, id: number): Promise<boolean> {
  const rows = await db.delete(oidcProviders).where(eq(oidcProviders.id, id)).returning({ id: oidcProviders.id });
  return rows.length > 0;
}

/** How many identities each provider holds. */
export async function countIdentitiesByProvider(db: Executor): Promise<Map<number, number>> {
  const rows = await db
    .select({ providerId: oidcIdentities.providerId, count: sql<number>`count(*)::int` })
    .from(oidcIdentities)
    .groupBy(oidcIdentities.providerId);
  return new Map(rows.map((r) => [r.providerId, r.count]));
}

/** The account an identity (issuer, subject) belongs to, with its group. */
export async function findIdentity(db: Executor, issuer: string, subject: string) {
  const [row] = await db
    .select({ identity: oidcIdentities, user: users, group: groups })
    .from(oidcIdentities)
    .innerJoin(users, eq(users.id, oidcIdentities.userId))
    .innerJoin(groups, eq(groups.id, users.groupId))
    .where(and(eq(oidcIdentities.issuer, issuer), eq(oidcIdentities.subject, subject)));
  return row ?? null;
}

export async function insertIdentity(db: Executor, values: typeof oidcIdentities.$inferInsert): Promise<OidcIdentity> {
  const [row] = await db.insert(oidcIdentities).values(values).returning();
  return row!;
}

export async function touchIdentity(db: Executor, id: number, email: string, now: Date) {
  await db.update(oidcIdentities).set({ email, lastUsedAt: now }).where(eq(oidcIdentities.id, id));
}

export async function insertFlow(db: Executor, values: typeof oidcFlows.$inferInsert, now: Date) {
  await db.delete(oidcFlows).where(lt(oidcFlows.expiresAt, now));
  await db.insert(oidcFlows).values(values);
}

/** Takes a flow: deleted as it is read, so a state is answered once; null when unknown, of another browser or expired. */
export async function takeFlow(db: Executor, stateHash: string, browserHash: string, now: Date): Promise<OidcFlow | null> {
  const [row] = await db
    .delete(oidcFlows)
    .where(and(eq(oidcFlows.stateHash, stateHash), eq(oidcFlows.browserHash, browserHash)))
    .returning();
  return row && row.expiresAt > now ? row : null;
}

/** A browser's link request replaces any earlier one of the same browser. */
export async function putLinkRequest(db: Executor, values: typeof oidcLinkRequests.$inferInsert, now: Date) {
  await db.transaction(async (tx) => {
    await tx.delete(oidcLinkRequests).where(lt(oidcLinkRequests.expiresAt, now));
    await tx.delete(oidcLinkRequests).where(eq(oidcLinkRequests.browserHash, values.browserHash));
    await tx.insert(oidcLinkRequests).values(values);
  });
}

/** The browser's live link request, with the provider's label and the account's username. */
export async function findLinkRequest(db: Executor, browserHash: string, now: Date) {
  const [row] = await db
    .select({ request: oidcLinkRequests, label: oidcProviders.label, slug: oidcProviders.slug, username: users.username })
    .from(oidcLinkRequests)
    .innerJoin(oidcProviders, eq(oidcProviders.id, oidcLinkRequests.providerId))
    .innerJoin(users, eq(users.id, oidcLinkRequests.userId))
    .where(and(eq(oidcLinkRequests.browserHash, browserHash), gt(oidcLinkRequests.expiresAt, now)))
    .orderBy(desc(oidcLinkRequests.id))
    .limit(1);
  return row ?? null;
}

/** Takes a link request (deleted as it is read: used once); null when another took it first. */
export async function takeLinkRequest(db: Executor, id: number): Promise<OidcLinkRequest | null> {
  const [row] = await db.delete(oidcLinkRequests).where(eq(oidcLinkRequests.id, id)).returning();
  return row ?? null;
}

/** Counts a wrong password against a link request; it ends at `max`. Returns the failures so far. */
export async function failLinkRequest(db: Executor, id: number, max: number): Promise<number> {
  const [row] = await db
    .update(oidcLinkRequests)
    .set({ failures: sql`${oidcLinkRequests.failures} + 1` })
    .where(eq(oidcLinkRequests.id, id))
    .returning({ failures: oidcLinkRequests.failures });
  if (row && row.failures >= max) await db.delete(oidcLinkRequests).where(eq(oidcLinkRequests.id, id));
  return row?.failures ?? max;
}
