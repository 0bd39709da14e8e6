import type { OpenAPIHono } from "@hono/zod-openapi";
import { countIdentitiesByProvider } from "../../../db/repositories/oidc.ts";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { changeProvider } from "../../../services/oidc/providers.ts";
import { adminRoute, idParam, jsonBody } from "../common.ts";
import { OidcProviderFields, OidcProviderResponse, toInput, toOutput } from "./shared.ts";

const UpdateOidcProviderInput = OidcProviderFields.partial().strict().openapi("UpdateOidcProviderInput");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "patch",
      path: "/api/admin/oidc-providers/{id}",
      operationId: "adminUpdateOidcProvider",
      summary: "Change an OpenID Connect provider",
      description:
        "Changes the fields given; omitted ones stay. Omit `client_secret` to keep the stored one; an empty string removes it (a public client). " +
        "A new slug changes the redirect URI. Linked identities stay linked: they are keyed by the ID token's issuer and subject.",
      request: { params: idParam, body: jsonBody(UpdateOidcProviderInput) },
      responses: { ...okResponse(OidcProviderResponse, "The provider"), ...errorResponses(400, 401, 404, 415, 422, 500) },
    }),
    async (c) => {
      const deps = c.get("deps");
      const changed = await changeProvider(deps, c.req.valid("param").id, toInput(c.req.valid("json")));
      if (!changed) throw notFound("No such provider.");
      const counts = await countIdentitiesByProvider(deps.db);
      return respond(c, toOutput(changed, deps.config.baseUrl, counts.get(changed.id) ?? 0));
    },
  );
}
