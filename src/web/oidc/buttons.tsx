/**
 * The sign-in page's identity provider buttons: links that start that provider's sign-in. Links, not forms: the
 * start answers a redirect to the provider, and a form's redirect to another site is refused by the pages'
 * `form-action 'self'` policy.
 */
import type { OidcProvider } from "../../db/repositories/oidc.ts";
import { t } from "../i18n/index.ts";
import { BASE } from "../session.ts";

export function ProviderButtons({ providers, next }: { providers: Pick<OidcProvider, "slug" | "label">[]; next?: string }) {
  if (providers.length === 0) return null;
  return (
    <nav class="card narrow providers" aria-label={t("oidc.providersLabel")}>
      {providers.map((p) => (
        <a class="button provider" href={`${BASE}/oidc/${p.slug}/start${next ? `?next=${encodeURIComponent(next)}` : ""}`}>
          {p.label}
        </a>
      ))}
    </nav>
  );
}
