/**
 * Every image of the site for administrators, /user/admin/images: filter by owner (a user by username or id, or the
 * guests), strategy, visibility, upload day and size (in KB, MB or GB); the shared image cards with pages; delete one
 * image or a selection (at most SELECT_MAX), each through the admin API's DELETE /api/admin/images/{key} (api.ts), so
 * each one is audited and meets the API delete's guarantees. Without script, a delete asks on a page of its own first.
 */
import type { Context, Hono } from "hono";
import { listStrategies } from "../../db/repositories/strategies.ts";
import { AppError } from "../../errors.ts";
import { ImageGrid, Notice, Pager } from "../components/index.ts";
import { readForm } from "../form.ts";
import { rich, t } from "../i18n/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi } from "./api.ts";
import { AdminImageCard, BulkDelete, ConfirmDelete, DeleteFailures, FilterForm, ListNotices } from "./image-list.tsx";
import {
  apiFailure,
  apiQuery,
  deleteEach,
  describe,
  FIELD_OF,
  filtered,
  type ImageList,
  LIST,
  listHref,
  listState,
  possibleKey,
  safeBack,
  selectedKeys,
  withCounts,
} from "./image-query.ts";
import { AdminLayout } from "./layout.tsx";

async function renderList(c: Context<SignedInEnv>) {
  const signedIn = c.get("signedIn");
  const query = (name: string) => c.req.query(name);
  const state = listState(query);
  const strategies = await listStrategies(c.get("deps").db);
  const asked = await apiQuery(c, state);
  let errors: Record<string, string> = "errors" in asked ? asked.errors : {};
  let list: ImageList | null = null;
  if ("query" in asked) {
    const answer = await adminApi<ImageList>(c, "GET", `/api/admin/images?${asked.query}`);
    if (answer.ok) list = answer.data;
    else if (answer.status === 422) {
      errors = {};
      for (const [field, messages] of Object.entries(answer.errors)) errors[FIELD_OF[field] ?? "form"] ??= messages[0] ?? t("admin.invalid");
    } else throw apiFailure(answer);
  }
  const failure = errors.form ?? errors.page;
  const back = listHref(state);
  const lastPage = list?.last_page ?? 1;
  return c.html(
    <AdminLayout title={t("admin.images.title")} signedIn={signedIn} section="images">
      <ListNotices query={query} />
      {failure && <Notice kind="error">{failure}</Notice>}
      <FilterForm state={state} strategies={strategies} errors={errors} clear={filtered(state.filters)} />
      {!list ? (
        <p class="card">{t("admin.images.nothingListed")}</p>
      ) : (
        <>
          <p class="muted" data-testid="total" role="status">
            {t("admin.images.total", { count: list.total, filtered: filtered(state.filters) ? "yes" : "no" })}
          </p>
          {list.images.length === 0 ? (
            <p class="card">
              {list.total > 0 ? rich("admin.images.noneOnPage", { a: (chunks) => <a href={listHref(state, 1)}>{chunks}</a> }) : t("admin.images.noneMatch")}
            </p>
          ) : (
            <>
              <BulkDelete signedIn={signedIn} back={back} />
              <ImageGrid label={t("admin.images.grid")}>
                {list.images.map((image) => (
                  <AdminImageCard image={image} signedIn={signedIn} back={back} />
                ))}
              </ImageGrid>
            </>
          )}
          {lastPage > 1 && <Pager page={state.page} lastPage={lastPage} href={(p) => listHref(state, p)} label={t("admin.images.pages")} />}
        </>
      )}
    </AdminLayout>,
    list ? 200 : 422,
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/images", requireAdminSession, renderList);

  // the selected images, each through DELETE /api/admin/images/{key}; unconfirmed (no script), it asks first
  web.post("/admin/images/delete", requireAdminSession, async (c) => {
    const signedIn = c.get("signedIn");
    const body = await readForm(c);
    const keys = selectedKeys(body);
    const back = safeBack(body.back);
    if (body.confirmed !== "1") {
      const doomed = await describe(c, keys);
      if (doomed.length === 0) return c.redirect(withCounts(back, { missing: keys.length }), 303);
      return c.html(<ConfirmDelete signedIn={signedIn} doomed={doomed} action={`${LIST}/delete`} back={back} single={false} />);
    }
    const { deleted, missing, failed } = await deleteEach(c, keys);
    if (failed.length) {
      const status = (failed.every((f) => f.status >= 400 && f.status < 500) ? failed[0]!.status : 500) as 400 | 500;
      return c.html(<DeleteFailures signedIn={signedIn} deleted={deleted} failed={failed} back={back} />, status);
    }
    return c.redirect(withCounts(back, { deleted, missing }), 303);
  });

  // one image through DELETE /api/admin/images/{key}; unconfirmed (no script), it asks first
  web.post("/admin/images/:key/delete", requireAdminSession, async (c) => {
    const signedIn = c.get("signedIn");
    const key = c.req.param("key");
    if (!possibleKey(key)) throw new AppError("validation", t("admin.images.error.notKey"));
    const body = await readForm(c);
    const back = safeBack(body.back);
    const action = `${LIST}/${encodeURIComponent(key)}/delete`;
    if (body.confirmed !== "1") {
      const doomed = await describe(c, [key]);
      if (doomed.length === 0) return c.redirect(withCounts(back, { missing: 1 }), 303);
      return c.html(<ConfirmDelete signedIn={signedIn} doomed={doomed} action={action} back={back} single={true} />);
    }
    const answer = await adminApi(c, "DELETE", `/api/admin/images/${encodeURIComponent(key)}`);
    if (answer.status === 404) return c.redirect(withCounts(back, { missing: 1 }), 303);
    if (!answer.ok) throw apiFailure(answer);
    return c.redirect(withCounts(back, { deleted: 1 }), 303);
  });
}
