/**
 * The admin Images list's address and filters: what the form sends (sizes in KB, MB or GB), the list's address built
 * back from it, the API's query (the user field resolved to an account), where a form may send the browser back to,
 * the selected keys of a bulk form, and the deletes through the admin API.
 */
import { asc, eq, inArray, sql } from "drizzle-orm";
import type { Context } from "hono";
import { images, users } from "../../db/schema.ts";
import { AppError, badRequest, type ErrorCode, errorStatus } from "../../errors.ts";
import { SELECT_PREFIX, sizeKbOf } from "../components/index.ts";
import type { FormFields } from "../form.ts";
import { t } from "../i18n/index.ts";
import type { SignedInEnv } from "../session.ts";
import { adminApi, type ApiAnswer } from "./api.ts";
import { ADMIN } from "./layout.tsx";

export const LIST = `${ADMIN}/images`;
/** The most images one bulk delete takes. */
export const SELECT_MAX = 100;
const PER_PAGE_DEFAULT = 30;
export const PER_PAGE_CHOICES = [30, 60, 100];

/** An image as GET /api/admin/images lists it. */
export interface AdminImage {
  key: string;
  origin_name: string;
  /** KB. */
  size: number;
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

export interface ImageList {
  images: AdminImage[];
  last_page: number;
  total: number;
}

/** The form's fields, as sent (kept in every link and form of the page); sizes with their units. */
export const FILTERS = ["user", "owner", "strategy", "visibility", "from", "to", "min_kb", "min_kb_unit", "max_kb", "max_kb_unit"] as const;
export type Filters = Record<(typeof FILTERS)[number], string>;

export interface ListState {
  filters: Filters;
  page: number;
  perPage: number;
}

export function listState(query: (name: string) => string | undefined): ListState {
  const filters = Object.fromEntries(FILTERS.map((name) => [name, (query(name) ?? "").trim().slice(0, 200)])) as Filters;
  // page and per_page as the API bounds them; anything else is the default
  const int = (v: string | undefined, min: number, max: number, fallback: number) => {
    const n = v !== undefined && /^\d{1,7}$/.test(v) ? Number(v) : NaN;
    return n >= min && n <= max ? n : fallback;
  };
  return { filters, perPage: int(query("per_page"), 1, 100, PER_PAGE_DEFAULT), page: int(query("page"), 1, 1_000_000, 1) };
}

/** A size filter's unit only counts beside its number. */
const given = (filters: Filters, name: (typeof FILTERS)[number]) =>
  !!filters[name] && (!name.endsWith("_unit") || (!!filters[name.slice(0, -5) as keyof Filters] && filters[name] !== "KB"));

/** Whether any filter narrows the list. */
export const filtered = (filters: Filters) => FILTERS.some((name) => given(filters, name));

/** The list's address: only the filters given, in a fixed order. */
export function listHref(state: ListState, page = state.page) {
  const params = new URLSearchParams();
  for (const name of FILTERS) if (given(state.filters, name)) params.set(name, state.filters[name]);
  if (state.perPage !== PER_PAGE_DEFAULT) params.set("per_page", String(state.perPage));
  params.set("page", String(page));
  return `${LIST}?${params}`;
}

/** Where a form sends the browser back to: a page of this list, never anywhere else. */
export function safeBack(back: string | undefined) {
  if (back === undefined || /[\\\s#]/.test(back) || !back.startsWith(`${LIST}?`)) return `${LIST}?page=1`;
  return back;
}

/** The address with what happened appended, for the page's fixed notices. */
export const withCounts = (href: string, counts: Record<string, number>) => {
  const extra = Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k}=${n}`)
    .join("&");
  return extra ? `${href}&${extra}` : href;
};

/** A key that may name an image: the API's bounds (1–255 characters, no control character). */
export const possibleKey = (key: string) => key.length >= 1 && key.length <= 255 && !/\p{Cc}/u.test(key);

/** The user field: a username, or an id (`12` or `#12`); the account's id, or the reason there is none. */
async function resolveUser(c: Context<SignedInEnv>, value: string): Promise<{ id: number } | { error: string }> {
  const { db } = c.get("deps");
  if (value.length > 64) return { error: t("admin.images.error.userLength") };
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
  return { error: t("admin.images.error.noUser", { name: value, id: digits ? "yes" : "no" }) };
}

/** The API's field names → the form's. */
export const FIELD_OF: Record<string, keyof Filters | "page"> = {
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

/** The filters as the API's query (sizes in KB), or the form's field errors. */
export async function apiQuery(c: Context<SignedInEnv>, state: ListState): Promise<{ query: URLSearchParams } | { errors: Record<string, string> }> {
  const { filters } = state;
  const errors: Record<string, string> = {};
  const query = new URLSearchParams({ page: String(state.page), per_page: String(state.perPage) });
  if (filters.owner && filters.owner !== "guests") errors.owner = t("admin.images.error.owner");
  if (filters.owner === "guests") {
    if (filters.user) errors.user = t("admin.images.error.guestsAndUser");
    else query.set("guests", "true");
  }
  if (filters.user && !errors.user) {
    const user = await resolveUser(c, filters.user);
    if ("error" in user) errors.user = user.error;
    else query.set("user_id", String(user.id));
  }
  if (filters.strategy) query.set("strategy_id", filters.strategy);
  for (const name of ["from", "to", "visibility"] as const) if (filters[name]) query.set(name, filters[name]);
  for (const name of ["min_kb", "max_kb"] as const) {
    const kb = sizeKbOf(filters, name);
    if (kb !== null) query.set(name, String(kb));
  }
  return Object.keys(errors).length ? { errors } : { query };
}

/** An API failure as the page's error (its status and message). */
export function apiFailure(answer: ApiAnswer): AppError {
  const code = (Object.entries(errorStatus).find(([, status]) => status === answer.status)?.[0] ?? "internal") as ErrorCode;
  return new AppError(code, answer.message || t("admin.apiRefused"));
}

/** The selected keys of a bulk form: at least one, at most SELECT_MAX (else a 400, whose page leads back). */
export function selectedKeys(body: FormFields): string[] {
  const keys = Object.keys(body)
    .filter((name) => name.startsWith(SELECT_PREFIX) && body[name] === "1")
    .map((name) => name.slice(SELECT_PREFIX.length))
    .filter(possibleKey);
  if (keys.length === 0) throw badRequest(t("common.error.noSelection", { verb: "delete" }));
  if (keys.length > SELECT_MAX) throw badRequest(t("common.error.tooMany", { verb: "delete", max: SELECT_MAX }));
  return keys;
}

export interface Described {
  key: string;
  originName: string;
  username: string | null;
  userId: number | null;
}

/** The images among `keys` that exist, newest first, with their owners. */
export async function describe(c: Context<SignedInEnv>, keys: string[]): Promise<Described[]> {
  if (keys.length === 0) return [];
  return c
    .get("deps")
    .db.select({ key: images.key, originName: images.originName, userId: images.userId, username: users.username })
    .from(images)
    .leftJoin(users, eq(users.id, images.userId))
    .where(inArray(images.key, keys))
    .orderBy(sql`${images.createdAt} desc`, sql`${images.id} desc`);
}

/** Deletes each key through the admin API: how many went, how many were gone already, and what failed. */
export async function deleteEach(c: Context<SignedInEnv>, keys: string[]) {
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
