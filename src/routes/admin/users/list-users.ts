import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { listUsers } from "../../../db/repositories/users.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { AdminUser, adminRoute, pageFields, pageOf, pageQuery } from "../common.ts";
import { toOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/users",
      operationId: "adminListUsers",
      summary: "List users (optionally by exact username)",
      description:
        "A page of the users by id (`page`, `per_page` up to 500, default 100): all of them, those matching `q`, or the one with this exact `username`.",
      request: {
        query: pageQuery.extend({
          username: z.string().max(64).optional().openapi({ example: "alice" }),
          q: z
            .string()
            .max(100)
            .optional()
            .openapi({ description: "Only users whose username, name or email contains this (any case)", example: "example.com" }),
        }),
      },
      responses: {
        ...okResponse(envelope(z.object({ users: z.array(AdminUser), ...pageFields }), "AdminUserListResponse"), "A page of users"),
        ...errorResponses(401, 422, 500),
      },
    }),
    async (c) => {
      const { page, per_page, username, q } = c.req.valid("query");
      const { rows, total } = await listUsers(c.get("deps").db, per_page, (page - 1) * per_page, username, q || undefined);
      return respond(c, { users: rows.map(toOutput), ...pageOf(page, per_page, total) });
    },
  );
}
