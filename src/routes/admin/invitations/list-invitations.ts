import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { listInvitations } from "../../../services/invitations.ts";
import { adminRoute, pageFields, pageOf, pageQuery } from "../common.ts";
import { AdminInvitation, toOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/invitations",
      operationId: "adminListInvitations",
      summary: "List the invitations",
      description: "A page of the invitations, newest first, without their codes (`page`, `per_page` up to 500, default 100).",
      request: { query: pageQuery },
      responses: {
        ...okResponse(envelope(z.object({ invitations: z.array(AdminInvitation), ...pageFields }), "AdminInvitationListResponse"), "A page of invitations"),
        ...errorResponses(401, 422, 500),
      },
    }),
    async (c) => {
      const { db, clock } = c.get("deps");
      const { page, per_page } = c.req.valid("query");
      const { rows, total } = await listInvitations(db, per_page, (page - 1) * per_page);
      const now = clock();
      return respond(c, { ...pageOf(page, per_page, total), invitations: rows.map((i) => toOutput(i, now)) });
    },
  );
}
