import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { listGroups } from "../../../db/repositories/groups.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute, Group, pageFields, pageOf, pageQuery } from "../common.ts";
import { toOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/groups",
      operationId: "adminListGroups",
      summary: "List user groups",
      description:
        "A page of the user groups by id (`page`, `per_page` up to 500, default 100), each with its flags, limits and ordered strategy ids. The guest group (`is_guest`) applies to callers without a token.",
      request: { query: pageQuery },
      responses: {
        ...okResponse(envelope(z.object({ groups: z.array(Group), ...pageFields }), "GroupListResponse"), "A page of groups"),
        ...errorResponses(401, 422, 500),
      },
    }),
    async (c) => {
      const { page, per_page } = c.req.valid("query");
      const { rows, total } = await listGroups(c.get("deps").db, per_page, (page - 1) * per_page);
      return respond(c, { groups: rows.map(toOutput), ...pageOf(page, per_page, total) });
    },
  );
}
