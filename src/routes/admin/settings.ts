import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { getSettings, updateSettings } from "../../db/repositories/settings.ts";
import { respond } from "../../http/envelope.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { envelope } from "../../http/schemas.ts";
import type { AppEnv } from "../../http/types.ts";
import { adminRoute, jsonBody } from "./common.ts";

const Settings = z
  .object({
    api_enabled: z.boolean().openapi({ description: "Site-wide API switch; off = 403 on every /api/v1 call and every page of the user center" }),
    guest_upload_enabled: z.boolean().openapi({ description: "Allow uploads and strategy listing without a token" }),
    registration_enabled: z
      .boolean()
      .openapi({ description: "Let visitors create their own account on the user center's sign-up page (/user/register); it joins the default group" }),
  })
  .openapi("Settings");

const SettingsResponse = envelope(Settings, "SettingsResponse");
const toOutput = (s: Awaited<ReturnType<typeof getSettings>>) => ({
  api_enabled: s.apiEnabled,
  guest_upload_enabled: s.guestUploadEnabled,
  registration_enabled: s.registrationEnabled,
});

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/settings",
      operationId: "adminGetSettings",
      summary: "Read the site settings",
      description:
        "The site-wide switches: `api_enabled` (off \u2192 403 on every /api/v1 call and every page of the user center), `guest_upload_enabled` (uploads and strategy listing without a token) and `registration_enabled` (sign-up on the user center).",
      responses: { ...okResponse(SettingsResponse, "The settings"), ...errorResponses(401, 500) },
    }),
    async (c) => respond(c, toOutput(await getSettings(c.get("deps").db))),
  );
  app.openapi(
    adminRoute({
      method: "patch",
      path: "/api/admin/settings",
      operationId: "adminUpdateSettings",
      summary: "Change the site settings",
      description: "Changes the named switches; omitted ones stay as they are.",
      request: { body: jsonBody(Settings.partial().strict().openapi("SettingsInput")) },
      responses: { ...okResponse(SettingsResponse, "The settings"), ...errorResponses(400, 401, 415, 422, 500) },
    }),
    async (c) => {
      const body = c.req.valid("json");
      const s = await updateSettings(c.get("deps").db, {
        apiEnabled: body.api_enabled,
        guestUploadEnabled: body.guest_upload_enabled,
        registrationEnabled: body.registration_enabled,
      });
      return respond(c, toOutput(s));
    },
  );
}
