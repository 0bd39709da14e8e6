/**
 * The account's images, paginated as GET /api/v1/images: search them by original name, sort them (newest,
 * oldest or largest first), filter them by album and by public or private; copy their snippets, open them, or act on
 * a selection (move to an album or out, make public or private, delete). Each image has its own page (image.tsx).
 * The parts are in images/: what the address says (query.ts), the filters, cards and bulk actions (list.tsx), the
 * confirmations (confirm.tsx).
 */
import type { Context, Hono } from "hono";
import { ALBUMS_PER_ACCOUNT, MOVE_MAX, moveOwnImages } from "../db/repositories/albums.ts";
import { listAlbumsForOwner } from "../db/repositories/sessions.ts";
import {
  countImagesForOwner,
  findImageForOwner,
  findOwnImagesByKeys,
  type ImageFilter,
  isFiltered,
  listImagesForOwner,
  setOwnImagesPublic,
} from "../db/repositories/images.ts";
import { getUser } from "../db/repositories/users.ts";
import { toImageResource } from "../http/image-resource.ts";
import { RESPONSIVE_COLUMN } from "../http/responsive-snippet.ts";
import { LADDER } from "../services/variants/query.ts";
import { AppError, badRequest, validationError } from "../errors.ts";
import { deleteImage } from "../services/delete.ts";
import { rich, t } from "./i18n/index.ts";
import { readForm } from "./form.ts";
import { registerImagePage } from "./image.tsx";
import { EmptyState, ImageGrid, Layout, Pager } from "./components/index.ts";
import { ConfirmBulkDelete, ConfirmDelete } from "./images/confirm.tsx";
import { BulkActions, Filters, ListNotices, type Listed, UserImageCard } from "./images/list.tsx";
import { albumQuery, listHref, listState, pageQuery, safeBack, selectedKeys, visibilityQuery, withNotice } from "./images/query.ts";
import { BASE, requireSession, type SignedInEnv, type WebEnv } from "./session.ts";

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
      size: r.image.size,
      createdAt: r.image.createdAt,
      expiredAt: r.image.expiredAt,
    }));
  }
  const lastPage = exact ? Math.max(1, Math.ceil(total / state.perPage)) : undefined;
  const current = typeof album === "number" ? albums.find((a) => a.id === album) : undefined;
  const back = listHref(state);
  const filtered = !!state.q || state.visibility !== undefined || state.album !== undefined || state.sort !== "newest";
  const title = current ? t("images.title.album", { name: current.name }) : album === null ? t("images.title.noAlbum") : t("images.title.all");
  return c.html(
    <Layout title={title} signedIn={signedIn} active="images">
      <ListNotices query={query} />
      <Filters state={state} qError={qError} albums={albums} filtered={filtered} />
      {qError ? (
        <EmptyState>{t("images.search.nothing")}</EmptyState>
      ) : (
        <>
          <p class="muted" data-testid="total" role="status">
            {t("images.summary.line", {
              total: exact ? t("common.count.images", { count: total }) : t("images.summary.moreThan", { count: upTo - 1 }),
              sort: state.sort,
            })}
            {state.q && <> · {t("images.summary.q", { q: state.q })}</>}
            {state.visibility && <> · {t("images.summary.visibility", { visibility: state.visibility })}</>}
          </p>
          {listed.length === 0 ? (
            <EmptyState>
              {total > 0
                ? rich("images.empty.page", { a: (chunks) => <a href={listHref({ ...state, page: 1 })}>{chunks}</a> })
                : isFiltered(filter)
                  ? t("images.empty.match")
                  : rich("images.empty.none", { a: (chunks) => <a href={`${BASE}/upload`}>{chunks}</a> })}
            </EmptyState>
          ) : (
            <>
              <BulkActions signedIn={signedIn} back={back} max={MOVE_MAX} albums={albums} />
              <ImageGrid label={t("images.grid.label")} data={{ ladder: LADDER.join(","), column: RESPONSIVE_COLUMN }}>
                {listed.map((image) => (
                  <UserImageCard image={image} signedIn={signedIn} state={state} back={back} baseUrl={deps.config.baseUrl} />
                ))}
              </ImageGrid>
            </>
          )}
          <Pager page={state.page} lastPage={lastPage} href={(page) => listHref({ ...state, page })} />
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
    if (target === undefined) throw validationError({ to_album: [t("images.error.chooseAlbum")] });
    const moved = await moveOwnImages(db, signedIn.user.id, keys, target);
    if (moved === "missing") throw badRequest(t("images.error.albumMissing"));
    return c.redirect(withNotice(safeBack(body.back), "moved", moved), 303);
  });

  // the selected images (the account's own) public or private, in one UPDATE; the API's list shows it at once
  web.post("/images/visibility", requireSession, async (c) => {
    const signedIn = c.get("signedIn");
    const { db } = c.get("deps");
    const body = await readForm(c);
    const keys = selectedKeys(body, "change");
    const set = visibilityQuery(body.set);
    if (!set) throw validationError({ set: [t("images.error.chooseVisibility")] });
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
    if (/\p{Cc}/u.test(key)) throw validationError({ key: [t("images.error.keyControl")] });
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
