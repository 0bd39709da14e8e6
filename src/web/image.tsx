/**
 * One image's page, /user/images/{key}: the picture, every link and snippet of its v1 resource (and the
 * Responsive HTML one) to copy, its facts (dimensions, size, checksums, dates, public or private, album, storage), and
 * what can be done to it. The owner's only: another account's image and a missing key are the same 404.
 */
import type { Hono } from "hono";
import { ALBUMS_PER_ACCOUNT } from "../db/repositories/albums.ts";
import { listAlbumsForOwner } from "../db/repositories/sessions.ts";
import { findImageDetailsForOwner } from "../db/repositories/images.ts";
import { notFound } from "../errors.ts";
import { toImageResource } from "../http/image-resource.ts";
import { responsiveSnippet } from "../http/responsive-snippet.ts";
import { SELECT_PREFIX, UtcTime, CopyButton, FormToken, formatBytes, Layout, Notice } from "./components/index.ts";
import { BASE, requireSession, type WebEnv } from "./session.ts";

/** The album select's options: no album, then the account's albums. */
export const AlbumOptions = ({ albums, selected }: { albums: { id: number; name: string }[]; selected?: number | null }) => (
  <>
    <option value="none" selected={selected === null}>
      No album
    </option>
    {albums.map((a) => (
      <option value={String(a.id)} selected={selected === a.id}>
        {a.name}
      </option>
    ))}
  </>
);

/** A key that may name an image: no control character (the API's rule) reaches the database, nor an overlong one. */
const possibleKey = (key: string) => key.length <= 255 && !/\p{Cc}/u.test(key);

const NOTICES: Record<string, (n: number) => string> = {
  moved: (n) => (n === 1 ? "Image moved." : "Nothing moved."),
  made_public: (n) => (n === 1 ? "The image is public now." : "Nothing changed."),
  made_private: (n) => (n === 1 ? "The image is private now." : "Nothing changed."),
};

export function registerImagePage(web: Hono<WebEnv>) {
  web.get("/images/:key", requireSession, async (c) => {
    const signedIn = c.get("signedIn");
    const deps = c.get("deps");
    const key = c.req.param("key");
    const found = possibleKey(key) ? await findImageDetailsForOwner(deps.db, key, signedIn.user.id) : null;
    if (!found) throw notFound("Image not found.");
    const { image, strategy, album } = found;
    const resource = toImageResource(image, strategy, deps.storage, deps.config.baseUrl);
    const albums = await listAlbumsForOwner(deps.db, signedIn.user.id, ALBUMS_PER_ACCOUNT);
    const here = `${BASE}/images/${encodeURIComponent(image.key)}`;
    const shown = Object.entries(NOTICES).flatMap(([name, text]) => {
      const v = c.req.query(name);
      return v !== undefined && /^\d{1,3}$/.test(v) ? [text(Number(v))] : [];
    });
    const links: { id: string; label: string; text: string; multiline?: boolean }[] = [
      { id: "url", label: "URL", text: resource.url },
      { id: "thumbnail_url", label: "Thumbnail URL", text: resource.thumbnail_url },
      { id: "html", label: "HTML", text: resource.html },
      { id: "bbcode", label: "BBCode", text: resource.bbcode },
      { id: "markdown", label: "Markdown", text: resource.markdown },
      { id: "markdown_with_link", label: "Markdown with link", text: resource.markdown_with_link },
      { id: "responsive", label: "Responsive HTML", text: responsiveSnippet(resource, deps.config.baseUrl), multiline: true },
      { id: "delete_url", label: "Delete URL (API, with a token)", text: resource.delete_url },
    ];
    return c.html(
      <Layout title={image.originName} signedIn={signedIn} active="images">
        <p>
          <a href={`${BASE}/images?page=1`}>← All images</a>
        </p>
        {shown.map((text) => (
          <Notice kind="success">{text}</Notice>
        ))}
        <div class="image-page">
          <figure class="card picture">
            <a href={resource.url} target="_blank" rel="noopener">
              <img src={resource.thumbnail_url} alt={image.originName} width={image.width} height={image.height} />
              <span class="visually-hidden"> (open the full image in a new tab)</span>
            </a>
          </figure>
          <section class="card" aria-labelledby="facts-heading">
            <h2 id="facts-heading">Details</h2>
            <dl class="facts">
              <dt>Dimensions</dt>
              <dd>
                {image.width} × {image.height} px
              </dd>
              <dt>Size</dt>
              <dd>
                {formatBytes(image.size)} ({image.size.toLocaleString("en")} bytes)
              </dd>
              <dt>Type</dt>
              <dd>{image.mimetype}</dd>
              <dt>MD5</dt>
              <dd>
                <code>{image.md5}</code>
              </dd>
              <dt>SHA-1</dt>
              <dd>
                <code>{image.sha1}</code>
              </dd>
              <dt>Uploaded</dt>
              <dd>
                <UtcTime at={image.createdAt} />
              </dd>
              <dt>Expires</dt>
              <dd>{image.expiredAt ? <UtcTime at={image.expiredAt} /> : "Never"}</dd>
              <dt>Visibility</dt>
              <dd data-testid="visibility">{image.isPublic ? "Public" : "Private"}</dd>
              <dt>Album</dt>
              <dd>{album ? <a href={`${BASE}/images?album=${album.id}`}>{album.name}</a> : "No album"}</dd>
              <dt>Storage</dt>
              <dd>{strategy.name}</dd>
            </dl>
          </section>
        </div>
        <section class="card" aria-labelledby="links-heading">
          <h2 id="links-heading">Links</h2>
          <ul class="links">
            {links.map((link) => (
              <li class="field">
                <label for={`link-${link.id}`}>{link.label}</label>
                <div class="copy-row">
                  {link.multiline ? (
                    <textarea id={`link-${link.id}`} readonly rows={6} spellcheck={false}>
                      {link.text}
                    </textarea>
                  ) : (
                    <input type="text" id={`link-${link.id}`} readonly value={link.text} spellcheck={false} />
                  )}
                  <CopyButton text={link.text} label={`Copy ${link.label.replace(/ \(.*\)$/, "")}`} name={link.label} />
                </div>
              </li>
            ))}
          </ul>
        </section>
        <section class="card" aria-labelledby="actions-heading">
          <h2 id="actions-heading">Change</h2>
          <form method="post" action={`${BASE}/images/visibility`} class="inline">
            <FormToken signedIn={signedIn} />
            <input type="hidden" name={`${SELECT_PREFIX}${image.key}`} value="1" />
            <input type="hidden" name="back" value={here} />
            <input type="hidden" name="set" value={image.isPublic ? "private" : "public"} />
            <button type="submit">{image.isPublic ? "Make private" : "Make public"}</button>
          </form>
          <form method="post" action={`${BASE}/images/move`} class="inline">
            <FormToken signedIn={signedIn} />
            <input type="hidden" name={`${SELECT_PREFIX}${image.key}`} value="1" />
            <input type="hidden" name="back" value={here} />
            <label for="to_album">Album</label>
            <select id="to_album" name="to_album">
              <AlbumOptions albums={albums} selected={album?.id ?? null} />
            </select>
            <button type="submit">Move</button>
          </form>
          <form method="post" action={`${here}/delete`} class="inline" data-confirm={`Delete ${image.originName}? This cannot be undone.`}>
            <FormToken signedIn={signedIn} />
            <input type="hidden" name="confirmed" value="0" />
            <input type="hidden" name="back" value={here} />
            <button type="submit" class="danger">
              Delete this image
            </button>
          </form>
        </section>
      </Layout>,
    );
  });
}
