import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { dateTime, envelope } from "../../../http/schemas.ts";
import { formatDateTime } from "../../../http/time.ts";
import { createPasswordLink, PASSWORD_LINK_MS } from "../../../services/password-links.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute, idParam } from "../common.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/users/{id}/password-link",
      operationId: "adminCreatePasswordLink",
      summary: "Make a one-time link to set a user's password",
      description: `A link to the user center's page that sets this user's password: valid for ${PASSWORD_LINK_MS / 60_000} minutes, used once; using it ends the user's sessions. Give it to the user over a channel you trust. At most 5 links are live per user (a new one ends the oldest).`,
      request: { params: idParam },
      responses: {
        ...okResponse(envelope(z.object({ url: z.url(), expired_at: dateTime }), "PasswordLinkResponse"), "The link (shown this once)"),
        ...errorResponses(401, 404, 422, 500),
      },
    }),
    async (c) => {
      const link = await createPasswordLink(c.get("deps"), c.req.valid("param").id);
      if (!link) throw notFound("User not found.");
      return respond(c, { url: link.url, expired_at: formatDateTime(link.expiresAt) });
    },
  );
}
