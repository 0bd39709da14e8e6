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
