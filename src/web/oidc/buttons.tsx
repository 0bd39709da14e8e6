/** The sign-in page's identity provider buttons: one small form each, posted to start that provider's sign-in. */
import type { OidcProvider } from "../../db/repositories/oidc.ts";
import { t } from "../i18n/index.ts";
import { BASE } from "../session.ts";

export function ProviderButtons({ providers, next }: { providers: Pick<OidcProvider, "slug" | "label">[]; next?: string }) {
  if (providers.length === 0) return null;
  return (
    <nav class="card narrow providers" aria-label={t("oidc.providersLabel")}>
      {providers.map((p) => (
        <form method="post" action={`${BASE}/oidc/${p.slug}/start`}>
          {next && <input type="hidden" name="next" value={next} />}
          <button type="submit" class="provider">
            {p.label}
          </button>
        </form>
      ))}
    </nav>
  );
}
