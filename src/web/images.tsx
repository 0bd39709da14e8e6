/**
 * The account's images, paginated as GET /api/v1/images: search them by original name, sort them (newest,
 * oldest or largest first), filter them by album and by public or private; copy their snippets, open them, or act on
 * a selection (move to an album or out, make public or private, delete). Each image has its own page (image.tsx).
 */
import type { Context, Hono } from "hono";
import { ALBUMS_PER_ACCOUNT, MOVE_MAX, moveOwnImages } from "../db/repositories/albums.ts";
import { listAlbumsForOwner } from "../db/repositories/sessions.ts";
import {
  countImagesForOwner,
  findImageForOwner,
  findOwnImagesByKeys,
  IMAGE_SORTS,
  type ImageFilter,
  type ImageSort,
  isFiltered,
  listImagesForOwner,
  setOwnImagesPublic,
} from "../db/repositories/images.ts";
import { getUser } from "../db/repositories/users.ts";
import { type ImageResource, toImageResource } from "../http/image-resource.ts";
import { RESPONSIVE_COLUMN, variantPath } from "../http/responsive-snippet.ts";
import { LADDER } from "../services/variants/query.ts";
import { AppError, badRequest, validationError } from "../errors.ts";
import { deleteImage } from "../services/delete.ts";
import { t } from "./i18n/index.ts";
import { type FormFields, readForm } from "./form.ts";
import { AlbumOptions, registerImagePage } from "./image.tsx";
import { SELECT_PREFIX, UtcTime, ConfirmFooter, CopyButton, FieldError, FormToken, formatBytes, Layout, Notice, PerPageField } from "./components/index.ts";
import { BASE, requireSession, type SignedIn, type SignedInEnv, type WebEnv } from "./session.ts";

const PER_PAGE_DEFAULT = 30;
const PER_PAGE_CHOICES = [12, 30, 60, 100];
/** The longest search, in characters. */
const Q_MAX = 100;

/** The API's bounds (per_page 1–100, default 30; page from 1); what is not a number in range falls back to the default. */
function pageQuery(perPage: string | undefined, page: string | undefined) {
  const int = (v: string | undefined, min: number, max: number, fallback: number) => {
    const n = v !== undefined && /^\d{1,7}$/.test(v) ? Number(v) : NaN;
    return n >= min && n <= max ? n : fallback;
  };
  return { perPage: int(perPage, 1, 100, PER_PAGE_DEFAULT), page: int(page, 1, 1_000_000, 1) };
}

/** The `album` query: an album id, "none" (images in no album) or absent (all: undefined); anything else is all. */
function albumQuery(value: string | undefined): number | null | undefined {
  if (value === "none") return null;
  const id = value !== undefined && /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  return id >= 1 && id <= 2_147_483_647 ? id : undefined;
}

const SORT_LABELS: Record<ImageSort, string> = { newest: "Newest first", oldest: "Oldest first", largest: "Largest first" };
const sortQuery = (value: string | undefined): ImageSort => ((IMAGE_SORTS as readonly string[]).includes(value ?? "") ? (value as ImageSort) : "newest");
type Visibility = "public" | "private";
const visibilityQuery = (value: string | undefined): Visibility | undefined => (value === "public" || value === "private" ? value : undefined);

/** What the list shows: the page, its size and the filters, as the query says (unknown values are the defaults). */
interface ListState {
  page: number;
  perPage: number;
  /** The album asked for (an id, null for none, undefined for all), as asked: another account's id stays in links. */
  album: number | null | undefined;
  q: string;
  visibility: Visibility | undefined;
  sort: ImageSort;
}

/** `q`: at most Q_MAX characters (surrounding spaces dropped), no control characters; else the reason. */
function searchQuery(value: string | undefined): { q: string; error?: string } {
  const q = (value ?? "").trim();
  if ([...q].length > Q_MAX) return { q: q.slice(0, 1000), error: `Search for at most ${Q_MAX} characters.` };
  if (/\p{Cc}/u.test(q)) return { q: "", error: "Search for text without control characters." };
  return { q };
}

function listState(query: (name: string) => string | undefined): { state: ListState; qError?: string } {
  const { perPage, page } = pageQuery(query("per_page"), query("page"));
  const { q, error } = searchQuery(query("q"));
  const state = { page, perPage, album: albumQuery(query("album")), q, visibility: visibilityQuery(query("visibility")), sort: sortQuery(query("sort")) };
  return { state, qError: error };
}

/** The list's address: only what differs from the defaults, in a fixed order. */
export function listHref(state: Partial<ListState> & { page: number; perPage: number }) {
  const params = new URLSearchParams({ page: String(state.page) });
  if (state.perPage !== PER_PAGE_DEFAULT) params.set("per_page", String(state.perPage));
  if (state.album !== undefined) params.set("album", state.album === null ? "none" : String(state.album));
  if (state.q) params.set("q", state.q);
  if (state.visibility) params.set("visibility", state.visibility);
  if (state.sort && state.sort !== "newest") params.set("sort", state.sort);
  return `${BASE}/images?${params}`;
}

/** Where a form sends the browser back to: a page of the list (its query kept) or an image's page, never anywhere else. */
export function safeBack(back: string | undefined, fallback = `${BASE}/images?page=1`) {
  if (back === undefined || /[\\\s#]/.test(back)) return fallback;
  return back.startsWith(`${BASE}/images?`) || /^\/user\/images\/[A-Za-z0-9_.~%-]{1,300}$/.test(back) ? back : fallback;
}

/** The address with `name=value` appended: what happened, for the page's notice. */
const withNotice = (href: string, name: string, value: string | number) => `${href}${href.includes("?") ? "&" : "?"}${name}=${value}`;

/** The selected keys: at least one, at most MOVE_MAX (a 400 otherwise). */
export function selectedKeys(body: FormFields, verb: string): string[] {
  const keys = Object.keys(body)
    .filter((name) => name.startsWith(SELECT_PREFIX) && body[name] === "1")
    .map((name) => name.slice(SELECT_PREFIX.length))
    .filter((key) => key.length > 0);
  if (keys.length === 0) throw badRequest(`Select the images to ${verb} first.`);
  if (keys.length > MOVE_MAX) throw badRequest(`${verb[0]!.toUpperCase()}${verb.slice(1)} at most ${MOVE_MAX} images at once.`);
  return keys;
}

const detailHref = (key: string) => `${BASE}/images/${encodeURIComponent(key)}`;

interface Listed {
  resource: ImageResource;
  createdAt: Date;
  expiredAt: Date | null;
}

function ImageCard({ image, signedIn, state, back, baseUrl }: { image: Listed; signedIn: SignedIn; state: ListState; back: string; baseUrl: string }) {
  const { resource } = image;
  const selectId = `select-${resource.key}`;
  return (
    <li class="image">
      <div class="select">
        <input type="checkbox" id={selectId} name={`${SELECT_PREFIX}${resource.key}`} value="1" form="bulk" />
        <label for={selectId}>
          Select <span class="visually-hidden">{resource.origin_name}</span>
        </label>
      </div>
      <a class="thumb" href={detailHref(resource.key)}>
        <img src={resource.thumbnail_url} alt={resource.origin_name} loading="lazy" width={resource.width} height={resource.height} />
      </a>
      <div class="meta">
        <p class="filename" title={resource.origin_name}>
          {resource.origin_name}
        </p>
        <p class="muted small">
          {resource.width}×{resource.height} · {formatBytes(resource.size * 1024)} · <UtcTime at={image.createdAt} />
          {!resource.is_public && <span class="badge">private</span>}
          {image.expiredAt && (
            <span class="badge">
              expires <UtcTime at={image.expiredAt} />
            </span>
          )}
        </p>
      </div>
      <div class="buttons" role="group" aria-label={`Copy a snippet of ${resource.origin_name}`}>
        <span class="muted small" aria-hidden="true">
          Copy
        </span>
        <CopyButton text={resource.url} label="URL" />
        <CopyButton text={resource.html} label="HTML" />
        <CopyButton text={resource.bbcode} label="BBCode" />
        <CopyButton text={resource.markdown} label="Markdown" />
        <CopyButton text={resource.markdown_with_link} label="MD + link" name="Markdown with link" />
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
          data-alt={resource.origin_name}
          data-copy-name="Responsive HTML"
        >
          Responsive HTML
        </button>
      </div>
      <div class="buttons">
        <a class="button" href={detailHref(resource.key)}>
          Details<span class="visually-hidden"> of {resource.origin_name}</span>
        </a>
        <a class="button" href={resource.url} target="_blank" rel="noopener">
          Open<span class="visually-hidden"> {resource.origin_name} (new tab)</span>
        </a>
        <form method="post" action={`${detailHref(resource.key)}/delete`} data-confirm={`Delete ${resource.origin_name}? This cannot be undone.`}>
          <FormToken signedIn={signedIn} />
          <input type="hidden" name="confirmed" value="0" />
          <input type="hidden" name="page" value={String(state.page)} />
          <input type="hidden" name="per_page" value={String(state.perPage)} />
          <input type="hidden" name="back" value={back} />
          <button type="submit" class="danger" aria-label={`Delete ${resource.origin_name}`}>
            Delete
          </button>
        </form>
      </div>
    </li>
  );
}

function ConfirmDelete({
  signedIn,
  image,
  page,
  perPage,
  back,
}: {
  signedIn: SignedIn;
  image: { key: string; name: string };
  page: number;
  perPage: number;
  back: string;
}) {
  return (
    <Layout title="Delete an image" signedIn={signedIn} active="images">
      <form class="card narrow" method="post" action={`${detailHref(image.key)}/delete`}>
        <p>
          Delete <strong>{image.name}</strong>? The file, its thumbnail and its record are removed at once; this cannot be undone.
        </p>
        <FormToken signedIn={signedIn} />
        <input type="hidden" name="confirmed" value="1" />
        <input type="hidden" name="page" value={String(page)} />
        <input type="hidden" name="per_page" value={String(perPage)} />
        <input type="hidden" name="back" value={back} />
        <div class="buttons">
          <button type="submit" class="danger">
            Delete
          </button>
          <a class="button" href={back}>
            Cancel
          </a>
        </div>
      </form>
    </Layout>
  );
}

function ConfirmBulkDelete({ signedIn, images, back }: { signedIn: SignedIn; images: { key: string; originName: string }[]; back: string }) {
  const count = images.length === 1 ? "this image" : `these ${images.length} images`;
  return (
    <Layout title="Delete images" signedIn={signedIn} active="images">
      <form class="card" method="post" action={`${BASE}/images/delete`}>
        <p>Delete {count}? Their files, thumbnails and records are removed at once; this cannot be undone.</p>
        <ul class="doomed" aria-label="The images to delete">
          {images.map((image) => (
            <li>
              <a href={detailHref(image.key)}>{image.originName}</a>
              <input type="hidden" name={`${SELECT_PREFIX}${image.key}`} value="1" />
            </li>
          ))}
        </ul>
        <ConfirmFooter signedIn={signedIn} label={t("images.delete.count", { count: images.length })} back={back} />
      </form>
    </Layout>
  );
}

/** Fixed notices: the query only says what happened (a count), never what to print. */
function notices(query: (name: string) => string | undefined) {
  const count = (name: string) => {
    const v = query(name);
    return v !== undefined && /^\d{1,3}$/.test(v) ? Number(v) : null;
  };
  const images = (n: number) => (n === 1 ? "1 image" : `${n} images`);
  const shown: string[] = [];
  const deleted = count("deleted");
  if (deleted !== null) shown.push(deleted === 1 ? "Image deleted." : `${images(deleted)} deleted.`);
  else if (query("deleted") !== undefined) shown.push("Image deleted.");
  const moved = count("moved");
  if (moved !== null) shown.push(moved === 1 ? "1 image moved." : `${images(moved)} moved.`);
  const madePublic = count("made_public");
  if (madePublic !== null) shown.push(`${images(madePublic)} made public.`);
  const madePrivate = count("made_private");
  if (madePrivate !== null) shown.push(`${images(madePrivate)} made private.`);
  return shown;
}

/**
 * A filtered list counts its images up to this many (and as far as the page asked for reaches): ten pages of 30.
 * Counting further reads further — for a common word, a thousand matches cost the database 2.6 ms a page, 300 cost 0.7.
 */
const COUNT_CAP = 300;
/** How far a filtered list's page counts its images: one past the cap, or past the page's last image. */
const countUpTo = (page: number, perPage: number) => Math.max(COUNT_CAP, page * perPage) + 1;

async function renderList(c: Context<SignedInEnv>) {
  const signedIn = c.get("signedIn");
  const deps = c.get("deps");
  const query = (name: string) => c.req.query(name);
  const { state, qError } = listState(query);
  // names only: counting every album's images on every page would read the whole account (the Albums page counts)
  const albums = await listAlbumsForOwner(deps.db, signedIn.user.id, ALBUMS_PER_ACCOUNT);
  // an album that is not the account's shows as what it is to this account: no album of theirs, so nothing
  const album = typeof state.album === "number" && !albums.some((a) => a.id === state.album) ? -1 : state.album;
  const filter: NonNullable<ImageFilter> = { album, q: state.q || undefined, visibility: state.visibility };
  let total = 0;
  let listed: Listed[] = [];
  // a filtered total is counted up to COUNT_CAP (or as far as this page reaches): beyond, "more than 300"
  const upTo = countUpTo(state.page, state.perPage);
  let exact = true;
  if (!qError) {
    const filtered = isFiltered(filter);
    const [rows, counted] = await Promise.all([
      listImagesForOwner(deps.db, signedIn.user.id, state.perPage, (state.page - 1) * state.perPage, filter, state.sort),
      filtered
        ? countImagesForOwner(deps.db, signedIn.user.id, filter, upTo)
        : getUser(deps.db, signedIn.user.id).then((u) => u?.imageNum ?? signedIn.user.imageNum),
    ]);
    total = counted;
    exact = !filtered || counted < upTo;
    listed = rows.map((r) => ({
      resource: toImageResource(r.image, r.strategy, deps.storage, deps.config.baseUrl),
      createdAt: r.image.createdAt,
      expiredAt: r.image.expiredAt,
    }));
  }
  const lastPage = exact ? Math.max(1, Math.ceil(total / state.perPage)) : state.page + 1;
  const current = typeof album === "number" ? albums.find((a) => a.id === album) : undefined;
  const back = listHref(state);
  const searching = !!state.q || state.visibility !== undefined;
  const filtered = searching || state.album !== undefined || state.sort !== "newest";
  const title = current ? `Images in ${current.name}` : album === null ? "Images in no album" : "Images";
  return c.html(
    <Layout title={title} signedIn={signedIn} active="images">
      {notices(query).map((text) => (
        <Notice kind="success">{text}</Notice>
      ))}
      <form method="get" action={`${BASE}/images`} class="card filters" role="search" aria-label="Find images">
        <div class="field">
          <label for="q">Name contains</label>
          <input
            type="search"
            id="q"
            name="q"
            value={state.q}
            maxlength={Q_MAX}
            aria-invalid={qError ? "true" : undefined}
            aria-describedby={qError ? "q-error" : undefined}
          />
          <FieldError id="q" error={qError} />
        </div>
        <div class="field">
          <label for="album">Album</label>
          <select id="album" name="album">
            <option value="" selected={state.album === undefined}>
              All images
            </option>
            <option value="none" selected={state.album === null}>
              In no album
            </option>
            {albums.map((a) => (
              <option value={String(a.id)} selected={state.album === a.id}>
                {a.name}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="visibility">Visibility</label>
          <select id="visibility" name="visibility">
            <option value="" selected={state.visibility === undefined}>
              Public and private
            </option>
            <option value="public" selected={state.visibility === "public"}>
              Public only
            </option>
            <option value="private" selected={state.visibility === "private"}>
              Private only
            </option>
          </select>
        </div>
        <div class="field">
          <label for="sort">Sort</label>
          <select id="sort" name="sort">
            {IMAGE_SORTS.map((s) => (
              <option value={s} selected={s === state.sort}>
                {SORT_LABELS[s]}
              </option>
            ))}
          </select>
        </div>
        <PerPageField choices={PER_PAGE_CHOICES} perPage={state.perPage} />
        <div class="buttons">
          <button type="submit" class="primary">
            Show
          </button>
          {filtered && (
            <a class="button" href={listHref({ page: 1, perPage: state.perPage })}>
              Clear
            </a>
          )}
        </div>
      </form>
      {qError ? (
        <p class="card">Nothing was searched: correct the search above.</p>
      ) : (
        <>
          <p class="muted" data-testid="total" role="status">
            {!exact ? `more than ${(upTo - 1).toLocaleString("en")} images` : total === 1 ? "1 image" : `${total} images`},{" "}
            {SORT_LABELS[state.sort].toLowerCase()}
            {state.q && <> · name contains “{state.q}”</>}
            {state.visibility && <> · {state.visibility} only</>}
          </p>
          {listed.length === 0 ? (
            <p class="card">
              {total > 0 ? (
                <>
                  No images on this page. <a href={listHref({ ...state, page: 1 })}>Back to the first page</a>.
                </>
              ) : isFiltered(filter) ? (
                <>No images match.</>
              ) : (
                <>
                  No images yet. <a href={`${BASE}/upload`}>Upload some</a>.
                </>
              )}
            </p>
          ) : (
            <form id="bulk" class="card bulk" method="post" action={`${BASE}/images/move`}>
              <FormToken signedIn={signedIn} />
              <input type="hidden" name="back" value={back} />
              <input type="hidden" name="confirmed" value="0" />
              <fieldset>
                <legend>With the selected images (at most {MOVE_MAX})</legend>
                <div class="bulk-actions">
                  <span class="bulk-move">
                    <label for="to_album">Move to</label>
                    <select id="to_album" name="to_album">
                      <AlbumOptions albums={albums} />
                    </select>
                    <button type="submit">Move</button>
                  </span>
                  <button type="submit" formaction={`${BASE}/images/visibility`} name="set" value="public">
                    Make public
                  </button>
                  <button type="submit" formaction={`${BASE}/images/visibility`} name="set" value="private">
                    Make private
                  </button>
                  <button type="submit" formaction={`${BASE}/images/delete`} class="danger">
                    Delete…
                  </button>
                </div>
                {albums.length === 0 && (
                  <p class="muted small">
                    <a href={`${BASE}/albums`}>Create an album</a> to move images into it.
                  </p>
                )}
              </fieldset>
            </form>
          )}
          {listed.length > 0 && (
            <ul class="grid" aria-label="Your images" data-ladder={LADDER.join(",")} data-column={RESPONSIVE_COLUMN}>
              {listed.map((image) => (
                <ImageCard image={image} signedIn={signedIn} state={state} back={back} baseUrl={deps.config.baseUrl} />
              ))}
            </ul>
          )}
          <nav class="pages" aria-label="Pages">
            {state.page > 1 ? (
              <a href={listHref({ ...state, page: Math.min(state.page - 1, lastPage) })} rel="prev">
                ← Previous
              </a>
            ) : (
              <span></span>
            )}
            <span>{exact ? `Page ${state.page} of ${lastPage}` : `Page ${state.page}`}</span>
            {state.page < lastPage ? (
              <a href={listHref({ ...state, page: state.page + 1 })} rel="next">
                Next →
              </a>
            ) : (
              <span></span>
            )}
          </nav>
        </>
      )}
    </Layout>,
    qError ? 422 : 200,
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/images", requireSession, renderList);

  // the selected images (the account's own; others' keys are ignored) into one of the account's albums, or out of any
  web.post("/images/move", requireSession, async (c) => {
    const signedIn = c.get("signedIn");
    const { db } = c.get("deps");
    const body = await readForm(c);
    const keys = selectedKeys(body, "move");
    const target = albumQuery(body.to_album);
    if (target === undefined) throw validationError({ to_album: ["Choose an album, or no album."] });
    const moved = await moveOwnImages(db, signedIn.user.id, keys, target);
    if (moved === "missing") throw badRequest("The album does not exist or is not yours.");
    return c.redirect(withNotice(safeBack(body.back), "moved", moved), 303);
  });

  // the selected images (the account's own) public or private, in one UPDATE; the API's list shows it at once
  web.post("/images/visibility", requireSession, async (c) => {
    const signedIn = c.get("signedIn");
    const { db } = c.get("deps");
    const body = await readForm(c);
    const keys = selectedKeys(body, "change");
    const set = visibilityQuery(body.set);
    if (!set) throw validationError({ set: ["Choose public or private."] });
    const changed = await setOwnImagesPublic(db, signedIn.user.id, keys, set === "public");
    return c.redirect(withNotice(safeBack(body.back), `made_${set}`, changed), 303);
  });

  // the selected images (the account's own), each deleted as DELETE /api/v1/images/{key} does; unconfirmed, it asks first
  web.post("/images/delete", requireSession, async (c) => {
    const signedIn = c.get("signedIn");
    const deps = c.get("deps");
    const body = await readForm(c);
    const keys = selectedKeys(body, "delete");
    const own = await findOwnImagesByKeys(deps.db, signedIn.user.id, keys);
    const back = safeBack(body.back);
    if (body.confirmed !== "1") {
      if (own.length === 0) return c.redirect(withNotice(back, "deleted", 0), 303);
      return c.html(<ConfirmBulkDelete signedIn={signedIn} images={own} back={back} />);
    }
    let deleted = 0;
    for (const image of own) {
      try {
        await deleteImage(deps, signedIn.user.id, image.key);
        deleted++;
      } catch (e) {
        // deleted meanwhile (another tab, the API, expiry): not this request's to count
        if (!(e instanceof AppError && e.code === "not_found")) throw e;
      }
    }
    return c.redirect(withNotice(back, "deleted", deleted), 303);
  });

  // a confirmed delete removes the image as DELETE /api/v1/images/{key} does; unconfirmed (no script), it asks first
  web.post("/images/:key/delete", requireSession, async (c) => {
    const signedIn = c.get("signedIn");
    const deps = c.get("deps");
    const key = c.req.param("key");
    // the API's rule for a key (DELETE /images/{key}): no control character reaches the database
    if (/\p{Cc}/u.test(key)) throw validationError({ key: ["The key field must not contain control characters."] });
    const body = await readForm(c);
    const { perPage, page } = pageQuery(body.per_page, body.page);
    // back to the list it was deleted from; an image's own page is only where a cancel goes
    const back = safeBack(body.back, listHref({ page, perPage }));
    const list = back.startsWith(`${BASE}/images?`) ? back : listHref({ page, perPage });
    const image = await findImageForOwner(deps.db, key, signedIn.user.id);
    if (body.confirmed !== "1") {
      if (!image) return c.redirect(list, 303);
      return c.html(<ConfirmDelete signedIn={signedIn} image={{ key: image.key, name: image.originName }} page={page} perPage={perPage} back={back} />);
    }
    await deleteImage(deps, signedIn.user.id, key);
    return c.redirect(withNotice(list, "deleted", 1), 303);
  });

  registerImagePage(web);
}
