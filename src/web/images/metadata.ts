/** What the group's metadata policy removed from an image at upload, in words (the image page's "Metadata"). */
import type { MetadataRemoved } from "../../db/schema.ts";
import { type MessageKey, t, view } from "../i18n/index.ts";

/** The names a policy gives what it removes (src/images/metadata/): the worded ones translated, format names kept. */
const WORDED: Record<string, MessageKey> = {
  "trailing data": "images.metadata.block.trailing",
  comment: "images.metadata.block.comment",
  "extension with location": "images.metadata.block.locationExtension",
  "EXIF thumbnail": "images.metadata.block.exifThumbnail",
};
const PREFIXED: [prefix: string, key: MessageKey][] = [
  ["chunk ", "images.metadata.block.chunk"],
  ["text ", "images.metadata.block.text"],
  ["item ", "images.metadata.block.item"],
  ["application ", "images.metadata.block.application"],
];

function blockName(name: string): string {
  const worded = WORDED[name];
  if (worded) return t(worded);
  const prefixed = PREFIXED.find(([prefix]) => name.startsWith(prefix));
  return prefixed ? t(prefixed[1], { name: name.slice(prefixed[0].length) }) : name;
}

/**
 * "Location removed (EXIF GPS, XMP)", "All metadata removed (…)", "Nothing removed: kept as uploaded", or, for an
 * image uploaded before this was recorded (null), that it was not recorded.
 */
export function metadataText(removed: MetadataRemoved | null): string {
  if (!removed) return t("images.metadata.unrecorded");
  if (removed.removed.length === 0) return t("images.metadata.kept");
  const what = new Intl.ListFormat(view().locale, { type: "conjunction", style: "narrow" }).format(removed.removed.map(blockName));
  return t("images.metadata.removed", { policy: removed.policy ?? "other", what });
}
