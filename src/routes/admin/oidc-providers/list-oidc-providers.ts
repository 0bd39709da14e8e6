import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { countIdentitiesByProvider, listOidcProviders, OIDC_PROVIDERS_MAX } from "../../../db/repositories/oidc.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute } from "../common.ts";
import { OidcProviderSchema, toOutput } from "./shared.ts";

const OidcProviderList = envelope(z.object({ providers: z.array(OidcProviderSchema) }), "OidcProviderListResponse");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/oidc-providers",
      operationId: "adminListOidcProviders",
      summary: "List the OpenID Connect providers",
      description: `Every provider (at most ${OIDC_PROVIDERS_MAX}), in the order the sign-in page shows them, with the redirect URI to register at each and how many accounts are linked to it. Client secrets are never answered.`,
      responses: { ...okResponse(OidcProviderList, "The providers"), ...errorResponses(401, 500) },
    }),
    async (c) => {
      const deps = c.get("deps");
      const [providers, counts] = await Promise.all([listOidcProviders(deps.db), countIdentitiesByProvider(deps.db)]);
      return respond(c, { providers: providers.map((p) => toOutput(p, deps.config.baseUrl, counts.get(p.id) ?? 0)) });
    },
  );
}
