/**
 * The administration of OpenID Connect providers (docs/single-sign-on.md): their client secret sealed at rest with
 * the site's secret key (webhooks/secret-box.ts), their issuer checked for a scheme the client library will speak.
 */
import type { Deps } from "../../deps.ts";
import {
  deleteOidcProvider,
  getOidcProvider,
  insertOidcProvider,
  type NewOidcProvider,
  OIDC_PROVIDERS_MAX,
  type OidcProvider,
  listOidcProviders,
  updateOidcProvider,
} from "../../db/repositories/oidc.ts";
import { getGroup } from "../../db/repositories/groups.ts";
import { validationError } from "../../errors.ts";
import { webhookSettings } from "../../webhooks/settings.ts";
import { servicesOf } from "../index.ts";
import { forgetDiscovery } from "./client.ts";

/** What the administrator gives (the admin API's fields, in the repository's names); `clientSecret` in clear. */
export type ProviderInput = Partial<Omit<NewOidcProvider, "id" | "createdAt" | "updatedAt">>;

const isUniqueViolation = (e: unknown) => {
  const err = e as { code?: string; cause?: { code?: string } };
  return err.code === "23505" || err.cause?.code === "23505";
};

/** Hosts an issuer may be reached on over plain http: this machine only (a provider beside the site, or a test). */
export const isLoopbackHost = (hostname: string) => /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname) || hostname === "localhost" || hostname === "[::1]";

/** The reason an issuer URL cannot be used, or null: https (plain http on loopback only), no query, no fragment. */
export function issuerProblem(issuer: string): string | null {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    return "it must be an absolute URL";
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname))) {
    return "it must use https (plain http only on a loopback address)";
  }
  if (url.search || url.hash || url.username || url.password) return "it must have no query, fragment or credentials";
  return null;
}

/** The groups a provider's group map names must exist and not be the guest group. */
async function checkGroupMap(deps: Deps, input: ProviderInput) {
  for (const [i, entry] of (input.groupMap ?? []).entries()) {
    const group = await getGroup(deps.db, entry.groupId);
    if (!group || group.isGuest) throw validationError({ group_map: [`Entry ${i + 1}: group ${entry.groupId} is not an existing, non-guest group.`] });
  }
}

const sealed = (deps: Deps, secret: string | undefined) => (secret === undefined || secret === "" ? secret : webhookSettings(deps).box.seal(secret));

export async function createProvider(
  deps: Deps,
  input: ProviderInput & Pick<NewOidcProvider, "slug" | "label" | "issuer" | "clientId">,
): Promise<OidcProvider> {
  await checkGroupMap(deps, input);
  try {
    const made = await insertOidcProvider(deps.db, { ...input, clientSecret: sealed(deps, input.clientSecret) });
    if (!made) throw validationError({ slug: [`The site holds ${OIDC_PROVIDERS_MAX} providers, the most it may: change one instead.`] });
    forgetSignInProviders(deps);
    return made;
  } catch (e) {
    if (isUniqueViolation(e)) throw validationError({ slug: ["Another provider has this slug."] });
    throw e;
  }
}

export async function changeProvider(deps: Deps, id: number, input: ProviderInput): Promise<OidcProvider | null> {
  await checkGroupMap(deps, input);
  try {
    const changed = await updateOidcProvider(deps.db, id, { ...input, clientSecret: sealed(deps, input.clientSecret) }, deps.clock());
    forgetDiscovery(id);
    forgetSignInProviders(deps);
    return changed;
  } catch (e) {
    if (isUniqueViolation(e)) throw validationError({ slug: ["Another provider has this slug."] });
    throw e;
  }
}

export async function removeProvider(deps: Deps, id: number): Promise<boolean> {
  forgetDiscovery(id);
  const removed = await deleteOidcProvider(deps.db, id);
  forgetSignInProviders(deps);
  return removed;
}

/**
 * The enabled providers, as the sign-in page offers them: kept like the other lookups (services/lookup-cache.ts), so
 * that the sign-in page costs no query for them. A change here is seen at once; made by another instance or the
 * command line, within LOOKUP_CACHE_MS.
 */
export const signInProvidersOf = (deps: Deps) => servicesOf(deps).lookups.remember("oidc:providers", () => listOidcProviders(deps.db, true));

const forgetSignInProviders = (deps: Deps) => servicesOf(deps).lookups.forget("oidc:");

export const findProvider = (deps: Deps, id: number) => getOidcProvider(deps.db, id);

/** The provider's client secret in clear ("" for a public client). */
export const clientSecretOf = (deps: Deps, provider: OidcProvider) =>
  provider.clientSecret === "" ? "" : webhookSettings(deps).box.open(provider.clientSecret);
