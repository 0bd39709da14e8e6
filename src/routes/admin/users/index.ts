/** The administration of users: one file per operation. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../../http/types.ts";
import * as listUsers from "./list-users.ts";
import * as createUser from "./create-user.ts";
import * as getUser from "./get-user.ts";
import * as updateUser from "./update-user.ts";
import * as signOutUser from "./sign-out-user.ts";
import * as resetSecondFactors from "./reset-second-factors.ts";
import * as createPasswordLink from "./create-password-link.ts";
import * as deleteUser from "./delete-user.ts";

/** In this order: the order of the operations in the spec. */
const operations = [listUsers, createUser, getUser, updateUser, signOutUser, resetSecondFactors, createPasswordLink, deleteUser];

export function register(app: OpenAPIHono<AppEnv>) {
  for (const operation of operations) operation.register(app);
}
