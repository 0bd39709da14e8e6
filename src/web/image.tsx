/**
 * One image's page, /user/images/{key}: the picture, every link and snippet of its v1 resource (and the
 * Responsive HTML one) to copy, its facts (dimensions, size, checksums, dates, public or private, album, storage, what
 * the metadata policy removed), and what can be done to it. The owner's only: another account's image and a missing
 * key are the same 404.
 */
import type { Hono } from "hono";
import { ALBUMS_PER_ACCOUNT } from "../db/repositories/albums.ts";
import { listAlbumsForOwner } from "../db/repositories/sessions.ts";
import { findImageDetailsForOwner } from "../db/repositories/images.ts";
import { notFound } from "../errors.ts";
import { toImageResource } from "../http/image-resource.ts";
import { responsiveSnippet } from "../http/responsive-snippet.ts";
import { Card, ConfirmButton, CopyField, FormToken, formatBytes, Layout, Notice, SELECT_PREFIX, UtcTime } from "./components/index.ts";
import { type MessageKey, t } from "./i18n/index.ts";
import { AlbumOptions } from "./images/list.tsx";
import { metadataText } from "./images/metadata.ts";
import { BASE, requireSession, type WebEnv } from "./session.ts";

/** A key that may name an image: no control character (the API's rule) reaches the database, nor an overlong one. */
const possibleKey = (key: string) => key.length <= 255 && !/\p{Cc}/u.test(key);

const NOTICES: Record<string, MessageKey> = {
  moved: "images.page.notice.moved",
  made_public: "images.page.notice.madePublic",
  made_private: "images.page.notice.madePrivate",
};

export function registerImagePage(web: Hono<WebEnv>) {
  web.get("/images/:key", requireSession, async (c) => {
    const signedIn = c.get("signedIn");
    const deps = c.get("deps");
    const key = c.req.param("key");
    const found = possibleKey(key) ? await findImageDetailsForOwner(deps.db, key, signedIn.user.id) : null;
    if (!found) throw notFound(t("images.page.notFound"));
    const { image, strategy, album } = found;
    const resource = toImageResource(image, strategy, deps.storage, deps.config.baseUrl);
    const albums = await listAlbumsForOwner(deps.db, signedIn.user.id, ALBUMS_PER_ACCOUNT);
    const here = `${BASE}/images/${encodeURIComponent(image.key)}`;
    const shown = Object.entries(NOTICES).flatMap(([name, key]) => {
      const v = c.req.query(name);
      return v !== undefined && /^\d{1,3}$/.test(v) ? [t(key, { done: Number(v) === 1 ? "yes" : "no" })] : [];
    });
    const links: { id: string; label: string; name?: string; text: string; multiline?: boolean }[] = [
      { id: "url", label: "URL", text: resource.url },
      { id: "thumbnail_url", label: t("images.link.thumbnail"), text: resource.thumbnail_url },
      { id: "html", label: "HTML", text: resource.html },
      { id: "bbcode", label: "BBCode", text: resource.bbcode },
      { id: "markdown", label: "Markdown", text: resource.markdown },
      { id: "markdown_with_link", label: t("images.snippet.mdLink"), text: resource.markdown_with_link },
      { id: "responsive", label: t("images.snippet.responsive"), text: responsiveSnippet(resource, deps.config.baseUrl), multiline: true },
      { id: "delete_url", label: t("images.link.deleteUrl"), name: t("images.link.deleteUrlName"), text: resource.delete_url },
    ];
    const facts: [MessageKey, unknown][] = [
      ["images.facts.dimensions", t("images.facts.pixels", { width: String(image.width), height: String(image.height) })],
      ["images.facts.size", t("images.facts.bytes", { size: formatBytes(image.size), bytes: image.size })],
      ["images.facts.type", image.mimetype],
      ["images.facts.md5", <code>{image.md5}</code>],
      ["images.facts.sha1", <code>{image.sha1}</code>],
      ["images.facts.uploaded", <UtcTime at={image.createdAt} />],
      ["images.facts.expires", image.expiredAt ? <UtcTime at={image.expiredAt} /> : t("images.facts.never")],
      ["images.facts.visibility", image.isPublic ? t("images.facts.public") : t("images.facts.private")],
      ["images.facts.album", album ? <a href={`${BASE}/images?album=${album.id}`}>{album.name}</a> : t("images.album.none")],
      ["images.facts.storage", strategy.name],
      ["images.facts.metadata", metadataText(image.metadataRemoved)],
    ];
    return c.html(
      <Layout title={image.originName} signedIn={signedIn} active="images">
        <p>
          <a href={`${BASE}/images?page=1`}>← {t("images.page.all")}</a>
        </p>
        {shown.map((text) => (
          <Notice kind="success">{text}</Notice>
        ))}
        <div class="image-page">
          <figure class="card picture">
            <a href={resource.url} target="_blank" rel="noopener">
              <img src={resource.thumbnail_url} alt={image.originName} width={image.width} height={image.height} />
              <span class="visually-hidden"> {t("images.page.openFull")}</span>
            </a>
          </figure>
          <Card id="facts" title={t("images.facts.title")}>
            <dl class="facts">
              {facts.map(([label, value]) => (
                <>
                  <dt>{t(label)}</dt>
                  <dd data-testid={label === "images.facts.visibility" ? "visibility" : label === "images.facts.metadata" ? "metadata" : undefined}>{value}</dd>
                </>
              ))}
            </dl>
          </Card>
        </div>
        <Card id="links" title={t("images.link.title")}>
          <div class="links">
            {links.map((link) => (
              <CopyField
                id={`link-${link.id}`}
                label={link.label}
                text={link.text}
                multiline={link.multiline}
                copyLabel={t("images.link.copy", { name: link.name ?? link.label })}
              />
            ))}
          </div>
        </Card>
        <Card id="actions" title={t("images.page.change")}>
          <form method="post" action={`${BASE}/images/visibility`} class="inline">
            <FormToken signedIn={signedIn} />
            <input type="hidden" name={`${SELECT_PREFIX}${image.key}`} value="1" />
            <input type="hidden" name="back" value={here} />
            <input type="hidden" name="set" value={image.isPublic ? "private" : "public"} />
            <button type="submit">{image.isPublic ? t("images.bulk.makePrivate") : t("images.bulk.makePublic")}</button>
          </form>
          <form method="post" action={`${BASE}/images/move`} class="inline">
            <FormToken signedIn={signedIn} />
            <input type="hidden" name={`${SELECT_PREFIX}${image.key}`} value="1" />
            <input type="hidden" name="back" value={here} />
            <label for="to_album">{t("images.facts.album")}</label>
            <select id="to_album" name="to_album">
              <AlbumOptions albums={albums} selected={album?.id ?? null} />
            </select>
            <button type="submit">{t("images.bulk.move")}</button>
          </form>
          <ConfirmButton
            action={`${here}/delete`}
            class="inline"
            question={t("images.delete.question", { name: image.originName })}
            signedIn={signedIn}
            label={t("images.page.delete")}
            hidden={{ back: here }}
          />
        </Card>
      </Layout>,
    );
  });
}
