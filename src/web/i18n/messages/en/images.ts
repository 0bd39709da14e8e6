/** Messages of the images pages, in English. */
export default {
  "images.delete.count": "{count, plural, one {Delete 1 image} other {Delete # images}}",
  "images.card.select": "Select",
  "images.card.opensNewTab": "{name} (opens in a new tab)",
  "images.card.private": "private",
  "images.card.expires": "expires",
} as const;
