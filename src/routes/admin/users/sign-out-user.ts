import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { signOutAccount } from "../../../services/users.ts";
import { adminRoute, idParam } from "../common.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/users/{id}/sign-out",
      operationId: "adminSignOutUser",
      summary: "Revoke a user's tokens and end their sessions",
      description:
        "Revokes every permanent and temporary token of the user and ends every signed-in session, in one transaction; `data` counts the tokens revoked.",
      request: { params: idParam },
      responses: { ...okResponse(envelope(z.object({ tokens_revoked: z.number().int() }), "SignOutResponse"), "Done"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const { db, clock } = c.get("deps");
      const revoked = await signOutAccount(db, c.req.valid("param").id, clock());
      if (revoked === null) throw notFound("User not found.");
      return respond(c, { tokens_revoked: revoked });
    },
  );
}
