import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { respond } from "../../http/envelope.ts";
import { requireUser } from "../../http/auth.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { envelope, Profile } from "../../http/schemas.ts";
import type { AppEnv } from "../../http/types.ts";
import { getUser } from "../../db/repositories/users.ts";
import { toProfile } from "../../http/profile-resource.ts";

const getProfileRoute = createRoute({
  method: "get",
  path: "/api/v1/profile",
  operationId: "getProfile",
  tags: ["Account"],
  summary: "Read the account profile",
  description:
    "Returns the calling account's profile: capacity and used space in KB (used space may be fractional), the number of images and albums, and the IP address recorded at registration. Requires a permanent token.",
  security: [{ bearerAuth: [] }],
  middleware: [requireUser] as const,
  responses: {
    ...okResponse(envelope(Profile, "ProfileResponse"), "The profile"),
    ...errorResponses(401, 403, 500),
  },
});

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(getProfileRoute, async (c) => {
    const { user, group } = c.get("caller");
    const { db, config } = c.get("deps");
    // the caller's account may be up to a second old (authentication is cached): the figures are read now
    const current = (await getUser(db, user.id)) ?? user;
    return respond(c, toProfile(current, group, config.baseUrl));
  });
}
