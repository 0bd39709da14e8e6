import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { revokeInvitation } from "../../../services/invitations.ts";
import { adminRoute, idParam } from "../common.ts";
import { AdminInvitation, toOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "delete",
      path: "/api/admin/invitations/{id}",
      operationId: "adminRevokeInvitation",
      summary: "Withdraw an invitation",
      description: "The invitation stops working at once; accounts already made with it stay. Withdrawing twice is not an error (the first time is kept).",
      request: { params: idParam },
      responses: {
        ...okResponse(envelope(z.object({ invitation: AdminInvitation }), "AdminInvitationResponse"), "The withdrawn invitation"),
        ...errorResponses(401, 404, 422, 500),
      },
    }),
    async (c) => {
      const { db, clock } = c.get("deps");
      const now = clock();
      const invitation = await revokeInvitation(db, c.req.valid("param").id, now);
      if (!invitation) throw notFound("Invitation not found.");
      return respond(c, { invitation: toOutput(invitation, now) });
    },
  );
}
