/**
 * Every image of the site for administrators, /user/admin/images: filter by owner (a user by username or
 * id, or the guests), strategy, upload day, size and visibility; thumbnails with pages; delete one image or a
 * selection (at most SELECT_MAX), each through the admin API's DELETE /api/admin/images/{key} (api.ts), so each one is
 * audited and meets the API delete's guarantees. Without script, a delete asks on a page of its own first.
 */
import { asc, eq, inArray, sql } from "drizzle-orm";
import type { Context, Hono } from "hono";
import { listStrategies } from "../../db/repositories/strategies.ts";
import { images, users } from "../../db/schema.ts";
import { AppError, badRequest, errorStatus, type ErrorCode } from "../../errors.ts";
import { parseDateTime } from "../../http/time.ts";
import { t } from "../i18n/index.ts";
import { type FormFields, readForm } from "../form.ts";
import { SELECT_PREFIX, UtcTime } from "../components/index.ts";
import { ConfirmFooter, FieldError, FormToken, formatBytes, Notice, PerPageField } from "../components/index.ts";
import { requireAdminSession, type SignedIn, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi, type ApiAnswer } from "./api.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";

/** The most images one bulk delete takes. */
const SELECT_MAX = 100;
const PER_PAGE_DEFAULT = 30;
const PER_PAGE_CHOICES = [30, 60, 100];
const LIST = `${ADMIN}/images`;

/** An image as GET /api/admin/images lists it. */
interface AdminImage {
  key: string;
  pathname: string;
  origin_name: string;
  size: number;
  mimetype: string;
  width: number;
  height: number;
  is_public: boolean;
  created_at: string;
  expired_at: string | null;
  user_id: number | null;
  username: string | null;
  strategy_id: number;
  strategy_name: string;
  url: string;
  thumbnail_url: string;
}

interface ImageList {
  images: AdminImage[];
  current_page: number;
  last_page: number;
  per_page: number;
  total: number;
}

/** The form's fields, as sent (kept in every link and form of the page). */
const FILTERS = ["user", "owner", "strategy", "from", "to", "min_kb", "max_kb", "visibility"] as const;
type Filters = Record<(typeof FILTERS)[number], string>;

interface ListState {
  filters: Filters;
  page: number;
  perPage: number;
}

/** page and per_page as the API bounds them; anything else is the default. */
function pageNumbers(perPage: string | undefined, page: string | undefined) {
  const int = (v: string | undefined, min: number, max: number, fallback: number) => {
    const n = v !== undefined && /^\d{1,7}$/.test(v) ? Number(v) : NaN;
    return n >= min && n <= max ? n : fallback;
  };
  return { perPage: int(perPage, 1, 100, PER_PAGE_DEFAULT), page: int(page, 1, 1_000_000, 1) };
}

function listState(query: (name: string) => string | undefined): ListState {
  const filters = Object.fromEntries(FILTERS.map((name) => [name, (query(name) ?? "").trim().slice(0, 200)])) as Filters;
  return { filters, ...pageNumbers(query("per_page"), query("page")) };
}

/** The list's address: only the filters given, in a fixed order. */
function listHref(state: ListState, page = state.page) {
  const params = new URLSearchParams();
  for (const name of FILTERS) if (state.filters[name]) params.set(name, state.filters[name]);
  if (state.perPage !== PER_PAGE_DEFAULT) params.set("per_page", String(state.perPage));
  params.set("page", String(page));
  return `${LIST}?${params}`;
}

/** Where a form sends the browser back to: a page of this list, never anywhere else. */
function safeBack(back: string | undefined) {
  if (back === undefined || /[\\\s#]/.test(back) || !back.startsWith(`${LIST}?`)) return `${LIST}?page=1`;
  return back;
}

/** The address with what happened appended, for the page's fixed notices. */
const withCounts = (href: string, counts: Record<string, number>) => {
  const extra = Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k}=${n}`)
    .join("&");
  return extra ? `${href}&${extra}` : href;
};

/** A key that may name an image: the API's bounds (1–255 characters, no control character). */
const possibleKey = (key: string) => key.length >= 1 && key.length <= 255 && !/\p{Cc}/u.test(key);

/** The user field: a username, or an id (`12` or `#12`); the account's id, or the reason there is none. */
async function resolveUser(c: Context<SignedInEnv>, value: string): Promise<{ id: number } | { error: string }> {
  const { db } = c.get("deps");
  if (value.length > 64) return { error: "Give a username (at most 64 characters) or a user id." };
  const byName = async (exact: boolean) => {
    const [row] = await db
      .select({ id: users.id })
      .from(users)
      .where(exact ? eq(users.username, value) : sql`lower(${users.username}) = lower(${value})`)
      .orderBy(asc(users.id))
      .limit(1);
    return row ?? null;
  };
  const found = (await byName(true)) ?? (await byName(false));
  if (found) return found;
  const digits = /^#?(\d{1,10})$/.exec(value);
  if (digits && Number(digits[1]) >= 1 && Number(digits[1]) <= 2_147_483_647) {
    const [row] = await db
      .select({ id: users.id })
      .from(users)
      .where(eq(users.id, Number(digits[1])))
      .limit(1);
    if (row) return row;
  }
  return { error: `No user is named “${value}”${digits ? " or has that id" : ""}.` };
}

/** The API's field names → the form's. */
const FIELD_OF: Record<string, keyof Filters | "page"> = {
  user_id: "user",
  guests: "owner",
  strategy_id: "strategy",
  from: "from",
  to: "to",
  min_kb: "min_kb",
  max_kb: "max_kb",
  visibility: "visibility",
  page: "page",
  per_page: "page",
};

/** The filters as the API's query, or the form's field errors. */
async function apiQuery(c: Context<SignedInEnv>, state: ListState): Promise<{ query: URLSearchParams } | { errors: Record<string, string> }> {
  const { filters } = state;
  const errors: Record<string, string> = {};
  const query = new URLSearchParams({ page: String(state.page), per_page: String(state.perPage) });
  if (filters.owner && filters.owner !== "guests") errors.owner = "Choose anyone or guests only.";
  if (filters.owner === "guests") {
    if (filters.user) errors.user = "Guests' images have no user: clear the user, or choose anyone as the owner.";
    else query.set("guests", "true");
  }
  if (filters.user && !errors.user) {
    const user = await resolveUser(c, filters.user);
    if ("error" in user) errors.user = user.error;
    else query.set("user_id", String(user.id));
  }
  if (filters.strategy) query.set("strategy_id", filters.strategy);
  for (const name of ["from", "to", "min_kb", "max_kb", "visibility"] as const) if (filters[name]) query.set(name, filters[name]);
  return Object.keys(errors).length ? { errors } : { query };
}

/** An API failure as the page's error (its status and message). */
function apiFailure(answer: ApiAnswer): AppError {
  const code = (Object.entries(errorStatus).find(([, status]) => status === answer.status)?.[0] ?? "internal") as ErrorCode;
  return new AppError(code, answer.message || "The admin API refused.");
}

/** Fixed notices: the query only says how many, never what to print. */
function notices(query: (name: string) => string | undefined) {
  const count = (name: string) => {
    const v = query(name);
    return v !== undefined && /^\d{1,3}$/.test(v) ? Number(v) : 0;
  };
  const imagesOf = (n: number) => (n === 1 ? "1 image" : `${n} images`);
  const shown: string[] = [];
  if (count("deleted")) shown.push(`${imagesOf(count("deleted"))} deleted.`);
  if (count("missing")) shown.push(`${imagesOf(count("missing"))} already gone.`);
  return shown;
}

const ownerLabel = (image: Pick<AdminImage, "user_id" | "username">) => (image.user_id === null ? "a guest" : (image.username ?? `user ${image.user_id}`));

const utc = (text: string | null) => {
  const date = text ? parseDateTime(text) : null;
  return date ? <UtcTime at={date} /> : (text ?? "");
};

function ImageCard({ image, signedIn, back }: { image: AdminImage; signedIn: SignedIn; back: string }) {
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
        <img src={image.thumbnail_url} alt={`${image.origin_name} (opens in a new tab)`} loading="lazy" width={image.width} height={image.height} />
      </a>
      <div class="meta">
        <p class="filename" title={image.origin_name}>
          {image.origin_name}
        </p>
        <p class="muted small">
          {image.width}×{image.height} · {formatBytes(image.size * 1024)} · {utc(image.created_at)}
          {!image.is_public && <span class="badge">private</span>}
          {image.expired_at && <span class="badge">expires {utc(image.expired_at)}</span>}
        </p>
        <p class="muted small">
          By {image.user_id === null ? "a guest" : <a href={`${ADMIN}/users/${image.user_id}`}>{ownerLabel(image)}</a>} · {image.strategy_name} ·{" "}
          <code>{image.key}</code>
        </p>
      </div>
      <div class="buttons">
        <form
          method="post"
          action={`${LIST}/${encodeURIComponent(image.key)}/delete`}
          data-confirm={`Delete ${image.origin_name} of ${ownerLabel(image)}? This cannot be undone.`}
        >
          <FormToken signedIn={signedIn} />
          <input type="hidden" name="confirmed" value="0" />
          <input type="hidden" name="back" value={back} />
          <button type="submit" class="danger" aria-label={`Delete ${image.origin_name}`}>
            Delete
          </button>
        </form>
      </div>
    </li>
  );
}

interface Described {
  key: string;
  originName: string;
  username: string | null;
  userId: number | null;
}

/** The images among `keys` that exist, newest first, with their owners. */
async function describe(c: Context<SignedInEnv>, keys: string[]): Promise<Described[]> {
  if (keys.length === 0) return [];
  return c
    .get("deps")
    .db.select({ key: images.key, originName: images.originName, userId: images.userId, username: users.username })
    .from(images)
    .leftJoin(users, eq(users.id, images.userId))
    .where(inArray(images.key, keys))
    .orderBy(sql`${images.createdAt} desc`, sql`${images.id} desc`);
}

function ConfirmDelete({ signedIn, doomed, action, back, single }: { signedIn: SignedIn; doomed: Described[]; action: string; back: string; single: boolean }) {
  const what = doomed.length === 1 ? "this image" : `these ${doomed.length} images`;
  return (
    <AdminLayout title={doomed.length === 1 ? "Delete an image" : "Delete images"} signedIn={signedIn} section="images">
      <form class="card" method="post" action={action}>
        <p>
          Delete {what}? The files, thumbnails, variants and records are removed at once, and the space is given back to the owners and the strategies; this
          cannot be undone. Each delete is written to the audit log under your name.
        </p>
        <ul class="doomed" aria-label="The images to delete">
          {doomed.map((image) => (
            <li>
              <strong>{image.originName}</strong> <span class="muted">of {image.userId === null ? "a guest" : (image.username ?? `user ${image.userId}`)}</span>{" "}
              <code>{image.key}</code>
              {!single && <input type="hidden" name={`${SELECT_PREFIX}${image.key}`} value="1" />}
            </li>
          ))}
        </ul>
        <ConfirmFooter signedIn={signedIn} label={t("images.delete.count", { count: doomed.length })} back={back} />
      </form>
    </AdminLayout>
  );
}

/** The selected keys of a bulk form: at least one, at most SELECT_MAX (else a 400). */
function selectedKeys(body: FormFields): string[] {
  const keys = Object.keys(body)
    .filter((name) => name.startsWith(SELECT_PREFIX) && body[name] === "1")
    .map((name) => name.slice(SELECT_PREFIX.length))
    .filter(possibleKey);
  if (keys.length === 0) throw badRequest("Select the images to delete first.");
  if (keys.length > SELECT_MAX) throw badRequest(`Delete at most ${SELECT_MAX} images at once.`);
  return keys;
}

async function renderList(c: Context<SignedInEnv>) {
  const signedIn = c.get("signedIn");
  const deps = c.get("deps");
  const query = (name: string) => c.req.query(name);
  const state = listState(query);
  const { filters } = state;
  const strategies = await listStrategies(deps.db);
  const asked = await apiQuery(c, state);
  let errors: Record<string, string> = "errors" in asked ? asked.errors : {};
  let list: ImageList | null = null;
  let failure: string | undefined;
  if ("query" in asked) {
    const answer = await adminApi<ImageList>(c, "GET", `/api/admin/images?${asked.query}`);
    if (answer.ok) list = answer.data;
    else if (answer.status === 422) {
      errors = {};
      for (const [field, messages] of Object.entries(answer.errors)) errors[FIELD_OF[field] ?? "form"] ??= messages[0] ?? "Invalid.";
    } else throw apiFailure(answer);
  }
  if (errors.form || errors.page) failure = errors.form ?? errors.page;
  const back = listHref(state);
  const invalid = (name: keyof Filters) => (errors[name] ? { "aria-invalid": "true" as const, "aria-describedby": `${name}-error` } : {});
  const filtered = FILTERS.some((name) => filters[name]);
  const lastPage = list?.last_page ?? 1;
  return c.html(
    <AdminLayout title="Images" signedIn={signedIn} section="images">
      {notices(query).map((text) => (
        <Notice kind="success">{text}</Notice>
      ))}
      {failure && <Notice kind="error">{failure}</Notice>}
      <form method="get" action={LIST} class="card admin-filters" role="search" aria-label="Find images">
        <fieldset>
          <legend>Owner</legend>
          <div class="field">
            <label for="user">User</label>
            <input
              type="text"
              id="user"
              name="user"
              value={filters.user}
              maxlength={64}
              aria-describedby={errors.user ? "user-hint user-error" : "user-hint"}
              aria-invalid={errors.user ? "true" : undefined}
            />
            <small id="user-hint" class="hint">
              A username or a user id
            </small>
            <FieldError id="user" error={errors.user} />
          </div>
          <div class="field">
            <label for="owner">Uploaded by</label>
            <select id="owner" name="owner" {...invalid("owner")}>
              <option value="" selected={filters.owner !== "guests"}>
                Anyone
              </option>
              <option value="guests" selected={filters.owner === "guests"}>
                Guests only (no account)
              </option>
            </select>
            <FieldError id="owner" error={errors.owner} />
          </div>
        </fieldset>
        <div class="field">
          <label for="strategy">Strategy</label>
          <select id="strategy" name="strategy" {...invalid("strategy")}>
            <option value="" selected={!filters.strategy}>
              All strategies
            </option>
            {strategies.map((s) => (
              <option value={String(s.id)} selected={filters.strategy === String(s.id)}>
                {`${s.name} (#${s.id})`}
              </option>
            ))}
          </select>
          <FieldError id="strategy" error={errors.strategy} />
        </div>
        <fieldset>
          <legend>Uploaded (UTC days, both included)</legend>
          <div class="field">
            <label for="from">From</label>
            <input type="date" id="from" name="from" value={filters.from} {...invalid("from")} />
            <FieldError id="from" error={errors.from} />
          </div>
          <div class="field">
            <label for="to">To</label>
            <input type="date" id="to" name="to" value={filters.to} {...invalid("to")} />
            <FieldError id="to" error={errors.to} />
          </div>
        </fieldset>
        <fieldset>
          <legend>Size in KB (both included)</legend>
          <div class="field">
            <label for="min_kb">At least</label>
            <input type="number" id="min_kb" name="min_kb" min="0" step="1" inputmode="numeric" value={filters.min_kb} {...invalid("min_kb")} />
            <FieldError id="min_kb" error={errors.min_kb} />
          </div>
          <div class="field">
            <label for="max_kb">At most</label>
            <input type="number" id="max_kb" name="max_kb" min="0" step="1" inputmode="numeric" value={filters.max_kb} {...invalid("max_kb")} />
            <FieldError id="max_kb" error={errors.max_kb} />
          </div>
        </fieldset>
        <div class="field">
          <label for="visibility">Visibility</label>
          <select id="visibility" name="visibility" {...invalid("visibility")}>
            <option value="" selected={!filters.visibility}>
              Public and private
            </option>
            <option value="public" selected={filters.visibility === "public"}>
              Public only
            </option>
            <option value="private" selected={filters.visibility === "private"}>
              Private only
            </option>
          </select>
          <FieldError id="visibility" error={errors.visibility} />
        </div>
        <PerPageField choices={PER_PAGE_CHOICES} perPage={state.perPage} />
        <div class="buttons">
          <button type="submit" class="primary">
            Show
          </button>
          {filtered && (
            <a class="button" href={`${LIST}?page=1`}>
              Clear
            </a>
          )}
        </div>
      </form>
      {!list ? (
        <p class="card">Nothing was listed: correct the filters above.</p>
      ) : (
        <>
          <p class="muted" data-testid="total" role="status">
            {list.total === 1 ? "1 image" : `${list.total} images`}, newest first{filtered ? ", filtered" : ""}
          </p>
          {list.images.length === 0 ? (
            <p class="card">
              {list.total > 0 ? (
                <>
                  No images on this page. <a href={listHref(state, 1)}>Back to the first page</a>.
                </>
              ) : (
                "No images match."
              )}
            </p>
          ) : (
            <>
              <form id="bulk" class="card bulk" method="post" action={`${LIST}/delete`}>
                <FormToken signedIn={signedIn} />
                <input type="hidden" name="back" value={back} />
                <input type="hidden" name="confirmed" value="0" />
                <fieldset>
                  <legend>With the selected images (at most {SELECT_MAX})</legend>
                  <div class="bulk-actions">
                    <button type="submit" class="danger">
                      Delete selected…
                    </button>
                  </div>
                </fieldset>
              </form>
              <ul class="grid" aria-label="Images">
                {list.images.map((image) => (
                  <ImageCard image={image} signedIn={signedIn} back={back} />
                ))}
              </ul>
            </>
          )}
          <nav class="pages" aria-label="Pages">
            {state.page > 1 ? (
              <a href={listHref(state, Math.min(state.page - 1, lastPage))} rel="prev">
                ← Previous
              </a>
            ) : (
              <span></span>
            )}
            <span>
              Page {state.page} of {lastPage}
            </span>
            {state.page < lastPage ? (
              <a href={listHref(state, state.page + 1)} rel="next">
                Next →
              </a>
            ) : (
              <span></span>
            )}
          </nav>
        </>
      )}
    </AdminLayout>,
    list ? 200 : 422,
  );
}

/** Deletes each key through the admin API: how many went, how many were gone already, and what failed. */
async function deleteEach(c: Context<SignedInEnv>, keys: string[]) {
  let deleted = 0;
  let missing = 0;
  const failed: { key: string; message: string; status: number }[] = [];
  for (const key of keys) {
    const answer = await adminApi(c, "DELETE", `/api/admin/images/${encodeURIComponent(key)}`);
    if (answer.ok) deleted++;
    else if (answer.status === 404) missing++;
    else failed.push({ key, message: answer.message, status: answer.status });
  }
  return { deleted, missing, failed };
}

function DeleteFailures({
  signedIn,
  deleted,
  failed,
  back,
}: {
  signedIn: SignedIn;
  deleted: number;
  failed: { key: string; message: string }[];
  back: string;
}) {
  return (
    <AdminLayout title="Some images were not deleted" signedIn={signedIn} section="images">
      <Notice kind="error">
        {deleted === 1 ? "1 image was deleted" : `${deleted} images were deleted`}; {failed.length === 1 ? "1 was not" : `${failed.length} were not`}:
      </Notice>
      <ul class="card">
        {failed.map((f) => (
          <li>
            <code>{f.key}</code>: {f.message}
          </li>
        ))}
      </ul>
      <p>
        <a href={back}>Back to the images</a>
      </p>
    </AdminLayout>
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
    if (!possibleKey(key)) throw new AppError("validation", "That is not an image's key.");
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
