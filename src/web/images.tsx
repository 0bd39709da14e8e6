/** The account's images, newest first, paginated as GET /api/v1/images; copy their snippets, open or delete them. */
import type { Hono } from "hono";
import { findImageForOwner } from "../db/repositories/images.ts";
import { type ImageResource, imagePage } from "../http/image-resource.ts";
import { responsiveSnippet } from "../http/responsive-snippet.ts";
import { validationError } from "../errors.ts";
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

const pageHref = (page: number, perPage: number) =>
  `${BASE}/images?page=${page}${perPage === PER_PAGE_DEFAULT ? "" : `&per_page=${perPage}`}`;

function ImageCard({ image, signedIn, page, perPage, baseUrl }: { image: ImageResource; signedIn: SignedIn; page: number; perPage: number; baseUrl: string }) {
  return (
    <li class="image">
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
    const { total, last_page: lastPage, data: images } = await imagePage(deps, signedIn.user, perPage, page);
    // a fixed notice: the query only says that a delete happened, never what to print
    const deleted = c.req.query("deleted") !== undefined;
    return c.html(
      <Layout title="Images" signedIn={signedIn} active="images">
        {deleted && <Notice kind="success">Image deleted.</Notice>}
        <div class="toolbar">
          <p class="muted" data-testid="total">
            {total === 1 ? "1 image" : `${total} images`}, newest first
          </p>
          <form method="get" action={`${BASE}/images`} class="inline">
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
          <ul class="grid" aria-label="Your images">
            {images.map((image) => (
              <ImageCard image={image} signedIn={signedIn} page={page} perPage={perPage} baseUrl={deps.config.baseUrl} />
            ))}
          </ul>
        )}
        <nav class="pages" aria-label="Pages">
          {page > 1 ? <a href={pageHref(page - 1, perPage)} rel="prev">← Newer</a> : <span></span>}
          <span>
            Page {page} of {lastPage}
          </span>
          {page < lastPage ? <a href={pageHref(page + 1, perPage)} rel="next">Older →</a> : <span></span>}
        </nav>
      </Layout>,
    );
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
