import type { OpenAPIHono } from "@hono/zod-openapi";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { EmptyResponse } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { revokeToken } from "../../../services/tokens.ts";
import { adminRoute, idParam } from "../common.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "delete",
      path: "/api/admin/tokens/{id}",
      operationId: "adminRevokeToken",
      summary: "Revoke a token (permanent or temporary)",
      description:
        "Revokes a permanent or temporary token by id; it answers 401 from then on. Revoking a permanent token also revokes the temporary tokens it issued, in the same transaction. Revoking twice is not an error.",
      request: { params: idParam },
      responses: { ...okResponse(EmptyResponse, "Revoked; `data` is null"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const { db, clock } = c.get("deps");
      if (!(await revokeToken(db, c.req.valid("param").id, clock()))) throw notFound("Token not found.");
      return respond(c, null);
    },
  );
}
