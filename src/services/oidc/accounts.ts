/**
 * Which account a provider's identity signs in to (docs/decisions/oidc-sign-in.md). An identity is keyed by the ID
 * token's issuer and subject, never by an email:
 *
 * - a known identity signs in to its account;
 * - an unknown one whose email an account has: when the provider says the email is verified, a link request that
 *   the person confirms with that account's password (linkIdentity); otherwise a refusal;
 * - an unknown one with a new email: a new account when the provider auto-provisions, else a refusal.
 *
 * Every provider sign-in applies the provider's groups claim: the administrator role and the group it maps to.
 */
import { and, eq, sql } from "drizzle-orm";
import type { Db, Executor } from "../../db/client.ts";
import type { Deps } from "../../deps.ts";
import { getDefaultGroup, getGroup } from "../../db/repositories/groups.ts";
import { findIdentity, insertIdentity, type OidcLinkRequest, type OidcProvider, touchIdentity } from "../../db/repositories/oidc.ts";
import { getUser, type User } from "../../db/repositories/users.ts";
import { oidcIdentities, users } from "../../db/schema.ts";
import { type Actor, writeAudit } from "../audit.ts";
import { changeAccount } from "../users.ts";
import { type ProviderClaims, SignInRefused } from "./client.ts";

export type Resolution = { kind: "account"; user: User; created: boolean } | { kind: "link"; userId: number; email: string };

const isUniqueViolation = (e: unknown, constraint?: string) => {
  const err = e as { code?: string; constraint_name?: string; cause?: { code?: string; constraint_name?: string } };
  const code = err.code ?? err.cause?.code;
  const name = err.constraint_name ?? err.cause?.constraint_name;
  return code === "23505" && (constraint === undefined || name === constraint);
};

/** A username of ours (2–64 of letters, digits, `_`, `.`, `-`) from what the provider calls the person. */
export function usernameFrom(claims: Pick<ProviderClaims, "username" | "email">): string {
  const raw = claims.username ?? claims.email?.split("@")[0] ?? "";
  const cleaned = raw
    .normalize("NFKD")
    .replace(/[^\w.-]+/g, "")
    .replace(/^[.-]+/, "")
    .slice(0, 56);
  return cleaned.length >= 2 ? cleaned : `user${cleaned}`;
}

/** Provisioning tries the username, then `-2`, `-3`… up to this many. */
const USERNAME_TRIES = 20;

async function freeUsername(db: Executor, base: string): Promise<string | null> {
  const taken = await db
    .select({ username: sql<string>`lower(${users.username})` })
    .from(users)
    .where(
      sql`lower(${users.username}) = ${base.toLowerCase()} or lower(${users.username}) like ${`${base.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}-%`}`,
    )
    .limit(1000);
  const names = new Set(taken.map((t) => t.username));
  for (let i = 1; i <= USERNAME_TRIES; i++) {
    const candidate = i === 1 ? base : `${base}-${i}`;
    if (!names.has(candidate.toLowerCase())) return candidate;
  }
  return null;
}

const actorOf = (provider: Pick<OidcProvider, "slug">, ip: string): Actor => ({ userId: null, label: `oidc:${provider.slug}`, ip });

/** The identity's account, a link to confirm, or a refusal (SignInRefused). */
export async function resolveIdentity(deps: Deps, provider: OidcProvider, claims: ProviderClaims, ip: string): Promise<Resolution> {
  const now = deps.clock();
  const known = await findIdentity(deps.db, claims.issuer, claims.subject);
  if (known) {
    await touchIdentity(deps.db, known.identity.id, claims.email ?? known.identity.email, now);
    return { kind: "account", user: await applyGroups(deps, provider, claims, known.user, ip), created: false };
  }
  if (!claims.email) throw new SignInRefused("no_email");
  const [holder] = await deps.db.select().from(users).where(eq(users.email, claims.email)).limit(1);
  if (holder) {
    if (!claims.emailVerified) throw new SignInRefused("unverified_email");
    const [other] = await deps.db
      .select({ id: oidcIdentities.id })
      .from(oidcIdentities)
      .where(and(eq(oidcIdentities.userId, holder.id), eq(oidcIdentities.providerId, provider.id)))
      .limit(1);
    if (other) throw new SignInRefused("already_linked");
    return { kind: "link", userId: holder.id, email: claims.email };
  }
  if (!provider.autoProvision) throw new SignInRefused("no_account");
  const user = await provision(deps, provider, claims, ip);
  return { kind: "account", user: await applyGroups(deps, provider, claims, user, ip), created: true };
}

/** A new account for the identity, with the identity, in one transaction. */
async function provision(deps: Deps, provider: OidcProvider, claims: ProviderClaims, ip: string): Promise<User> {
  const now = deps.clock();
  const group = mappedGroup(provider, claims) ?? null;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await deps.db.transaction(async (tx) => {
        const groupId = (group !== null ? await usableGroup(tx, group) : null) ?? (await getDefaultGroup(tx))?.id;
        if (!groupId) throw new Error("there is no default group");
        const username = await freeUsername(tx, usernameFrom(claims));
        if (!username) throw new SignInRefused("email_taken", "no free username");
        const [user] = await tx
          .insert(users)
          .values({ username, email: claims.email!, name: (claims.name ?? username).slice(0, 100), groupId, registeredIp: ip, passwordHash: null })
          .returning();
        await insertIdentity(tx, {
          providerId: provider.id,
          issuer: claims.issuer,
          subject: claims.subject,
          userId: user!.id,
          email: claims.email!,
          lastUsedAt: now,
        });
        await writeAudit(tx, {
          actor: actorOf(provider, ip),
          action: "oidc.provision",
          targetType: "users",
          targetId: String(user!.id),
          detail: { provider: provider.slug, username, email: claims.email },
          at: now,
        });
        return user!;
      });
    } catch (e) {
      if (isUniqueViolation(e, "users_username_key")) continue; // another sign-in took the name first: try the next
      if (isUniqueViolation(e, "users_email_key")) throw new SignInRefused("email_taken");
      if (isUniqueViolation(e, "oidc_identities_issuer_subject_key")) {
        // the same identity provisioned meanwhile (a double click): sign in to that account
        const found = await findIdentity(deps.db, claims.issuer, claims.subject);
        if (found) return found.user;
      }
      throw e;
    }
  }
  throw new SignInRefused("email_taken", "no free username");
}

/**
 * Links the identity of a confirmed link request to its account. The identity's key and the one-per-provider rule are
 * unique constraints: of two identities racing for one account, or one identity racing for two, exactly one wins.
 */
export async function linkIdentity(deps: Deps, provider: Pick<OidcProvider, "id" | "slug">, request: OidcLinkRequest, ip: string): Promise<User> {
  const now = deps.clock();
  try {
    await deps.db.transaction(async (tx) => {
      await insertIdentity(tx, {
        providerId: provider.id,
        issuer: request.issuer,
        subject: request.subject,
        userId: request.userId,
        email: request.email,
        lastUsedAt: now,
      });
      await writeAudit(tx, {
        actor: { ...actorOf(provider, ip), userId: request.userId },
        action: "oidc.link",
        targetType: "users",
        targetId: String(request.userId),
        detail: { provider: provider.slug, email: request.email },
        at: now,
      });
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new SignInRefused("already_linked");
    throw e;
  }
  const user = await getUser(deps.db, request.userId);
  if (!user) throw new SignInRefused("expired");
  return user;
}

/** The first group of ours the person's groups map to. */
const mappedGroup = (provider: OidcProvider, claims: ProviderClaims) =>
  provider.groupsClaim ? provider.groupMap.find((m) => claims.groups.includes(m.value))?.groupId : undefined;

async function usableGroup(db: Executor, id: number): Promise<number | null> {
  const group = await getGroup(db, id);
  return group && !group.isGuest ? group.id : null;
}

/**
 * The provider's say on the account: with a groups claim and an administrator value, the role follows it (in the
 * group: administrator, else user); a mapped group moves the account there. Changes go to the audit log.
 */
async function applyGroups(deps: Deps, provider: OidcProvider, claims: ProviderClaims, user: User, ip: string): Promise<User> {
  if (!provider.groupsClaim) return user;
  const role = provider.adminGroup ? (claims.groups.includes(provider.adminGroup) ? "admin" : "user") : user.role;
  const mapped = mappedGroup(provider, claims);
  const groupId = mapped !== undefined ? ((await usableGroup(deps.db, mapped)) ?? user.groupId) : user.groupId;
  if (role === user.role && groupId === user.groupId) return user;
  const changed = await changeAccount(deps.db as Db, user.id, { role, groupId }, deps.clock());
  await writeAudit(deps.db, {
    actor: actorOf(provider, ip),
    action: "oidc.groups",
    targetType: "users",
    targetId: String(user.id),
    detail: { provider: provider.slug, role, group_id: groupId },
    at: deps.clock(),
  });
  return changed ?? user;
}
