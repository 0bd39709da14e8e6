import type { OpenAPIHono } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { rotateSecret } from "../../../services/webhooks.ts";
import { adminRoute, idParam } from "../common.ts";
import { SITE, EndpointSecretResponse, endpointOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/webhooks/{id}/secret",
      operationId: "adminRotateWebhookSecret",
      summary: "Rotate a site-wide webhook endpoint's signing secret",
      description:
        "A new signing secret, shown this once in the answer (stored encrypted, never answered again). The old one stops signing at once: " +
        "attempts from now on, retries included, are signed with the new one.",
      request: { params: idParam },
      responses: {
        ...okResponse(EndpointSecretResponse, "The endpoint and its new secret (shown this once)"),
        ...errorResponses(401, 404, 422, 500),
      },
    }),
    async (c) => {
      const { endpoint, secret } = await rotateSecret(c.get("deps"), SITE, c.req.valid("param").id);
      return respond(c, { ...endpointOutput(endpoint), secret });
    },
  );
}
