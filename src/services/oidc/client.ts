/**
 * The authorization code flow with PKCE, `state` and `nonce`, on panva's openid-client (OpenID certified): discovery,
 * the authorization URL, and the callback's checks (state, issuer, audience, signature against the provider's JWKS,
 * expiry, nonce, PKCE). Nothing here reads a JWT by hand.
 *
 * A flow is held server-side (oidc_flows): the state's SHA-256, the nonce, the PKCE verifier and the browser it was
 * started in (the SHA-256 of the secret of that browser's flow cookie). The callback deletes the row as it reads it:
 * a state is answered once, and only in the browser that started it.
 */
import * as oidc from "openid-client";
import type { Deps } from "../../deps.ts";
import { insertFlow, type OidcProvider, takeFlow } from "../../db/repositories/oidc.ts";
import { sha256Hex } from "../secrets.ts";
import { clientSecretOf, isLoopbackHost } from "./providers.ts";

/** A flow, and a link request, live ten minutes. */
export const FLOW_TTL_MS = 10 * 60_000;
/** Discovery is fetched again after an hour (and at once after the provider is changed). */
const DISCOVERY_TTL_MS = 3_600_000;
/** Seconds a request to the provider may take. */
const PROVIDER_TIMEOUT_S = 10;

/** Why a provider sign-in did not complete; the pages say each in the reader's language. */
export type RefusalReason =
  | "unreachable" // discovery or the token endpoint failed
  | "denied" // the provider answered with an error (the person cancelled…)
  | "expired" // no such flow: unknown, used already, of another browser, or too old
  | "invalid" // the answer failed a check: state, issuer, audience, signature, expiry, nonce, PKCE
  | "no_email" // the provider gave no email, and one is needed
  | "unverified_email" // an account has this email, and the provider does not say it is verified
  | "no_account" // nobody here has this identity and auto-provisioning is off
  | "already_linked" // the account holds another identity at this provider
  | "email_taken"; // provisioning met an account with this email (created meanwhile)

export class SignInRefused extends Error {
  constructor(
    readonly reason: RefusalReason,
    detail?: string,
  ) {
    super(detail ?? reason);
  }
}

/** Discovered configurations by provider and version (its settings, down to the sealed secret): a change is a new entry. */
const discovered = new Map<string, { config: oidc.Configuration; at: number }>();
const DISCOVERED_MAX = 100;
const discoveryKey = (p: OidcProvider) => `${p.id}|${p.issuer}|${p.clientId}|${p.clientSecret}|${p.updatedAt.getTime()}`;

/** Forgets a provider's discovery (it changed or went). */
export function forgetDiscovery(providerId: number) {
  for (const key of discovered.keys()) if (key.startsWith(`${providerId}|`)) discovered.delete(key);
}

async function configurationOf(deps: Deps, provider: OidcProvider): Promise<oidc.Configuration> {
  const now = Date.now();
  const key = discoveryKey(provider);
  const cached = discovered.get(key);
  if (cached && now - cached.at < DISCOVERY_TTL_MS) return cached.config;
  const issuer = new URL(provider.issuer);
  const secret = clientSecretOf(deps, provider);
  const insecure = issuer.protocol === "http:" && isLoopbackHost(issuer.hostname);
  let config: oidc.Configuration;
  try {
    config = await oidc.discovery(
      issuer,
      provider.clientId,
      secret ? { client_secret: secret } : undefined,
      secret ? oidc.ClientSecretBasic(secret) : oidc.None(),
      {
        timeout: PROVIDER_TIMEOUT_S,
        // every ID token's signature is checked against the provider's keys, not only trusted for the TLS channel
        execute: [oidc.enableNonRepudiationChecks, ...(insecure ? [oidc.allowInsecureRequests] : [])],
      },
    );
  } catch (e) {
    throw new SignInRefused("unreachable", `discovery of ${provider.issuer} failed: ${(e as Error).message}`);
  }
  if (discovered.size >= DISCOVERED_MAX) discovered.clear();
  discovered.set(key, { config, at: now });
  return config;
}

/** The redirect URI registered at the provider: BASE_URL + /user/oidc/<slug>/callback. */
export const redirectUriOf = (baseUrl: string, slug: string) => `${baseUrl.replace(/\/+$/, "")}/user/oidc/${slug}/callback`;

/**
 * Starts a sign-in: stores the flow for this browser and answers the provider's authorization URL. `browserSecret`
 * is the secret of the browser's flow cookie.
 */
export async function beginSignIn(deps: Deps, provider: OidcProvider, browserSecret: string, next: string): Promise<URL> {
  const config = await configurationOf(deps, provider);
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const now = deps.clock();
  await insertFlow(
    deps.db,
    {
      stateHash: sha256Hex(state),
      browserHash: sha256Hex(browserSecret),
      providerId: provider.id,
      nonce,
      codeVerifier,
      next,
      expiresAt: new Date(now.getTime() + FLOW_TTL_MS),
    },
    now,
  );
  return oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUriOf(deps.config.baseUrl, provider.slug),
    scope: provider.scopes,
    response_type: "code",
    state,
    nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: "S256",
  });
}

/** What the provider said about the person, read through the provider's claim names. */
export interface ProviderClaims {
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  username: string | null;
  name: string | null;
  groups: string[];
}

const stringOf = (value: unknown) => (typeof value === "string" && value.trim() !== "" ? value.trim() : null);

/** A claim by name; a dotted name reads a nested object (`realm_access.roles`). */
function claimOf(claims: Record<string, unknown>, name: string): unknown {
  if (name in claims) return claims[name];
  let value: unknown = claims;
  for (const part of name.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/**
 * Completes a sign-in at the callback: takes the flow named by `state` for this browser (once), then lets
 * openid-client check the answer and redeem the code. `query` is the callback's query as the provider sent it.
 */
export async function finishSignIn(
  deps: Deps,
  provider: OidcProvider,
  browserSecret: string,
  query: URLSearchParams,
): Promise<{ claims: ProviderClaims; next: string }> {
  // the redirect URI sent to the token endpoint is this URL without its query: BASE_URL's, whatever address the request came to
  const callbackUrl = new URL(redirectUriOf(deps.config.baseUrl, provider.slug));
  for (const [k, v] of query) callbackUrl.searchParams.append(k, v);
  const state = callbackUrl.searchParams.get("state");
  const flow = state ? await takeFlow(deps.db, sha256Hex(state), sha256Hex(browserSecret), deps.clock()) : null;
  if (!flow || flow.providerId !== provider.id) throw new SignInRefused("expired");
  if (callbackUrl.searchParams.has("error")) throw new SignInRefused("denied", callbackUrl.searchParams.get("error") ?? undefined);
  const config = await configurationOf(deps, provider);
  let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
  try {
    tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
      expectedState: state!,
      expectedNonce: flow.nonce,
      pkceCodeVerifier: flow.codeVerifier,
      idTokenExpected: true,
    });
  } catch (e) {
    const unreachable =
      e instanceof TypeError || (e as { name?: string }).name === "TimeoutError" || (e as { code?: string }).code === "OAUTH_RESPONSE_IS_NOT_CONFORM";
    throw new SignInRefused(unreachable ? "unreachable" : "invalid", (e as Error).message);
  }
  const idToken = tokens.claims();
  if (!idToken) throw new SignInRefused("invalid", "no ID token");
  let claims: Record<string, unknown> = { ...idToken };
  // some providers (Authelia by default) put the profile in the UserInfo answer only; its subject must be the token's
  if (config.serverMetadata().userinfo_endpoint && tokens.access_token) {
    try {
      const info = await oidc.fetchUserInfo(config, tokens.access_token, idToken.sub);
      claims = { ...idToken, ...pickProfile(info) };
    } catch (e) {
      throw new SignInRefused("invalid", `userinfo: ${(e as Error).message}`);
    }
  }
  const groups = provider.groupsClaim ? claimOf(claims, provider.groupsClaim) : undefined;
  return {
    next: flow.next,
    claims: {
      issuer: idToken.iss,
      subject: idToken.sub,
      email: stringOf(claimOf(claims, provider.emailClaim))?.toLowerCase() ?? null,
      emailVerified: claimOf(claims, "email_verified") === true || claimOf(claims, "email_verified") === "true",
      username: stringOf(claimOf(claims, provider.usernameClaim)),
      name: stringOf(claims.name),
      groups: Array.isArray(groups) ? groups.filter((g): g is string => typeof g === "string").slice(0, 200) : typeof groups === "string" ? [groups] : [],
    },
  };
}

/** The profile claims the UserInfo answer adds to the ID token (never iss, sub, aud, nonce: those are the token's). */
function pickProfile(info: Record<string, unknown>): Record<string, unknown> {
  const { iss: _i, sub: _s, aud: _a, nonce: _n, exp: _e, iat: _t, ...profile } = info;
  return profile;
}
