import type { OpenAPIHono } from "@hono/zod-openapi";
import { getSettings } from "../../../db/repositories/settings.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute } from "../common.ts";
import { MailSettingsResponse, toOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/mail",
      operationId: "adminGetMailSettings",
      summary: "Read the mail settings",
      description:
        "The SMTP server the site's mail goes through (password reset, email verification, the test mail) and where it is set: the environment (SMTP_HOST and the other SMTP_ variables win over the stored settings) or these settings. The password is never returned.",
      responses: { ...okResponse(MailSettingsResponse, "The mail settings"), ...errorResponses(401, 500) },
    }),
    async (c) => {
      const deps = c.get("deps");
      return respond(c, toOutput(deps, await getSettings(deps.db)));
    },
  );
}
