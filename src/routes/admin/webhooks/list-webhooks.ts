import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { getUser } from "../../../db/repositories/users.ts";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { INT4_MAX, intField } from "../../../http/validation.ts";
import { ENDPOINTS_PER_ACCOUNT, listEndpoints, SITE_ENDPOINTS_MAX } from "../../../services/webhooks.ts";
import { adminRoute } from "../common.ts";
import { SITE, EVENTS_TEXT, WebhookEndpoint, endpointOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/webhooks",
      operationId: "adminListWebhooks",
      summary: "List the site-wide webhook endpoints (or one user's)",
      description:
        `The site-wide endpoints by id (at most ${SITE_ENDPOINTS_MAX}), never their secrets. With \`user_id\`, that user's own endpoints instead ` +
        `(at most ${ENDPOINTS_PER_ACCOUNT} per account), to look at: the user manages them in the user center, and the other operations here ` +
        `act on site-wide endpoints only. ${EVENTS_TEXT}`,
      request: {
        query: z.object({
          user_id: intField(1, INT4_MAX)
            .optional()
            .openapi({ type: "integer", minimum: 1, maximum: INT4_MAX, description: "List this user's endpoints instead of the site-wide ones", example: 1 }),
        }),
      },
      responses: {
        ...okResponse(envelope(z.object({ endpoints: z.array(WebhookEndpoint) }), "WebhookEndpointListResponse"), "The endpoints"),
        ...errorResponses(401, 404, 422, 500),
      },
    }),
    async (c) => {
      const { db } = c.get("deps");
      const userId = c.req.valid("query").user_id;
      if (userId !== undefined && !(await getUser(db, userId))) throw notFound("User not found.");
      const rows = await listEndpoints(db, userId === undefined ? SITE : { ownerId: userId });
      return respond(c, { endpoints: rows.map(endpointOutput) });
    },
  );
}
