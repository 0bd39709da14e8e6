/** The administration of invitations: one file per operation. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../../http/types.ts";
import * as createInvitation from "./create-invitation.ts";
import * as listInvitations from "./list-invitations.ts";
import * as revokeInvitation from "./revoke-invitation.ts";

/** In this order: the order of the operations in the spec. */
const operations = [listInvitations, createInvitation, revokeInvitation];

export function register(app: OpenAPIHono<AppEnv>) {
  for (const operation of operations) operation.register(app);
}
