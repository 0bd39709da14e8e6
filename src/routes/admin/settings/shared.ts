import { z } from "@hono/zod-openapi";
import type { getSettings } from "../../../db/repositories/settings.ts";
import { envelope } from "../../../http/schemas.ts";
import { ACCENT_PATTERN, parseSiteImage, SITE_IMAGE_MAX, SITE_NAME_MAX } from "../../../http/site-identity.ts";

const siteImage = (which: keyof typeof SITE_IMAGE_MAX, description: string) =>
  z
    .string()
    .max(Math.ceil((SITE_IMAGE_MAX[which] * 4) / 3) + 64)
    .superRefine((value, ctx) => {
      const parsed = parseSiteImage(value, SITE_IMAGE_MAX[which]);
      if ("error" in parsed) ctx.addIssue({ code: "custom", message: parsed.error });
    })
    .nullable()
    .openapi({ description, example: "data:image/png;base64,iVBORw0KGgo=" });

export const Settings = z
  .object({
    api_enabled: z.boolean().openapi({ description: "Site-wide API switch; off = 403 on every /api/v1 call and every page of the user center" }),
    guest_upload_enabled: z.boolean().openapi({ description: "Allow uploads and strategy listing without a token" }),
    registration_enabled: z
      .boolean()
      .openapi({ description: "Let visitors create their own account on the user center's sign-up page (/user/register); it joins the default group" }),
    password_sign_in: z.boolean().openapi({
      description:
        "The sign-in page offers the password form; false: only the identity providers' buttons (provider-only), and a password signs nobody in on the pages. The admin API and the CLI (ADMIN_TOKEN) stay the way back",
    }),
    site_name: z
      .string()
      .trim()
      .max(SITE_NAME_MAX)
      .refine((s) => !/\p{Cc}/u.test(s), "The name must not contain control characters.")
      .openapi({ description: "The site's name in the pages' header and titles, the sign-in page and the API reference; empty = the default name" }),
    site_logo: siteImage("logo", "The logo beside the name: a data: URL of a PNG, JPEG, GIF, WebP or ICO image of at most 24 KB; null = the default mark"),
    site_favicon: siteImage("favicon", "The pages' icon: a data: URL of a PNG, JPEG, GIF, WebP or ICO image of at most 8 KB; null = the default icon"),
    accent_color: z
      .string()
      .refine((s) => s === "" || ACCENT_PATTERN.test(s), "Give the colour as #rrggbb, or empty for the default.")
      .openapi({ description: "The pages' accent colour as #rrggbb (adjusted for contrast in light and dark); empty = the default", example: "#1f5fbf" }),
    require_second_factor: z.enum(["off", "admins", "everyone"]).openapi({
      description:
        "Who must sign in to the pages with a second factor (an authenticator app or a passkey): nobody more (off), administrators, or everyone. Accounts without one are led to set one up at their next sign-in. API tokens are not affected",
    }),
    default_locale: z
      .enum(["en", "zh-CN"])
      .openapi({ description: "The pages' language for visitors whose account and browser choose none of the site's languages" }),
  })
  .openapi("Settings");

export const SettingsResponse = envelope(Settings, "SettingsResponse");

export const toOutput = (s: Awaited<ReturnType<typeof getSettings>>) => ({
  api_enabled: s.apiEnabled,
  guest_upload_enabled: s.guestUploadEnabled,
  registration_enabled: s.registrationEnabled,
  password_sign_in: s.passwordSignIn,
  site_name: s.siteName,
  site_logo: s.siteLogo,
  site_favicon: s.siteFavicon,
  accent_color: s.accentColor,
  require_second_factor: s.requireSecondFactor,
  default_locale: s.defaultLocale as "en" | "zh-CN",
});
