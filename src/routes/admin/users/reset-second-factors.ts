import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { resetSecondFactors } from "../../../services/second-factors/reset.ts";
import { adminRoute, idParam } from "../common.ts";

const Reset = z
  .object({
    totp_removed: z.boolean().openapi({ description: "Whether the user had an authenticator app (TOTP), now removed" }),
    recovery_codes_removed: z.number().int().openapi({ description: "Recovery codes removed, used or not" }),
    passkeys_removed: z.number().int().openapi({ description: "Passkeys removed" }),
  })
  .openapi("SecondFactorsReset");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "delete",
      path: "/api/admin/users/{id}/second-factors",
      operationId: "adminResetSecondFactors",
      summary: "Remove a user's second factors",
      description:
        "The way back for someone who lost their second factor: removes the user's authenticator app, recovery codes and passkeys, and their sign-ins under way, in one transaction. The password and the signed-in sessions stay. Where the site requires a second factor, the user is led to set one up at the next sign-in. Written to the audit log.",
      request: { params: idParam },
      responses: { ...okResponse(envelope(Reset, "SecondFactorsResetResponse"), "Removed"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const reset = await resetSecondFactors(c.get("deps").db, c.req.valid("param").id);
      if (reset === null) throw notFound("User not found.");
      return respond(c, { totp_removed: reset.totp, recovery_codes_removed: reset.recoveryCodes, passkeys_removed: reset.passkeys });
    },
  );
}
