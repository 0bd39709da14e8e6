/**
 * The "Responsive HTML" snippet of an image: a `<picture>` whose sources name the variants of the
 * ladder on this server (`{BASE_URL}/i/{pathname}?w=…&format=…`), AVIF first, then WebP, then an `<img>` in the
 * original's format. The one place it is built: the image grid renders it, the upload page asks for it
 * (GET /user/upload/snippets/{key}); it is not a field of the v1 API answers.
 *
 * - Widths: the ladder's entries below the image's own width, then the image's own width. The own width is asked for
 *   without `w` (a width not on the ladder would be a 400; no `w` is the original's size), so an image wider than
 *   the ladder's top is offered at its own size too.
 * - The `<img>`'s own-width candidate is the original itself (`url`, also on S3), or its JPEG variant for a format
 *   browsers do not show (TIFF).
 * - No AVIF source for a GIF: an animated GIF's variants keep the animation, which AVIF variants do not.
 * - `sizes` (on every source: a source without it means 100vw) is the viewport's width up to a 640-px column, or
 *   the image's own width when it is narrower.
 * - Every address it names answers an image: a browser does not try the next source after an error, so a variant
 *   that cannot be had now is answered with a fallback down the chain AVIF → WebP → the original's format → the
 *   original, briefly cached (docs/decisions/variant-fallback.md); test/api/variants-fallback.test.ts asks for each.
 */
import { LADDER } from "../services/variants/query.ts";
import { escapeHtml } from "./image-resource.ts";

/** The widest column the snippet's `sizes` assumes, in CSS pixels. */
export const RESPONSIVE_COLUMN = 640;

/** Formats browsers show in an `<img>`: anything else falls back to the JPEG variant. */
const SHOWN = new Set(["image/jpeg", "image/png", "image/gif", "image/webp", "image/avif"]);

export interface SnippetImage {
  url: string;
  pathname: string;
  width: number;
  height: number;
  mimetype: string;
  origin_name: string;
}

/** Where the image's variants are asked for on this server: `{BASE_URL}/i/{pathname}`, each segment encoded. */
export const variantPath = (image: Pick<SnippetImage, "pathname">, baseUrl: string) =>
  `${baseUrl.replace(/\/+$/, "")}/i/${image.pathname.split("/").map(encodeURIComponent).join("/")}`;

/**
 * The snippet. The image grid does not write it out for each image: its script (web/assets/app.js, `responsiveSnippet`)
 * composes the same text from the grid's ladder and the image's variantPath, url, size, type and name, and the
 * Chromium test (test/browser/responsive.test.ts) compares the two.
 */
export function responsiveSnippet(image: SnippetImage, baseUrl: string): string {
  const base = variantPath(image, baseUrl);
  const widths = LADDER.filter((w) => w < image.width);
  const slot = Math.min(image.width, RESPONSIVE_COLUMN);
  const sizes = `(max-width: ${slot}px) 100vw, ${slot}px`;
  const srcset = (entries: [string, number][]) => entries.map(([u, w]) => `${escapeHtml(u)} ${w}w`).join(", ");
  const source = (format: "avif" | "webp", type: string) =>
    `<source type="${type}" srcset="${srcset([...widths.map((w): [string, number] => [`${base}?w=${w}&format=${format}`, w]), [`${base}?format=${format}`, image.width]])}" sizes="${sizes}">`;
  const own = SHOWN.has(image.mimetype) ? image.url : `${base}?format=jpeg`;
  const img =
    `<img src="${escapeHtml(own)}" srcset="${srcset([...widths.map((w): [string, number] => [`${base}?w=${w}`, w]), [own, image.width]])}" sizes="${sizes}"` +
    ` alt="${escapeHtml(image.origin_name)}" width="${image.width}" height="${image.height}" loading="lazy">`;
  const sources = (image.mimetype === "image/gif" ? [] : [source("avif", "image/avif")]).concat(source("webp", "image/webp"));
  return `<picture>${sources.join("")}${img}</picture>`;
}
