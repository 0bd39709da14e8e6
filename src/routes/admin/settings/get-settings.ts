import type { OpenAPIHono } from "@hono/zod-openapi";
import { getSettings } from "../../../db/repositories/settings.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute } from "../common.ts";
import { SettingsResponse, toOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/settings",
      operationId: "adminGetSettings",
      summary: "Read the site settings",
      description:
        "The site-wide switches: `api_enabled` (off \u2192 403 on every /api/v1 call and every page of the user center), `guest_upload_enabled` (uploads and strategy listing without a token) `registration_enabled` (sign-up on the user center), `password_sign_in` (off: sign-in through the identity providers only), and the site's identity in the pages: `site_name`, `site_logo`, `site_favicon`, `accent_color`, `default_locale`.",
      responses: { ...okResponse(SettingsResponse, "The settings"), ...errorResponses(401, 500) },
    }),
    async (c) => respond(c, toOutput(await getSettings(c.get("deps").db))),
  );
}
