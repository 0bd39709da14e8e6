import { z } from "@hono/zod-openapi";
import type { getSettings } from "../../../db/repositories/settings.ts";
import { envelope } from "../../../http/schemas.ts";

export const Settings = z
  .object({
    api_enabled: z.boolean().openapi({ description: "Site-wide API switch; off = 403 on every /api/v1 call and every page of the user center" }),
    guest_upload_enabled: z.boolean().openapi({ description: "Allow uploads and strategy listing without a token" }),
    registration_enabled: z
      .boolean()
      .openapi({ description: "Let visitors create their own account on the user center's sign-up page (/user/register); it joins the default group" }),
  })
  .openapi("Settings");

export const SettingsResponse = envelope(Settings, "SettingsResponse");

export const toOutput = (s: Awaited<ReturnType<typeof getSettings>>) => ({
  api_enabled: s.apiEnabled,
  guest_upload_enabled: s.guestUploadEnabled,
  registration_enabled: s.registrationEnabled,
});
