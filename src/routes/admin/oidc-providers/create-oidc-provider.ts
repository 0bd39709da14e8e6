import type { OpenAPIHono } from "@hono/zod-openapi";
import { OIDC_PROVIDERS_MAX } from "../../../db/repositories/oidc.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { createProvider } from "../../../services/oidc/providers.ts";
import { adminRoute, jsonBody } from "../common.ts";
import { OidcProviderFields, OidcProviderResponse, toInput, toOutput } from "./shared.ts";

const CreateOidcProviderInput = OidcProviderFields.partial()
  .required({ slug: true, label: true, issuer: true, client_id: true })
  .strict()
  .openapi("CreateOidcProviderInput");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/oidc-providers",
      operationId: "adminCreateOidcProvider",
      summary: "Add an OpenID Connect provider",
      description:
        "Adds a provider to the sign-in page. Defaults: scopes `openid profile email`, `username_claim` preferred_username, `email_claim` email, " +
        `no groups claim, auto-provisioning off, enabled. The slug names its redirect URI (answered as \`redirect_uri\`). At most ${OIDC_PROVIDERS_MAX} providers: beyond, 422.`,
      request: { body: jsonBody(CreateOidcProviderInput) },
      responses: { ...okResponse(OidcProviderResponse, "The provider"), ...errorResponses(400, 401, 415, 422, 500) },
    }),
    async (c) => {
      const deps = c.get("deps");
      const input = toInput(c.req.valid("json"));
      const made = await createProvider(deps, { ...input, slug: input.slug!, label: input.label!, issuer: input.issuer!, clientId: input.clientId! });
      return respond(c, toOutput(made, deps.config.baseUrl, 0));
    },
  );
}
