import type { OpenAPIHono } from "@hono/zod-openapi";
import { getUser } from "../../../db/repositories/users.ts";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute, idParam } from "../common.ts";
import { UserResponse, toOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/users/{id}",
      operationId: "adminGetUser",
      summary: "Read a user",
      description: "One user with capacity, used space and counters.",
      request: { params: idParam },
      responses: { ...okResponse(UserResponse, "The user"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const user = await getUser(c.get("deps").db, c.req.valid("param").id);
      if (!user) throw notFound("User not found.");
      return respond(c, toOutput(user));
    },
  );
}
