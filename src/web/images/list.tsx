/** The parts of the Images page: the filters, one image's card with its snippets and actions, the bulk actions, the notices. */
import type { ImageResource } from "../../http/image-resource.ts";
import { variantPath } from "../../http/responsive-snippet.ts";
import { IMAGE_SORTS } from "../../db/repositories/images.ts";
import { BulkForm, CopyButton, FormToken, ImageCard, Notice, PerPageField, Select, TextInput } from "../components/index.ts";
import { type MessageKey, rich, t } from "../i18n/index.ts";
import { BASE, type SignedIn } from "../session.ts";
import { detailHref, type ListState, listHref, PER_PAGE_CHOICES, Q_MAX } from "./query.ts";

export const sortLabel = (sort: ListState["sort"]) => t(`images.sort.${sort}` as MessageKey);

/** The album select's options: no album, then the account's albums. */
export const AlbumOptions = ({ albums, selected }: { albums: { id: number; name: string }[]; selected?: number | null }) => (
  <>
    <option value="none" selected={selected === null}>
      {t("images.album.none")}
    </option>
    {albums.map((a) => (
      <option value={String(a.id)} selected={selected === a.id}>
        {a.name}
      </option>
    ))}
  </>
);

/** Search, album, visibility, sort and page size: a GET form, so every view has its address. */
export function Filters({ state, qError, albums, filtered }: { state: ListState; qError?: string; albums: { id: number; name: string }[]; filtered: boolean }) {
  const albumValue = state.album === undefined ? "" : state.album === null ? "none" : String(state.album);
  return (
    <form method="get" action={`${BASE}/images`} class="card filters" role="search" aria-label={t("images.filters.label")}>
      <TextInput name="q" type="search" label={t("images.filters.q")} value={state.q} error={qError} attrs={{ maxlength: Q_MAX }} />
      <Select
        name="album"
        label={t("images.filters.album")}
        value={albumValue}
        options={[["", t("images.filters.albumAll")], ["none", t("images.filters.albumNone")], ...albums.map((a) => [String(a.id), a.name] as const)]}
      />
      <Select
        name="visibility"
        label={t("images.filters.visibility")}
        value={state.visibility ?? ""}
        options={[
          ["", t("images.filters.visibilityAll")],
          ["public", t("images.filters.publicOnly")],
          ["private", t("images.filters.privateOnly")],
        ]}
      />
      <Select name="sort" label={t("images.filters.sort")} value={state.sort} options={IMAGE_SORTS.map((s) => [s, sortLabel(s)] as const)} />
      <PerPageField choices={PER_PAGE_CHOICES} perPage={state.perPage} />
      <div class="buttons">
        <button type="submit" class="primary">
          {t("common.show")}
        </button>
        {filtered && (
          <a class="button" href={listHref({ page: 1, perPage: state.perPage })}>
            {t("common.clear")}
          </a>
        )}
      </div>
    </form>
  );
}

export interface Listed {
  resource: ImageResource;
  /** Bytes. */
  size: number;
  createdAt: Date;
  expiredAt: Date | null;
}

/** One image of the account: the shared card, with its snippets to copy and Details, Open and Delete. */
export function UserImageCard({
  image,
  signedIn,
  state,
  back,
  baseUrl,
}: {
  image: Listed;
  signedIn: SignedIn;
  state: ListState;
  back: string;
  baseUrl: string;
}) {
  const { resource } = image;
  const name = resource.origin_name;
  return (
    <ImageCard
      image={{
        key: resource.key,
        name,
        url: resource.url,
        thumbnailUrl: resource.thumbnail_url,
        width: resource.width,
        height: resource.height,
        size: image.size,
        createdAt: image.createdAt,
        expiredAt: image.expiredAt,
        isPublic: resource.is_public,
      }}
      href={detailHref(resource.key)}
      copy={
        <div class="buttons" role="group" aria-label={t("images.card.copyGroup", { name })}>
          <span class="muted small" aria-hidden="true">
            {t("common.copy")}
          </span>
          <CopyButton text={resource.url} label="URL" />
          <CopyButton text={resource.html} label="HTML" />
          <CopyButton text={resource.bbcode} label="BBCode" />
          <CopyButton text={resource.markdown} label="Markdown" />
          <CopyButton text={resource.markdown_with_link} label={t("images.snippet.mdLinkShort")} name={t("images.snippet.mdLink")} />
          {/* composed by the page's script from these and the grid's ladder (the same text as responsiveSnippet): a
              page of 30 snippets written out cost a third of its CPU and 40 % of its bytes */}
          <button
            type="button"
            class="copy"
            data-copy-responsive={variantPath(resource, baseUrl)}
            data-url={resource.url}
            data-width={resource.width}
            data-height={resource.height}
            data-type={resource.mimetype}
            data-alt={name}
            data-copy-name={t("images.snippet.responsive")}
          >
            {t("images.snippet.responsive")}
          </button>
        </div>
      }
      actions={
        <>
          <a class="button" href={detailHref(resource.key)}>
            {t("images.card.details")}
            <span class="visually-hidden"> {t("images.card.ofName", { name })}</span>
          </a>
          <a class="button" href={resource.url} target="_blank" rel="noopener">
            {t("images.card.open")}
            <span class="visually-hidden"> {t("images.card.newTab", { name })}</span>
          </a>
          <form method="post" action={`${detailHref(resource.key)}/delete`} data-confirm={t("images.delete.question", { name })}>
            <FormToken signedIn={signedIn} />
            <input type="hidden" name="confirmed" value="0" />
            <input type="hidden" name="page" value={String(state.page)} />
            <input type="hidden" name="per_page" value={String(state.perPage)} />
            <input type="hidden" name="back" value={back} />
            <button type="submit" class="danger" aria-label={t("images.delete.named", { name })}>
              {t("common.delete")}
            </button>
          </form>
        </>
      }
    />
  );
}

/** Move, make public or private, delete: on the selected images, the buttons waiting for a selection. */
export function BulkActions({ signedIn, back, max, albums }: { signedIn: SignedIn; back: string; max: number; albums: { id: number; name: string }[] }) {
  return (
    <BulkForm signedIn={signedIn} action={`${BASE}/images/move`} back={back} max={max}>
      <span class="bulk-move">
        <label for="to_album">{t("images.bulk.moveTo")}</label>
        <select id="to_album" name="to_album">
          <AlbumOptions albums={albums} />
        </select>
        <button type="submit">{t("images.bulk.move")}</button>
      </span>
      <button type="submit" formaction={`${BASE}/images/visibility`} name="set" value="public">
        {t("images.bulk.makePublic")}
      </button>
      <button type="submit" formaction={`${BASE}/images/visibility`} name="set" value="private">
        {t("images.bulk.makePrivate")}
      </button>
      <button type="submit" formaction={`${BASE}/images/delete`} class="danger">
        {t("images.bulk.delete")}
      </button>
      {albums.length === 0 && <p class="muted small">{rich("images.bulk.createAlbum", { a: (chunks) => <a href={`${BASE}/albums`}>{chunks}</a> })}</p>}
    </BulkForm>
  );
}

/** Fixed notices: the query only says what happened (a count), never what to print. */
export function ListNotices({ query }: { query: (name: string) => string | undefined }) {
  const count = (name: string) => {
    const v = query(name);
    return v !== undefined && /^\d{1,3}$/.test(v) ? Number(v) : null;
  };
  const shown: string[] = [];
  const deleted = count("deleted");
  if (deleted !== null) shown.push(t("images.notice.deleted", { count: deleted }));
  else if (query("deleted") !== undefined) shown.push(t("images.notice.deleted", { count: 1 }));
  for (const [name, key] of [
    ["moved", "images.notice.moved"],
    ["made_public", "images.notice.madePublic"],
    ["made_private", "images.notice.madePrivate"],
  ] as const) {
    const n = count(name);
    if (n !== null) shown.push(t(key, { count: n }));
  }
  return (
    <>
      {shown.map((text) => (
        <Notice kind="success">{text}</Notice>
      ))}
    </>
  );
}
