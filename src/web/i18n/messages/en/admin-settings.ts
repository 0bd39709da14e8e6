/** Messages of the admin Settings page, in English. */
export default {
  "admin.settings.title": "Settings",
  "admin.settings.saved": "Settings saved.",
  "admin.settings.apiOff": "The API and the user center are switched off: only administrators, on these pages, can use the site.",
  "admin.settings.switches": "Site switches",
  "admin.settings.api_enabled": "API and user center",
  "admin.settings.api_enabled.hint":
    "Off: every /api/v1 call and every page of the user center answers 403, for everyone but administrators on these admin pages.",
  "admin.settings.guest_upload_enabled": "Guest upload",
  "admin.settings.guest_upload_enabled.hint": "Uploads (and the strategy list) without a token, under the guest group's limits.",
  "admin.settings.registration_enabled": "Registration",
  "admin.settings.registration_enabled.hint": "Visitors may create their own account on the sign-up page; it joins the default group.",
  "admin.settings.identity": "The site's identity",
  "admin.settings.siteName": "Site name",
  "admin.settings.siteName.hint": "In the header, the page titles, the sign-in page and the API reference; empty: {name}.",
  "admin.settings.accent": "Accent colour",
  "admin.settings.accent.hint": "#rrggbb, adjusted for contrast in light and dark; empty: the default blue.",
  "admin.settings.locale": "Default language of the pages",
  "admin.settings.locale.hint": "For visitors whose account and browser choose none of the site's languages.",
  "admin.settings.logo": "Logo",
  "admin.settings.logo.hint":
    "A PNG, JPEG, GIF, WebP or ICO image of at most 24 KB, kept in the settings (choose a file, or paste a data: URL); empty: the default mark.",
  "admin.settings.favicon": "Favicon",
  "admin.settings.favicon.hint": "The same, at most 8 KB; empty: the default icon.",
  "admin.settings.chooseFile": "{label}: choose a file",
  "admin.settings.save": "Save the settings",
} as const;
