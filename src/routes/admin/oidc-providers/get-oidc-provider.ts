import type { OpenAPIHono } from "@hono/zod-openapi";
import { countIdentitiesByProvider } from "../../../db/repositories/oidc.ts";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { findProvider } from "../../../services/oidc/providers.ts";
import { adminRoute, idParam } from "../common.ts";
import { OidcProviderResponse, toOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/oidc-providers/{id}",
      operationId: "adminGetOidcProvider",
      summary: "Read an OpenID Connect provider",
      description: "The provider's settings and redirect URI; its client secret is never answered (`client_secret_set`).",
      request: { params: idParam },
      responses: { ...okResponse(OidcProviderResponse, "The provider"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const deps = c.get("deps");
      const provider = await findProvider(deps, c.req.valid("param").id);
      if (!provider) throw notFound("No such provider.");
      const counts = await countIdentitiesByProvider(deps.db);
      return respond(c, toOutput(provider, deps.config.baseUrl, counts.get(provider.id) ?? 0));
    },
  );
}
