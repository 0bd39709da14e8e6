import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { INT4_MAX } from "../../../http/validation.ts";
import { PASSWORD_MAX, PASSWORD_MIN } from "../../../services/passwords.ts";
import { changeAccount } from "../../../services/users.ts";
import { adminRoute, idParam, jsonBody } from "../common.ts";
import { UserResponse, toOutput, role } from "./shared.ts";

const UpdateUser = z
  .object({
    enabled: z.boolean(),
    group_id: z.number().int().positive().max(INT4_MAX),
    capacity_kb: z.number().int().min(0).nullable(),
    name: z.string().min(1).max(100),
    email: z.email(),
    role,
    password: z.string().min(PASSWORD_MIN).max(PASSWORD_MAX).nullable().openapi({
      description: "A new password for the user center's sign-in (stored as an argon2id hash), or null to remove it; either ends the user's signed-in sessions",
    }),
  })
  .partial()
  .openapi("UpdateUserInput");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "patch",
      path: "/api/admin/users/{id}",
      operationId: "adminUpdateUser",
      summary: "Change a user (enabled, group, capacity, name, email, role, password)",
      description:
        "Enables or disables the account (disabled \u2192 403 on every call and no sign-in), moves it to another group, changes its capacity (`null` = the group's default), email (unique) or role, or sets its password for the user center (`null` removes it). A new password, disabling the account or moving it into a disabled group ends the user's signed-in sessions: enabling it again does not revive them.",
      request: { params: idParam, body: jsonBody(UpdateUser) },
      responses: { ...okResponse(UserResponse, "The user"), ...errorResponses(400, 401, 404, 415, 422, 500) },
    }),
    async (c) => {
      const { db, clock } = c.get("deps");
      const b = c.req.valid("json");
      const change = { enabled: b.enabled, groupId: b.group_id, capacityKb: b.capacity_kb, name: b.name, email: b.email, role: b.role, password: b.password };
      const user = await changeAccount(db, c.req.valid("param").id, change, clock());
      if (!user) throw notFound("User not found.");
      return respond(c, toOutput(user));
    },
  );
}
