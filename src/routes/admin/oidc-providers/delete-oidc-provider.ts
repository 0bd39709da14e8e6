import type { OpenAPIHono } from "@hono/zod-openapi";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { EmptyResponse } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { removeProvider } from "../../../services/oidc/providers.ts";
import { adminRoute, idParam } from "../common.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "delete",
      path: "/api/admin/oidc-providers/{id}",
      operationId: "adminDeleteOidcProvider",
      summary: "Remove an OpenID Connect provider",
      description:
        "Removes the provider, the identities linked through it and its sign-ins under way. The accounts stay; one with no password can sign in again once an administrator gives it one (`bun run cli user set-password`).",
      request: { params: idParam },
      responses: { ...okResponse(EmptyResponse, "Removed; `data` is null"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      if (!(await removeProvider(c.get("deps"), c.req.valid("param").id))) throw notFound("No such provider.");
      return respond(c, null);
    },
  );
}
