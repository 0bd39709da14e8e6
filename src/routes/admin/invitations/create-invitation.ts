import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { getDefaultGroup, getGroup } from "../../../db/repositories/groups.ts";
import { AppError, validationError } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { createInvitation, INVITATION_MAX_SECONDS, INVITATION_MAX_USES, invitationUrl } from "../../../services/invitations.ts";
import { adminRoute, jsonBody } from "../common.ts";
import { AdminInvitation, toOutput } from "./shared.ts";

const DEFAULT_SECONDS = 7 * 86_400;

const InvitationInput = z
  .object({
    group_id: z.number().int().min(1).optional().openapi({ description: "The group the accounts join; omitted = the default group", example: 1 }),
    max_uses: z.number().int().min(1).max(INVITATION_MAX_USES).default(1).openapi({ description: "Accounts it may make", example: 5 }),
    expires_in: z
      .number()
      .int()
      .min(60)
      .max(INVITATION_MAX_SECONDS)
      .default(DEFAULT_SECONDS)
      .openapi({ description: "Seconds it stays valid (60 to a year; default a week)", example: 604800 }),
    note: z.string().trim().max(200).default("").openapi({ description: "Whom it is for", example: "photo club" }),
  })
  .strict()
  .openapi("InvitationInput");

const CreatedInvitation = AdminInvitation.extend({
  code: z.string().openapi({ description: "The invitation code (shown this once)", example: "5tW0m1p6k3d3Jq9ZxY0aBcDeFgHiJkLm" }),
  url: z.url().openapi({ description: "The sign-up page with the code: give this link to the people invited" }),
}).openapi("CreatedInvitation");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/invitations",
      operationId: "adminCreateInvitation",
      summary: "Make an invitation",
      description:
        "An invitation link to the sign-up page that works while registration is closed (and, while it is open, puts the account in the invitation's group): `max_uses` accounts at most, until `expires_in` seconds from now. The code is shown this once; only its hash is kept. The guest group cannot be given.",
      request: { body: jsonBody(InvitationInput) },
      responses: {
        ...okResponse(envelope(CreatedInvitation, "CreatedInvitationResponse"), "The invitation and its link"),
        ...errorResponses(400, 401, 415, 422, 500),
      },
    }),
    async (c) => {
      const deps = c.get("deps");
      const body = c.req.valid("json");
      const group = body.group_id === undefined ? await getDefaultGroup(deps.db) : await getGroup(deps.db, body.group_id);
      if (!group) {
        if (body.group_id === undefined) throw new AppError("bad_request", "There is no default group: give group_id.");
        throw validationError({ group_id: ["There is no group with this id."] });
      }
      if (group.isGuest) throw validationError({ group_id: ["The guest group cannot have accounts."] });
      const now = deps.clock();
      const { invitation, code } = await createInvitation(
        deps.db,
        { groupId: group.id, maxUses: body.max_uses, expiresAt: new Date(now.getTime() + body.expires_in * 1000), note: body.note },
        now,
      );
      return respond(c, { ...toOutput(invitation, now), code, url: invitationUrl(deps, code) });
    },
  );
}
