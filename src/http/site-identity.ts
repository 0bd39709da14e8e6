/**
 * The site's identity as the admin API takes it (docs/decisions/pages-design-system.md): a name, an accent colour
 * and two small images (logo, favicon) given as `data:` URLs and kept in the settings row, so that the pages load
 * nothing from another host and need no storage of their own. Only raster formats a browser shows in an <img> or as
 * an icon are taken, checked by their bytes; SVG is refused (served from this origin it could run script).
 */

export const SITE_NAME_MAX = 60;
/** The largest logo and favicon, in bytes of the image (their data: URL is about a third longer). */
export const SITE_IMAGE_MAX = { logo: 24 * 1024, favicon: 8 * 1024 } as const;
export const ACCENT_PATTERN = /^#[0-9a-fA-F]{6}$/;

const SIGNATURES: [mime: string, test: (b: Uint8Array) => boolean][] = [
  [
    "image/png",
    (b) => b.length > 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47 && b[4] === 0x0d && b[5] === 0x0a && b[6] === 0x1a && b[7] === 0x0a,
  ],
  ["image/jpeg", (b) => b.length > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff],
  ["image/gif", (b) => b.length > 6 && String.fromCharCode(...b.subarray(0, 6)) in { GIF87a: 1, GIF89a: 1 }],
  ["image/webp", (b) => b.length > 12 && String.fromCharCode(...b.subarray(0, 4)) === "RIFF" && String.fromCharCode(...b.subarray(8, 12)) === "WEBP"],
  ["image/x-icon", (b) => b.length > 6 && b[0] === 0 && b[1] === 0 && b[2] === 1 && b[3] === 0 && b[4]! + b[5]! > 0],
];

export interface SiteImage {
  mime: string;
  bytes: Uint8Array;
}

/** A `data:` URL's image, or the reason it is not one the site takes. */
export function parseSiteImage(value: string, max: number): SiteImage | { error: string } {
  const m = /^data:([a-z/+.-]{3,40});base64,([A-Za-z0-9+/]+={0,2})$/.exec(value);
  if (!m) return { error: "Give the image as a data: URL (data:image/png;base64,…)." };
  const bytes = new Uint8Array(Buffer.from(m[2]!, "base64"));
  if (bytes.length === 0) return { error: "The image is empty." };
  if (bytes.length > max) return { error: `The image is larger than ${max / 1024} KB.` };
  const found = SIGNATURES.find(([, test]) => test(bytes));
  if (!found) return { error: "Use a PNG, JPEG, GIF, WebP or ICO image." };
  return { mime: found[0], bytes };
}
