/** The account's images, newest first, paginated as GET /api/v1/images; copy their snippets, open or delete them. */
import type { Hono } from "hono";
import { listAlbumsWithCounts, MOVE_MAX, moveOwnImages } from "../db/repositories/albums.ts";
import { type AlbumFilter, findImageForOwner } from "../db/repositories/images.ts";
import { type ImageResource, imagePage } from "../http/image-resource.ts";
import { responsiveSnippet } from "../http/responsive-snippet.ts";
import { badRequest, validationError } from "../errors.ts";
import { deleteImage } from "../services/delete.ts";
import { readForm } from "./form.ts";
import { CopyButton, FormToken, humanBytes, Layout, Notice } from "./layout.tsx";
import { BASE, requireSession, type SignedIn, type WebEnv } from "./session.ts";

const PER_PAGE_DEFAULT = 30;
const PER_PAGE_CHOICES = [12, 30, 60, 100];

/** The API's bounds (per_page 1–100, default 30; page from 1); what is not a number in range falls back to the default. */
function pageQuery(perPage: string | undefined, page: string | undefined) {
  const int = (v: string | undefined, min: number, max: number, fallback: number) => {
    const n = v !== undefined && /^\d{1,7}$/.test(v) ? Number(v) : NaN;
    return n >= min && n <= max ? n : fallback;
  };
  return { perPage: int(perPage, 1, 100, PER_PAGE_DEFAULT), page: int(page, 1, 1_000_000, 1) };
}

/** The `album` query: an album id, "none" (images in no album) or absent (all); anything else is all. */
function albumQuery(value: string | undefined): AlbumFilter {
  if (value === "none") return { album: null };
  const id = value !== undefined && /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  return id >= 1 && id <= 2_147_483_647 ? { album: id } : undefined;
}
const albumParam = (filter: AlbumFilter) => (filter === undefined ? "" : `&album=${filter.album ?? "none"}`);

const pageHref = (page: number, perPage: number, filter?: AlbumFilter) =>
  `${BASE}/images?page=${page}${perPage === PER_PAGE_DEFAULT ? "" : `&per_page=${perPage}`}${albumParam(filter)}`;

/** The selection checkboxes are named `image_<key>` (a form field holds one value per name). */
const SELECT_PREFIX = "image_";

function ImageCard({ image, signedIn, page, perPage, baseUrl }: { image: ImageResource; signedIn: SignedIn; page: number; perPage: number; baseUrl: string }) {
  const selectId = `select-${image.key}`;
  return (
    <li class="image">
      <div class="select">
        <input type="checkbox" id={selectId} name={`${SELECT_PREFIX}${image.key}`} value="1" form="bulk" />
        <label for={selectId}>
          Select <span class="visually-hidden">{image.origin_name}</span>
        </label>
      </div>
      <a class="thumb" href={image.url} target="_blank" rel="noopener">
        <img src={image.thumbnail_url} alt={image.origin_name} loading="lazy" width={image.width} height={image.height} />
      </a>
      <div class="meta">
        <p class="filename" title={image.origin_name}>
          {image.origin_name}
        </p>
        <p class="muted small">
          {image.width}×{image.height} · {humanBytes(image.size * 1024)} · <time>{image.created_at}</time>
          {!image.is_public && <span class="badge">private</span>}
          {image.expired_at && <span class="badge">expires {image.expired_at}</span>}
        </p>
      </div>
      <div class="buttons" role="group" aria-label={`Copy a snippet of ${image.origin_name}`}>
        <span class="muted small" aria-hidden="true">
          Copy
        </span>
        <CopyButton text={image.url} label="URL" />
        <CopyButton text={image.html} label="HTML" />
        <CopyButton text={image.bbcode} label="BBCode" />
        <CopyButton text={image.markdown} label="Markdown" />
        <CopyButton text={image.markdown_with_link} label="MD + link" name="Markdown with link" />
        <CopyButton text={responsiveSnippet(image, baseUrl)} label="Responsive HTML" />
      </div>
      <div class="buttons">
        <a class="button" href={image.url} target="_blank" rel="noopener">
          Open
        </a>
        <form method="post" action={`${BASE}/images/${encodeURIComponent(image.key)}/delete`} data-confirm={`Delete ${image.origin_name}? This cannot be undone.`}>
          <FormToken signedIn={signedIn} />
          <input type="hidden" name="confirmed" value="0" />
          <input type="hidden" name="page" value={String(page)} />
          <input type="hidden" name="per_page" value={String(perPage)} />
          <button type="submit" class="danger" aria-label={`Delete ${image.origin_name}`}>
            Delete
          </button>
        </form>
      </div>
    </li>
  );
}

function ConfirmDelete({ signedIn, image, page, perPage }: { signedIn: SignedIn; image: { key: string; name: string }; page: number; perPage: number }) {
  return (
    <Layout title="Delete an image" signedIn={signedIn} active="images">
      <form class="card narrow" method="post" action={`${BASE}/images/${encodeURIComponent(image.key)}/delete`}>
        <p>
          Delete <strong>{image.name}</strong>? The file, its thumbnail and its record are removed at once; this cannot be undone.
        </p>
        <FormToken signedIn={signedIn} />
        <input type="hidden" name="confirmed" value="1" />
        <input type="hidden" name="page" value={String(page)} />
        <input type="hidden" name="per_page" value={String(perPage)} />
        <div class="buttons">
          <button type="submit" class="danger">
            Delete
          </button>
          <a class="button" href={pageHref(page, perPage)}>
            Cancel
          </a>
        </div>
      </form>
    </Layout>
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/images", requireSession, async (c) => {
    const signedIn = c.get("signedIn");
    const deps = c.get("deps");
    const { perPage, page } = pageQuery(c.req.query("per_page"), c.req.query("page"));
    const [albums, requested] = [await listAlbumsWithCounts(deps.db, signedIn.user.id), albumQuery(c.req.query("album"))];
    // an album that is not the account's shows as what it is to this account: no album of theirs, so nothing
    const filter: AlbumFilter = requested && requested.album !== null && !albums.some((a) => a.id === requested.album) ? { album: -1 } : requested;
    const { total, last_page: lastPage, data: images } = await imagePage(deps, signedIn.user, perPage, page, filter);
    const current = filter && filter.album !== null ? albums.find((a) => a.id === filter.album) : undefined;
    // fixed notices: the query only says what happened, never what to print
    const deleted = c.req.query("deleted") !== undefined;
    const moved = c.req.query("moved");
    const movedCount = moved !== undefined && /^\d{1,3}$/.test(moved) ? Number(moved) : null;
    return c.html(
      <Layout title={current ? `Images in ${current.name}` : filter?.album === null ? "Images in no album" : "Images"} signedIn={signedIn} active="images">
        {deleted && <Notice kind="success">Image deleted.</Notice>}
        {movedCount !== null && <Notice kind="success">{movedCount === 1 ? "1 image moved." : `${movedCount} images moved.`}</Notice>}
        <div class="toolbar">
          <p class="muted" data-testid="total">
            {total === 1 ? "1 image" : `${total} images`}, newest first
          </p>
          <form method="get" action={`${BASE}/images`} class="inline">
            <label for="album">Album</label>
            <select id="album" name="album">
              <option value="" selected={filter === undefined}>
                All images
              </option>
              <option value="none" selected={filter?.album === null}>
                In no album
              </option>
              {albums.map((a) => (
                <option value={String(a.id)} selected={filter?.album === a.id}>
                  {a.name} ({a.images})
                </option>
              ))}
            </select>
            <label for="per_page">Per page</label>
            <select id="per_page" name="per_page">
              {[...new Set([...PER_PAGE_CHOICES, perPage])].sort((a, b) => a - b).map((n) => (
                <option value={String(n)} selected={n === perPage}>
                  {n}
                </option>
              ))}
            </select>
            <button type="submit">Show</button>
          </form>
        </div>
        {images.length === 0 ? (
          <p class="card">
            {total === 0 ? (
              <>
                No images yet. <a href={`${BASE}/upload`}>Upload some</a>.
              </>
            ) : (
              <>
                No images on this page. <a href={pageHref(1, perPage)}>Back to the first page</a>.
              </>
            )}
          </p>
        ) : (
          <form id="bulk" class="toolbar" method="post" action={`${BASE}/images/move`}>
            <FormToken signedIn={signedIn} />
            <input type="hidden" name="back" value={pageHref(page, perPage, requested)} />
            <label for="to_album">Move the selected images to</label>
            <select id="to_album" name="to_album">
              <option value="none">No album</option>
              {albums.map((a) => (
                <option value={String(a.id)}>{a.name}</option>
              ))}
            </select>
            <button type="submit">Move</button>
            {albums.length === 0 && (
              <span class="muted small">
                <a href={`${BASE}/albums`}>Create an album</a> to move images into it.
              </span>
            )}
          </form>
        )}
        {images.length > 0 && (
          <ul class="grid" aria-label="Your images">
            {images.map((image) => (
              <ImageCard image={image} signedIn={signedIn} page={page} perPage={perPage} baseUrl={deps.config.baseUrl} />
            ))}
          </ul>
        )}
        <nav class="pages" aria-label="Pages">
          {page > 1 ? <a href={pageHref(page - 1, perPage, requested)} rel="prev">← Newer</a> : <span></span>}
          <span>
            Page {page} of {lastPage}
          </span>
          {page < lastPage ? <a href={pageHref(page + 1, perPage, requested)} rel="next">Older →</a> : <span></span>}
        </nav>
      </Layout>,
    );
  });

  // the selected images (the account's own; others' keys are ignored) into one of the account's albums, or out of any
  web.post("/images/move", requireSession, async (c) => {
    const signedIn = c.get("signedIn");
    const { db } = c.get("deps");
    const body = await readForm(c);
    const keys = Object.keys(body)
      .filter((name) => name.startsWith(SELECT_PREFIX) && body[name] === "1")
      .map((name) => name.slice(SELECT_PREFIX.length));
    if (keys.length === 0) throw badRequest("Select the images to move first.");
    if (keys.length > MOVE_MAX) throw badRequest(`Move at most ${MOVE_MAX} images at once.`);
    const target = body.to_album === "none" ? null : albumQuery(body.to_album)?.album;
    if (target === undefined) throw validationError({ to_album: ["Choose an album, or no album."] });
    const moved = await moveOwnImages(db, signedIn.user.id, keys, target);
    if (moved === "missing") throw badRequest("The album does not exist or is not yours.");
    const back = body.back && body.back.startsWith(`${BASE}/images?`) && !/[\\\s]/.test(body.back) ? body.back : `${BASE}/images?page=1`;
    return c.redirect(`${back}&moved=${moved}`, 303);
  });

  // a confirmed delete removes the image as DELETE /api/v1/images/{key} does; unconfirmed (no script), it asks first
  web.post("/images/:key/delete", requireSession, async (c) => {
    const signedIn = c.get("signedIn");
    const deps = c.get("deps");
    const key = c.req.param("key");
    // the API's rule for a key (DELETE /images/{key}): no control character reaches the database
    if (/\p{Cc}/u.test(key)) throw validationError({ key: ["The key field must not contain control characters."] });
    const body = await readForm(c);
    const text = (name: string) => body[name];
    const { perPage, page } = pageQuery(text("per_page"), text("page"));
    const image = await findImageForOwner(deps.db, key, signedIn.user.id);
    if (text("confirmed") !== "1") {
      if (!image) return c.redirect(pageHref(page, perPage), 303);
      return c.html(<ConfirmDelete signedIn={signedIn} image={{ key: image.key, name: image.originName }} page={page} perPage={perPage} />);
    }
    await deleteImage(deps, signedIn.user.id, key);
    return c.redirect(`${pageHref(page, perPage)}&deleted=1`, 303);
  });
}
