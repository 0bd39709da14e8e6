import { type AlbumFilter, countImagesForOwner, type ImageRow, listImagesForOwner } from "../db/repositories/images.ts";
import { getUser, type User } from "../db/repositories/users.ts";
import type { Deps } from "../deps.ts";
import type { Strategy } from "../db/repositories/strategies.ts";
import { formatDateTime } from "./time.ts";
import type { StorageRegistry } from "../storage/index.ts";

/** The escaping of every snippet's attribute values (the `html` snippet here, the responsive one in responsive-snippet.ts). */
export const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/'/g, "&#39;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const escapeMarkdownText = (s: string) => s.replace(/[\\[\]]/g, "\\$&").replace(/[\r\n]+/g, " ");
/** Our URLs are percent-encoded already; these keep a stray character from ending a snippet early. */
const markdownUrl = (u: string) => u.replace(/[()\s<>]/g, encodeURIComponent);
const bbcodeUrl = (u: string) => u.replace(/[[\]\s]/g, encodeURIComponent);

/** The contract's uploaded-image object (2.4), plus `links` and `pathname` for existing uploaders. */
export function toImageResource(image: ImageRow, strategy: Pick<Strategy, "id" | "driver" | "config">, storage: StorageRegistry, baseUrl: string) {
  const driver = storage.for(strategy);
  const url = driver.url(image.path);
  const thumbnailUrl = image.thumbnailPath ? driver.url(image.thumbnailPath) : url;
  const alt = image.originName;
  const links = {
    url,
    thumbnail_url: thumbnailUrl,
    html: `<img src="${escapeHtml(url)}" alt="${escapeHtml(alt)}">`,
    bbcode: `[img]${bbcodeUrl(url)}[/img]`,
    markdown: `![${escapeMarkdownText(alt)}](${markdownUrl(url)})`,
    markdown_with_link: `[![${escapeMarkdownText(alt)}](${markdownUrl(url)})](${markdownUrl(url)})`,
    delete_url: `${baseUrl}/api/v1/images/${encodeURIComponent(image.key)}`,
  };
  return {
    key: image.key,
    name: image.name,
    origin_name: image.originName,
    size: image.size / 1024,
    mimetype: image.mimetype,
    extension: image.extension,
    width: image.width,
    height: image.height,
    md5: image.md5,
    sha1: image.sha1,
    is_public: image.isPublic,
    expired_at: image.expiredAt ? formatDateTime(image.expiredAt) : null,
    created_at: formatDateTime(image.createdAt),
    pathname: image.path,
    ...links,
    links,
  };
}

export type ImageResource = ReturnType<typeof toImageResource>;

/**
 * A page of the owner's images as GET /images answers it (contract 2.5), newest first, with the account's current
 * count (the caller's account may be up to a second old: authentication lookups are kept that long).
 */
export async function imagePage(deps: Deps, owner: Pick<User, "id" | "imageNum">, perPage: number, page: number, filter?: AlbumFilter) {
  const [rows, total] = await Promise.all([
    listImagesForOwner(deps.db, owner.id, perPage, (page - 1) * perPage, filter),
    filter ? countImagesForOwner(deps.db, owner.id, filter) : getUser(deps.db, owner.id).then((current) => current?.imageNum ?? owner.imageNum),
  ]);
  return {
    current_page: page,
    last_page: Math.max(1, Math.ceil(total / perPage)),
    per_page: perPage,
    total,
    data: rows.map((r) => toImageResource(r.image, r.strategy, deps.storage, deps.config.baseUrl)),
  };
}
