/**
 * Albums: create, rename and delete the account's albums; deleting one keeps its images, in no album.
 * Images are moved in and out from the Images page (images.tsx). Users manage albums here only: /api/v1 stays as
 * the contract shows it.
 */
import { z } from "@hono/zod-openapi";
import type { Context, Hono } from "hono";
import { ALBUMS_PER_ACCOUNT, type AlbumWithCount, createOwnAlbum, deleteOwnAlbum, listAlbumsWithCounts, renameOwnAlbum } from "../db/repositories/albums.ts";
import { notFound } from "../errors.ts";
import { formatUtc } from "../http/time.ts";
import { formField, readForm } from "./form.ts";
import { Field, FieldError, FormToken, Layout, Notice } from "./components/index.ts";
import { BASE, requireSession, type SignedIn, type SignedInEnv, type WebEnv } from "./session.ts";

const MAX_ALBUM_NAME = 100;
const AlbumName = z
  .string()
  .trim()
  .min(1, "Give the album a name.")
  .max(MAX_ALBUM_NAME, `Use at most ${MAX_ALBUM_NAME} characters.`)
  .refine((s) => !/[\p{Cc}\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/u.test(s), "Use no control or invisible characters.");

const NOTICES = { created: "Album created.", renamed: "Album renamed.", deleted: "Album deleted; its images are kept, in no album." } as const;

interface Shown {
  notice?: keyof typeof NOTICES;
  error?: string;
  name?: string;
  /** The album whose rename failed, with its error. */
  renaming?: { id: number; error: string; name: string };
}

const albumHref = (id: number) => `${BASE}/images?album=${id}`;

function AlbumRow({ album, signedIn, renaming }: { album: AlbumWithCount; signedIn: SignedIn; renaming?: Shown["renaming"] }) {
  const failed = renaming?.id === album.id ? renaming : undefined;
  const inputId = `rename-${album.id}`;
  return (
    <tr>
      <td data-label="Album">
        <a href={albumHref(album.id)}>{album.name}</a>
      </td>
      <td data-label="Images">{album.images}</td>
      <td data-label="Created">
        <time datetime={album.createdAt.toISOString()}>{formatUtc(album.createdAt)}</time>
      </td>
      <td data-label="Actions">
        <form method="post" action={`${BASE}/albums/${album.id}/rename`} class="inline">
          <FormToken signedIn={signedIn} />
          <label for={inputId} class="visually-hidden">{`New name for ${album.name}`}</label>
          <input
            id={inputId}
            name="name"
            value={failed?.name ?? album.name}
            maxlength={MAX_ALBUM_NAME}
            required
            aria-invalid={failed ? "true" : undefined}
            aria-describedby={failed ? `${inputId}-error` : undefined}
          />
          <button type="submit">Rename</button>
          <FieldError id={inputId} error={failed?.error} />
        </form>
        <form
          method="post"
          action={`${BASE}/albums/${album.id}/delete`}
          class="inline"
          data-confirm={`Delete the album ${album.name}? Its ${album.images} images are kept, in no album.`}
        >
          <FormToken signedIn={signedIn} />
          <input type="hidden" name="confirmed" value="0" />
          <button type="submit" class="danger" aria-label={`Delete the album ${album.name}`}>
            Delete
          </button>
        </form>
      </td>
    </tr>
  );
}

async function renderAlbums(c: Context<SignedInEnv>, shown: Shown = {}, status: 200 | 400 | 422 = 200) {
  const signedIn = c.get("signedIn");
  const albums = await listAlbumsWithCounts(c.get("deps").db, signedIn.user.id);
  return c.html(
    <Layout title="Albums" signedIn={signedIn} active="albums">
      {shown.notice && <Notice kind="success">{NOTICES[shown.notice]}</Notice>}
      <form class="card" method="post" action={`${BASE}/albums`}>
        <h2>New album</h2>
        <FormToken signedIn={signedIn} />
        <Field label="Name" id="name" hint={`At most ${MAX_ALBUM_NAME} characters; an account holds at most ${ALBUMS_PER_ACCOUNT} albums.`}>
          <input
            id="name"
            name="name"
            value={shown.name ?? ""}
            maxlength={MAX_ALBUM_NAME}
            required
            aria-invalid={shown.error ? "true" : undefined}
            aria-describedby={`name-hint${shown.error ? " name-error" : ""}`}
          />
          <FieldError id="name" error={shown.error} />
        </Field>
        <button type="submit">Create</button>
      </form>
      {albums.length === 0 ? (
        <p class="card">No albums yet. Uploads and the Images page can put images in one once it exists.</p>
      ) : (
        <table class="list stack" aria-label="Your albums">
          <thead>
            <tr>
              <th scope="col">Album</th>
              <th scope="col">Images</th>
              <th scope="col">Created</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {albums.map((album) => (
              <AlbumRow album={album} signedIn={signedIn} renaming={shown.renaming} />
            ))}
          </tbody>
        </table>
      )}
    </Layout>,
    status,
  );
}

/** The album id of a path: digits only, in PostgreSQL's integer range; anything else is no album. */
function albumIdOf(value: string): number {
  const id = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  if (!(id >= 1 && id <= 2_147_483_647)) throw notFound("There is no such album.");
  return id;
}

export function register(web: Hono<WebEnv>) {
  web.get("/albums", requireSession, async (c) => {
    const notice = c.req.query("done");
    return renderAlbums(c, { notice: notice && notice in NOTICES ? (notice as keyof typeof NOTICES) : undefined });
  });

  web.post("/albums", requireSession, async (c) => {
    const { db } = c.get("deps");
    const signedIn = c.get("signedIn");
    const raw = formField(await readForm(c), "name");
    const parsed = AlbumName.safeParse(raw);
    if (!parsed.success) return renderAlbums(c, { error: parsed.error.issues[0]!.message, name: raw.slice(0, MAX_ALBUM_NAME * 2) }, 422);
    const created = await createOwnAlbum(db, signedIn.user.id, parsed.data);
    if (created === "limit")
      return renderAlbums(c, { error: `You have ${ALBUMS_PER_ACCOUNT} albums, the most an account may hold: delete one first.`, name: parsed.data }, 400);
    if (created === "missing") throw notFound("There is no such account.");
    return c.redirect(`${BASE}/albums?done=created`, 303);
  });

  web.post("/albums/:id/rename", requireSession, async (c) => {
    const { db } = c.get("deps");
    const signedIn = c.get("signedIn");
    const id = albumIdOf(c.req.param("id"));
    const raw = formField(await readForm(c), "name");
    const parsed = AlbumName.safeParse(raw);
    if (!parsed.success) return renderAlbums(c, { renaming: { id, error: parsed.error.issues[0]!.message, name: raw.slice(0, MAX_ALBUM_NAME * 2) } }, 422);
    if (!(await renameOwnAlbum(db, signedIn.user.id, id, parsed.data))) throw notFound("There is no such album.");
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
      if (!album) throw notFound("There is no such album.");
      return c.html(
        <Layout title="Delete an album" signedIn={signedIn} active="albums">
          <form class="card narrow" method="post" action={`${BASE}/albums/${id}/delete`}>
            <p>
              Delete the album <strong>{album.name}</strong>? Its {album.images} images are kept, in no album.
            </p>
            <FormToken signedIn={signedIn} />
            <input type="hidden" name="confirmed" value="1" />
            <div class="buttons">
              <button type="submit" class="danger">
                Delete
              </button>
              <a class="button" href={`${BASE}/albums`}>
                Cancel
              </a>
            </div>
          </form>
        </Layout>,
      );
    }
    if (!(await deleteOwnAlbum(db, signedIn.user.id, id))) throw notFound("There is no such album.");
    return c.redirect(`${BASE}/albums?done=deleted`, 303);
  });
}
