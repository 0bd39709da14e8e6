import type { OpenAPIHono } from "@hono/zod-openapi";
import { deleteSessionsOfGroup } from "../../../db/repositories/sessions.ts";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute, GroupInput, idParam, jsonBody } from "../common.ts";
import { GroupResponse, toOutput, save } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "patch",
      path: "/api/admin/groups/{id}",
      operationId: "adminUpdateGroup",
      summary: "Change a user group (flags, limits, ordered strategies)",
      description:
        "Changes the named fields. `strategy_ids` replaces the ordered strategy list (automatic uploads try them in this order); `null` on a limit removes it. A group left disabled or without API access ends its users' signed-in sessions.",
      request: { params: idParam, body: jsonBody(GroupInput) },
      responses: { ...okResponse(GroupResponse, "The group"), ...errorResponses(400, 401, 404, 415, 422, 500) },
    }),
    async (c) => {
      const { db } = c.get("deps");
      const group = await save(db, c.req.valid("param").id, c.req.valid("json"));
      if (!group) throw notFound("Group not found.");
      // its accounts can no longer sign in: their sessions end, so that enabling the group again does not revive them
      if (!group.enabled || !group.allowApi) await deleteSessionsOfGroup(db, group.id);
      return respond(c, toOutput(group));
    },
  );
}
