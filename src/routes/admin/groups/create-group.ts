import type { OpenAPIHono } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute, GroupInput, jsonBody } from "../common.ts";
import { GroupResponse, toOutput, save } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/groups",
      operationId: "adminCreateGroup",
      summary: "Create a user group",
      description:
        "Creates a user group. Omitted limits take their defaults (10 MB per image, 100 MP, 1 GB capacity, no frequency or concurrency limit, no retention ceiling, no content review).",
      request: { body: jsonBody(GroupInput.required({ name: true }).openapi("CreateGroupInput")) },
      responses: { ...okResponse(GroupResponse, "The group"), ...errorResponses(400, 401, 415, 422, 500) },
    }),
    async (c) => {
      const group = await save(c.get("deps").db, null, c.req.valid("json"));
      return respond(c, toOutput(group!));
    },
  );
}
