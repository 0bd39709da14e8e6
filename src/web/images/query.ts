/**
 * What the Images page reads from its address and its forms: the page, its size and the filters (unknown values are
 * the defaults), the list's address built back from them, where a form may send the browser back to, and the
 * selected images of a bulk action.
 */
import { MOVE_MAX } from "../../db/repositories/albums.ts";
import { IMAGE_SORTS, type ImageSort } from "../../db/repositories/images.ts";
import { badRequest } from "../../errors.ts";
import { SELECT_PREFIX } from "../components/index.ts";
import type { FormFields } from "../form.ts";
import { t } from "../i18n/index.ts";
import { BASE } from "../session.ts";

export const PER_PAGE_DEFAULT = 30;
export const PER_PAGE_CHOICES = [12, 30, 60, 100];
/** The longest search, in characters. */
export const Q_MAX = 100;

/** The API's bounds (per_page 1–100, default 30; page from 1); what is not a number in range falls back to the default. */
export function pageQuery(perPage: string | undefined, page: string | undefined) {
  const int = (v: string | undefined, min: number, max: number, fallback: number) => {
    const n = v !== undefined && /^\d{1,7}$/.test(v) ? Number(v) : NaN;
    return n >= min && n <= max ? n : fallback;
  };
  return { perPage: int(perPage, 1, 100, PER_PAGE_DEFAULT), page: int(page, 1, 1_000_000, 1) };
}

/** The `album` query: an album id, "none" (images in no album) or absent (all: undefined); anything else is all. */
export function albumQuery(value: string | undefined): number | null | undefined {
  if (value === "none") return null;
  const id = value !== undefined && /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  return id >= 1 && id <= 2_147_483_647 ? id : undefined;
}

export const sortQuery = (value: string | undefined): ImageSort => ((IMAGE_SORTS as readonly string[]).includes(value ?? "") ? (value as ImageSort) : "newest");
export type Visibility = "public" | "private";
export const visibilityQuery = (value: string | undefined): Visibility | undefined => (value === "public" || value === "private" ? value : undefined);

/** What the list shows: the page, its size and the filters, as the query says (unknown values are the defaults). */
export interface ListState {
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
  if ([...q].length > Q_MAX) return { q: q.slice(0, 1000), error: t("images.search.tooLong", { max: Q_MAX }) };
  if (/\p{Cc}/u.test(q)) return { q: "", error: t("images.search.control") };
  return { q };
}

export function listState(query: (name: string) => string | undefined): { state: ListState; qError?: string } {
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
export const withNotice = (href: string, name: string, value: string | number) => `${href}${href.includes("?") ? "&" : "?"}${name}=${value}`;

/** The selected keys: at least one, at most MOVE_MAX (a 400 otherwise, whose page leads back to the list). */
export function selectedKeys(body: FormFields, verb: "move" | "change" | "delete"): string[] {
  const keys = Object.keys(body)
    .filter((name) => name.startsWith(SELECT_PREFIX) && body[name] === "1")
    .map((name) => name.slice(SELECT_PREFIX.length))
    .filter((key) => key.length > 0);
  if (keys.length === 0) throw badRequest(t("common.error.noSelection", { verb }));
  if (keys.length > MOVE_MAX) throw badRequest(t("common.error.tooMany", { verb, max: MOVE_MAX }));
  return keys;
}

export const detailHref = (key: string) => `${BASE}/images/${encodeURIComponent(key)}`;
