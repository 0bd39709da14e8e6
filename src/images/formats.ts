/**
 * The formats the service can verify (sniff + decode with sharp) and thumbnail. Extension → media type.
 * SVG is deliberately absent: it can carry scripts and cannot be sniffed reliably.
 */
export const formats = {
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  png: "image/png",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  tif: "image/tiff",
  tiff: "image/tiff",
} as const;

export type Extension = keyof typeof formats;
export const supportedExtensions = Object.keys(formats) as Extension[];
export const isSupportedExtension = (e: string): e is Extension => Object.hasOwn(formats, e);

/** Declared media types that mean the same as the canonical one. */
export const mimeAliases: Record<string, string> = {
  "image/jpg": "image/jpeg",
  "image/pjpeg": "image/jpeg",
  "image/x-png": "image/png",
  "image/tif": "image/tiff",
};

/** What a sniffed media type is called in a message, and the extensions that would name it here. */
const kinds: Record<string, string> = {
  "image/jpeg": "a JPEG image",
  "image/png": "a PNG image",
  "image/gif": "a GIF image",
  "image/webp": "a WebP image",
  "image/avif": "an AVIF image",
  "image/tiff": "a TIFF image",
  "image/heic": "a HEIC image",
  "image/heif": "a HEIF image",
  "image/bmp": "a BMP image",
  "image/x-icon": "an icon (ICO)",
  "image/vnd.adobe.photoshop": "a Photoshop document",
  "application/pdf": "a PDF document",
  "application/zip": "a ZIP archive",
  "video/mp4": "an MP4 video",
  "video/quicktime": "a QuickTime video",
  "text/html": "an HTML page",
  "application/xml": "an XML document",
};

/** "a JPEG image (.jpg or .jpeg)", "a PDF document", or the media type itself for anything else. */
export function describeContent(mime: string): string {
  const kind = kinds[mime] ?? `of type ${mime}`;
  const names = supportedExtensions.filter((e) => formats[e] === mime).map((e) => `.${e}`);
  return names.length ? `${kind} (${names.join(" or ")})` : kind;
}
