/**
 * Albums: create, rename and delete the account's albums; deleting one keeps its images, in no album.
 * Images are moved in and out from the Images page (images.tsx). Users manage albums here only: /api/v1 stays as
 * the contract shows it.
 */
import { z } from "@hono/zod-openapi";
import type { Context, Hono } from "hono";
import { ALBUMS_PER_ACCOUNT, type AlbumWithCount, createOwnAlbum, deleteOwnAlbum, listAlbumsWithCounts, renameOwnAlbum } from "../db/repositories/albums.ts";
import { notFound } from "../errors.ts";
import { formField, readForm } from "./form.ts";
import {
  aria,
  Card,
  Cell,
  ConfirmButton,
  ConfirmPage,
  EmptyState,
  FieldError,
  FormToken,
  Layout,
  Notice,
  Table,
  TextInput,
  UtcTime,
} from "./components/index.ts";
import { type MessageKey, num, rich, t } from "./i18n/index.ts";
import { BASE, requireSession, type SignedIn, type SignedInEnv, type WebEnv } from "./session.ts";

const MAX_ALBUM_NAME = 100;
/** An album's name: trimmed, 1–100 characters, nothing invisible; its errors in the page's language. */
const albumName = () =>
  z
    .string()
    .trim()
    .min(1, t("albums.error.empty"))
    .max(MAX_ALBUM_NAME, t("albums.error.tooLong", { max: MAX_ALBUM_NAME }))
    .refine((s) => !/[\p{Cc}\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/u.test(s), t("albums.error.invisible"));

const NOTICES = ["created", "renamed", "deleted"] as const;
type Done = (typeof NOTICES)[number];

interface Shown {
  notice?: Done;
  error?: string;
  name?: string;
  /** The album whose rename failed, with its error. */
  renaming?: { id: number; error: string; name: string };
}

const albumHref = (id: number) => `${BASE}/images?album=${id}`;
const strong = (chunks: unknown) => <strong>{chunks}</strong>;

function AlbumRow({ album, signedIn, renaming }: { album: AlbumWithCount; signedIn: SignedIn; renaming?: Shown["renaming"] }) {
  const failed = renaming?.id === album.id ? renaming : undefined;
  const inputId = `rename-${album.id}`;
  return (
    <tr>
      <Cell label={t("albums.column.album")}>
        <a href={albumHref(album.id)}>{album.name}</a>
      </Cell>
      <Cell label={t("albums.column.images")}>{num(album.images)}</Cell>
      <Cell label={t("albums.column.created")}>
        <UtcTime at={album.createdAt} />
      </Cell>
      <Cell label={t("albums.column.actions")}>
        <div class="buttons">
          <form method="post" action={`${BASE}/albums/${album.id}/rename`} class="inline">
            <FormToken signedIn={signedIn} />
            <label for={inputId} class="visually-hidden">
              {t("albums.rename.label", { name: album.name })}
            </label>
            <input
              id={inputId}
              name="name"
              type="text"
              value={failed?.name ?? album.name}
              maxlength={MAX_ALBUM_NAME}
              required
              {...aria(inputId, undefined, failed?.error)}
            />
            <button type="submit">{t("albums.rename.button")}</button>
            <FieldError id={inputId} error={failed?.error} />
          </form>
          <ConfirmButton
            action={`${BASE}/albums/${album.id}/delete`}
            class="inline"
            question={t("albums.delete.question", { name: album.name, count: album.images })}
            signedIn={signedIn}
            label={t("common.delete")}
            ariaLabel={t("albums.delete.named", { name: album.name })}
          />
        </div>
      </Cell>
    </tr>
  );
}

async function renderAlbums(c: Context<SignedInEnv>, shown: Shown = {}, status: 200 | 400 | 422 = 200) {
  const signedIn = c.get("signedIn");
  const albums = await listAlbumsWithCounts(c.get("deps").db, signedIn.user.id);
  return c.html(
    <Layout title={t("albums.title")} signedIn={signedIn} active="albums">
      {shown.notice && <Notice kind="success">{t(`albums.notice.${shown.notice}` as MessageKey)}</Notice>}
      <Card id="new-album" title={t("albums.new.title")}>
        <form method="post" action={`${BASE}/albums`}>
          <FormToken signedIn={signedIn} />
          <TextInput
            name="name"
            label={t("albums.new.name")}
            value={shown.name ?? ""}
            hint={t("albums.new.hint", { max: MAX_ALBUM_NAME, albums: ALBUMS_PER_ACCOUNT })}
            error={shown.error}
            attrs={{ maxlength: MAX_ALBUM_NAME, required: true }}
          />
          <button type="submit">{t("albums.new.create")}</button>
        </form>
      </Card>
      {albums.length === 0 ? (
        <EmptyState>{t("albums.empty")}</EmptyState>
      ) : (
        <Table
          class="list"
          label={t("albums.table.label")}
          columns={[t("albums.column.album"), t("albums.column.images"), t("albums.column.created"), t("albums.column.actions")]}
        >
          {albums.map((album) => (
            <AlbumRow album={album} signedIn={signedIn} renaming={shown.renaming} />
          ))}
        </Table>
      )}
    </Layout>,
    status,
  );
}

/** The album id of a path: digits only, in PostgreSQL's integer range; anything else is no album. */
function albumIdOf(value: string): number {
  const id = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  if (!(id >= 1 && id <= 2_147_483_647)) throw notFound(t("albums.error.missing"));
  return id;
}

export function register(web: Hono<WebEnv>) {
  web.get("/albums", requireSession, async (c) => {
    const notice = c.req.query("done");
    return renderAlbums(c, { notice: NOTICES.find((n) => n === notice) });
  });

  web.post("/albums", requireSession, async (c) => {
    const { db } = c.get("deps");
    const signedIn = c.get("signedIn");
    const raw = formField(await readForm(c), "name");
    const parsed = albumName().safeParse(raw);
    if (!parsed.success) return renderAlbums(c, { error: parsed.error.issues[0]!.message, name: raw.slice(0, MAX_ALBUM_NAME * 2) }, 422);
    const created = await createOwnAlbum(db, signedIn.user.id, parsed.data);
    if (created === "limit") return renderAlbums(c, { error: t("albums.error.limit", { count: ALBUMS_PER_ACCOUNT }), name: parsed.data }, 400);
    if (created === "missing") throw notFound(t("albums.error.noAccount"));
    return c.redirect(`${BASE}/albums?done=created`, 303);
  });

  web.post("/albums/:id/rename", requireSession, async (c) => {
    const { db } = c.get("deps");
    const signedIn = c.get("signedIn");
    const id = albumIdOf(c.req.param("id"));
    const raw = formField(await readForm(c), "name");
    const parsed = albumName().safeParse(raw);
    if (!parsed.success) return renderAlbums(c, { renaming: { id, error: parsed.error.issues[0]!.message, name: raw.slice(0, MAX_ALBUM_NAME * 2) } }, 422);
    if (!(await renameOwnAlbum(db, signedIn.user.id, id, parsed.data))) throw notFound(t("albums.error.missing"));
    return c.redirect(`${BASE}/albums?done=renamed`, 303);
  });

  // confirmed (the page's script asks first, or the page below without scripts), the album goes; its images stay
  web.post("/albums/:id/delete", requireSession, async (c) => {
    const { db } = c.get("deps");
    const signedIn = c.get("signedIn");
    const id = albumIdOf(c.req.param("id"));
    const confirmed = formField(await readForm(c), "confirmed") === "1";
    if (!confirmed) {
      const album = (await listAlbumsWithCounts(db, signedIn.user.id)).find((a) => a.id === id);
      if (!album) throw notFound(t("albums.error.missing"));
      return c.html(
        <ConfirmPage
          title={t("albums.delete.title")}
          signedIn={signedIn}
          active="albums"
          action={`${BASE}/albums/${id}/delete`}
          confirmLabel={t("common.delete")}
          cancel={`${BASE}/albums`}
        >
          <p>{rich("albums.delete.confirm", { name: album.name, count: album.images, b: strong })}</p>
        </ConfirmPage>,
      );
    }
    if (!(await deleteOwnAlbum(db, signedIn.user.id, id))) throw notFound(t("albums.error.missing"));
    return c.redirect(`${BASE}/albums?done=deleted`, 303);
  });
}
