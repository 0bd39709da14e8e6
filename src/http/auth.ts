import { addressBucket } from "../services/address.ts";
import type { Context, MiddlewareHandler } from "hono";
import { getGuestGroup, type Group } from "../db/repositories/groups.ts";
import { getSettings, type Settings } from "../db/repositories/settings.ts";
import { isImportedAs } from "../db/repositories/imports.ts";
import { findTokenWithOwner } from "../db/repositories/tokens.ts";
import type { User } from "../db/repositories/users.ts";
import type { Deps } from "../deps.ts";
import { usableStrategiesOf } from "../services/lookup-cache.ts";
import { AppError, forbidden, unauthorized } from "../errors.ts";
import { sameSecretHash, sha256Hex } from "../services/secrets.ts";
import { noteTokenUse } from "../services/tokens.ts";
import type { Caller, UserCaller } from "../services/caller.ts";
import type { AppEnv, RequestEnv, UserEnv } from "./types.ts";
import { INT4_MAX } from "./validation.ts";
import { servicesOf } from "../services/index.ts";

interface AccessRule {
  /** Temporary upload tokens are accepted (POST /upload only). */
  temporary: boolean;
  /** No credential means guest, when guest upload is enabled. */
  guest: boolean;
}

/** RFC 7235: the scheme in any case, one or more spaces, then the credential in visible ASCII (no controls, no unicode). */
const bearer = /^Bearer +([\x21-\x7e]+) *$/i;

/** The token of an Authorization header: null when absent, 401 when malformed. */
export function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null;
  const m = bearer.exec(header);
  if (!m) throw unauthorized("Malformed Authorization header: use 'Authorization: Bearer <token>'.");
  return m[1]!;
}

function groupGate(group: Group) {
  if (!group.enabled) throw forbidden("Your user group is disabled.");
  if (!group.allowApi) throw forbidden("Your user group is not allowed to use the API.");
}

/** The site-wide API switch (contract 5, rule 3): every /api/v1 call and every page of the user center. */
export function siteGate(settings: Settings) {
  if (!settings.apiEnabled) throw forbidden("The API is disabled on this site.");
}

/** The account's own flags (contract 5, rule 3): the account, then its group. The user center's sessions pass the same gates. */
export function accountGate(user: User, group: Group) {
  if (!user.enabled) throw forbidden("Your account is disabled.");
  groupGate(group);
}

/** The settings row, kept for at most the lookup cache's bound like every other authentication lookup. */
export const currentSettings = (deps: Deps) => servicesOf(deps).lookups.remember("settings", () => getSettings(deps.db));

/**
 * Contract section 5, in order: the site-wide switch (403) first; then a present credential must be
 * valid (401) and is never downgraded to a guest; a temporary token beyond upload is 403; account and
 * group flags are 403; no credential is a guest only where the rule allows it and guest upload is on.
 */
export async function authenticate(deps: Deps, token: string | null, rule: AccessRule & { guest: false }): Promise<UserCaller>;
export async function authenticate(deps: Deps, token: string | null, rule: AccessRule): Promise<Caller>;
export async function authenticate(deps: Deps, token: string | null, rule: AccessRule): Promise<Caller> {
  // both lookups at once, each kept for at most LOOKUP_CACHE_MS; the switch still decides first
  const cache = servicesOf(deps).lookups;
  const [settings, found] = await Promise.all([
    currentSettings(deps),
    token === null ? null : cache.remember(`token:${sha256Hex(token)}`, () => lookupToken(deps, token)),
  ]);
  siteGate(settings);

  if (token !== null) {
    if (!found) throw unauthorized("Invalid token.");
    const { token: row, user, group } = found;
    if (row.revokedAt) throw unauthorized("Invalid token.");
    if (row.expiredAt && row.expiredAt.getTime() <= deps.clock().getTime()) throw unauthorized("The token has expired.");
    if (row.kind === "temporary" && !rule.temporary) {
      throw forbidden("A temporary upload token can only be used for POST /upload.");
    }
    accountGate(user, group);
    noteTokenUse(deps, row.id);
    return { kind: "user", user, group, tokenKind: row.kind, tokenId: row.id };
  }

  if (!rule.guest) throw unauthorized("Unauthenticated: send 'Authorization: Bearer <token>'.");
  if (!settings.guestUploadEnabled) throw unauthorized("Guest upload is disabled: send 'Authorization: Bearer <token>'.");
  const group = await cache.remember("guest-group", () => getGuestGroup(deps.db));
  if (!group) throw unauthorized("Guest upload is not available: send 'Authorization: Bearer <token>'.");
  groupGate(group);
  if ((await usableStrategiesOf(deps, group.id)).length === 0) {
    throw unauthorized("Guest upload is not available: send 'Authorization: Bearer <token>'.");
  }
  return { kind: "guest", group };
}

/**
 * `id|raw` is looked up by id, the raw token alone by its hash; both compare hashes in constant time. A token
 * imported from Lsky Pro keeps the `id|raw` its clients hold, where `id` is Lsky's: when ours of that id is not it,
 * the token is found by its hash and accepted only if it was imported as that Lsky id.
 */
async function lookupToken(deps: Deps, token: string) {
  const bar = token.indexOf("|");
  let raw = token;
  let found;
  if (bar >= 0) {
    // decimal digits naming a PostgreSQL integer: "1e3", "0x10", "1.5", " 1" or 99999999999 name no token
    const digits = token.slice(0, bar);
    const id = /^\d{1,10}$/.test(digits) ? Number(digits) : 0;
    raw = token.slice(bar + 1);
    if (id <= 0 || id > INT4_MAX || !raw) return null;
    found = await findTokenWithOwner(deps.db, { id });
    if (!found || !sameSecretHash(sha256Hex(raw), found.token.secretHash)) {
      const imported = await findTokenWithOwner(deps.db, { secretHash: sha256Hex(raw) });
      if (imported && (await isImportedAs(deps.db, "lsky", "token", id, imported.token.id))) found = imported;
    }
    if (found && found.token.kind !== "permanent") return null;
  } else {
    found = await findTokenWithOwner(deps.db, { secretHash: sha256Hex(raw) });
  }
  if (!found) return null;
  return sameSecretHash(sha256Hex(raw), found.token.secretHash) ? found : null;
}

/**
 * Checks a credential the way every route does: one failure is reserved against the client's address bucket
 * (addressBucket) before the credential is looked at — an address with none left is refused (429) — and given back
 * when the credential turns out valid, so that a burst of concurrent guesses cannot all be checked. Every 401 keeps
 * its unit. No credential at all costs nothing to check.
 */
export async function guardedAuth<T, E extends RequestEnv>(c: Context<E>, credentialSent: boolean, check: () => Promise<T> | T): Promise<T> {
  if (!credentialSent) return check();
  return c.get("authThrottle").guard(addressBucket(clientIp(c)), check, (e: unknown) => e instanceof AppError && e.code === "unauthorized");
}

/** Authenticates from the Authorization header, throttled per address. */
export function authenticateHeader<E extends RequestEnv>(c: Context<E>, rule: AccessRule & { guest: false }): Promise<UserCaller>;
export function authenticateHeader<E extends RequestEnv>(c: Context<E>, rule: AccessRule): Promise<Caller>;
export function authenticateHeader<E extends RequestEnv>(c: Context<E>, rule: AccessRule): Promise<Caller> {
  const header = c.req.header("authorization");
  return guardedAuth(c, header !== undefined, () => authenticate(c.get("deps"), bearerToken(header), rule));
}

/** Authenticates from the Authorization header and stores the caller for the handler. */
export function requireCaller(rule: AccessRule): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("caller", await authenticateHeader(c, rule));
    await next();
  };
}

/** A permanent token of an enabled account: the handler's `caller` is a user, by type. */
export const requireUser: MiddlewareHandler<UserEnv> = async (c, next) => {
  c.set("caller", await authenticateHeader(c, { temporary: false, guest: false }));
  await next();
};

/**
 * The client's address: the socket's, or behind `trustedProxies` proxies of yours the X-Forwarded-For entry
 * that many places from the right — the one your outermost proxy appended. Entries further left are whatever
 * the client wrote, never trusted. A request with fewer entries did not come through your proxies: socket address.
 */
export function clientIp<E extends RequestEnv>(c: Context<E>): string {
  return c.get("clientAddress") ?? resolveClientAddress(c);
}

/** Reads the address from the socket or the proxy header: once per request, by the app's first middleware. */
export function resolveClientAddress<E extends RequestEnv>(c: Context<E>): string {
  return clientAddress(c.get("deps").config.trustedProxies, c.req.header("x-forwarded-for") ?? null, () => socketAddress(c));
}

/**
 * The client's address: with `hops` proxies of yours in front, the entry that many places from the right of
 * X-Forwarded-For (the one your outermost proxy appended); otherwise, or when the header is short, the socket's.
 */
export function clientAddress(hops: number, forwardedFor: string | null, socket: () => string): string {
  if (hops > 0) {
    const forwarded = (forwardedFor ?? "").split(",").map((a) => a.trim());
    const entry = forwarded.length >= hops ? forwarded[forwarded.length - hops] : undefined;
    if (entry) return entry.slice(0, 64);
  }
  return socket();
}

/** The address of the connection's other end (the nearest proxy, when there is one). */
export function socketAddress<E extends RequestEnv>(c: Context<E>): string {
  const server = c.env as { requestIP?: (r: Request) => { address: string } | null } | undefined;
  try {
    return server?.requestIP?.(c.req.raw)?.address ?? "";
  } catch {
    return "";
  }
}

export { addressBucket };
