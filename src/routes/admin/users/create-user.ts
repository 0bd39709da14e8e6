import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { clientIp } from "../../../http/auth.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { INT4_MAX } from "../../../http/validation.ts";
import { PASSWORD_MAX, PASSWORD_MIN } from "../../../services/passwords.ts";
import { createAccount } from "../../../services/users.ts";
import { adminRoute, jsonBody } from "../common.ts";
import { UserResponse, toOutput, role } from "./shared.ts";

const CreateUser = z
  .object({
    username: z.string().regex(/^[A-Za-z0-9_.-]{2,64}$/, "2–64 letters, digits, '_', '.' or '-'"),
    email: z.email(),
    name: z.string().min(1).max(100).optional(),
    password: z.string().min(PASSWORD_MIN).max(PASSWORD_MAX).optional().openapi({ description: "For the user center's sign-in; stored as an argon2id hash" }),
    group_id: z.number().int().positive().max(INT4_MAX).optional().openapi({ description: "Default: the default group" }),
    capacity_kb: z.number().int().min(0).nullable().optional().openapi({ description: "null or absent = the group's default" }),
    registered_ip: z.string().max(45).optional().openapi({ description: "Default: the address of the admin request" }),
    role: role.optional(),
  })
  .openapi("CreateUserInput");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/users",
      operationId: "adminCreateUser",
      summary: "Create a user",
      description:
        "Creates a user in `group_id` (default: the default group). `capacity_kb` null or absent means the group's default capacity. The password, if any, is stored hashed.",
      request: { body: jsonBody(CreateUser) },
      responses: { ...okResponse(UserResponse, "The user"), ...errorResponses(400, 401, 415, 422, 500) },
    }),
    async (c) => {
      const b = c.req.valid("json");
      const user = await createAccount(c.get("deps").db, {
        username: b.username,
        email: b.email,
        name: b.name,
        password: b.password,
        groupId: b.group_id,
        capacityKb: b.capacity_kb,
        registeredIp: b.registered_ip ?? clientIp(c),
        role: b.role,
      });
      return respond(c, toOutput(user));
    },
  );
}
