import type { OpenAPIHono } from "@hono/zod-openapi";
import { updateSettings } from "../../../db/repositories/settings.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute, jsonBody } from "../common.ts";
import { Settings, SettingsResponse, toOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "patch",
      path: "/api/admin/settings",
      operationId: "adminUpdateSettings",
      summary: "Change the site settings",
      description:
        "Changes the named switches and the site's identity (name, logo, favicon, accent colour, default language of the pages); omitted ones stay as they are.",
      request: { body: jsonBody(Settings.partial().strict().openapi("SettingsInput")) },
      responses: { ...okResponse(SettingsResponse, "The settings"), ...errorResponses(400, 401, 415, 422, 500) },
    }),
    async (c) => {
      const body = c.req.valid("json");
      const s = await updateSettings(c.get("deps").db, {
        apiEnabled: body.api_enabled,
        guestUploadEnabled: body.guest_upload_enabled,
        registrationEnabled: body.registration_enabled,
        passwordSignIn: body.password_sign_in,
        siteName: body.site_name,
        siteLogo: body.site_logo,
        siteFavicon: body.site_favicon,
        accentColor: body.accent_color,
        defaultLocale: body.default_locale,
        requireSecondFactor: body.require_second_factor,
      });
      return respond(c, toOutput(s));
    },
  );
}
