/** Messages of the dashboard pages, in English. */
export default {
  "dashboard.title": "Dashboard",
  "dashboard.welcome": "Your account is ready. Upload an image, or create an API token for your uploader.",
  "dashboard.profile": "Profile",
  "dashboard.storage": "Storage",
  "dashboard.used": "{used} used of {capacity} ({percent}%)",
  "dashboard.usedSpace": "Used space",
  "dashboard.usedOf": "{used} of {capacity}",
  "dashboard.images": "Images",
  "dashboard.albums": "Albums",
  "dashboard.next": "Get going",
  "dashboard.upload": "Upload images",
  "dashboard.yourImages": "Your images",
  "dashboard.createToken": "Create an API token",
  "dashboard.api": "Uploaders and scripts use the API at {api} with a token: see the <docs>API reference</docs>.",
} as const;
