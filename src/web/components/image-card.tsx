/** The image grid of the user's and the administrator's image pages, and its card. */
import type { Child, PropsWithChildren } from "hono/jsx";
import { t } from "../i18n/index.ts";
import { formatBytes, UtcTime } from "./time.tsx";

/** The selection checkboxes are named `image_<key>` (a form field holds one value per name). */
export const SELECT_PREFIX = "image_";

/** What a card shows of an image, whoever lists it. */
export interface CardImage {
  key: string;
  name: string;
  url: string;
  thumbnailUrl: string;
  width: number;
  height: number;
  /** Bytes. */
  size: number;
  createdAt: Date;
  expiredAt: Date | null;
  isPublic: boolean;
}

/** The grid of cards; `data` carries what the page's script needs (the responsive ladder). */
export const ImageGrid = ({ label, data, children }: PropsWithChildren<{ label: string; data?: Record<string, string | number> }>) => (
  <ul class="grid" aria-label={label} {...Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [`data-${k}`, v]))}>
    {children}
  </ul>
);

/**
 * One image: a selection box (in the form `form`), the thumbnail (to `href`, or the image itself in a new tab), its
 * name, dimensions, size, date and badges; `meta` adds lines (the owner), `copy` a row of copy buttons, `actions`
 * the buttons at the bottom.
 */
export function ImageCard({
  image,
  href,
  form = "bulk",
  meta,
  copy,
  actions,
}: {
  image: CardImage;
  href?: string;
  form?: string;
  meta?: Child;
  copy?: Child;
  actions?: Child;
}) {
  const selectId = `select-${image.key}`;
  return (
    <li class="image">
      <div class="select">
        <input type="checkbox" id={selectId} name={`${SELECT_PREFIX}${image.key}`} value="1" form={form} />
        <label for={selectId}>
          {t("images.card.select")} <span class="visually-hidden">{image.name}</span>
        </label>
      </div>
      {href ? (
        <a class="thumb" href={href}>
          <img src={image.thumbnailUrl} alt={image.name} loading="lazy" width={image.width} height={image.height} />
        </a>
      ) : (
        <a class="thumb" href={image.url} target="_blank" rel="noopener">
          <img src={image.thumbnailUrl} alt={t("images.card.opensNewTab", { name: image.name })} loading="lazy" width={image.width} height={image.height} />
        </a>
      )}
      <div class="meta">
        <p class="filename" title={image.name}>
          {image.name}
        </p>
        <p class="muted small">
          {image.width}×{image.height} · {formatBytes(image.size)} · <UtcTime at={image.createdAt} />
          {!image.isPublic && <span class="badge">{t("images.card.private")}</span>}
          {image.expiredAt && (
            <span class="badge">
              {t("images.card.expires")} <UtcTime at={image.expiredAt} />
            </span>
          )}
        </p>
        {meta}
      </div>
      {copy}
      {actions && <div class="buttons">{actions}</div>}
    </li>
  );
}
