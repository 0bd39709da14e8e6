/**
 * What the admin forms share: reading record ids and page numbers of an address, numbers of a form for the API,
 * and the API's refusals as the form's errors (field by field, or for the whole form).
 */
import { notFound } from "../../errors.ts";
import { type MessageKey, t } from "../i18n/index.ts";
import type { ApiAnswer } from "./api.ts";

/** A record id of a path: digits only, in PostgreSQL's integer range; anything else is no such record. */
export function recordIdOf(value: string, what: "group" | "strategy" | "user"): number {
  const id = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  if (!(id >= 1 && id <= 2_147_483_647)) throw notFound(t("admin.noSuch", { what }));
  return id;
}

/** A page number of a query: 1 for anything that is not one. */
export const pageOf = (value: string | undefined) => (value && /^\d{1,6}$/.test(value) && Number(value) >= 1 ? Number(value) : 1);

/**
 * A number field of a form, for the API: a whole number as a number, an empty field as `empty` (null for a nullable
 * limit), anything else as sent, so that the API refuses it with its own message.
 */
export function numberOf(raw: string, empty: null | undefined): number | string | null | undefined {
  const value = raw.trim();
  if (value === "") return empty;
  return /^-?\d{1,16}$/.test(value) ? Number(value) : value;
}

export interface Shown {
  /** The form's values as text, by field name (check boxes: "1" when checked). */
  values: Record<string, string>;
  errors: { fields: Record<string, string>; form?: string };
}

export const NOTHING_SHOWN = (values: Record<string, string> = {}): Shown => ({ values, errors: { fields: {} } });

/**
 * The API's field errors by form field: `config.bucket` → `bucket` (with `prefix`), `allowed_extensions.0` →
 * `allowed_extensions`; errors of no field of the form, and the message of any other refusal, for the whole form.
 * `own` gives a field's error in the form's words (a field in other units than the API's: its message would speak of
 * the API's units).
 */
export function errorsOf(answer: ApiAnswer, known: readonly string[], prefix = "", own: Record<string, () => string> = {}): Shown["errors"] {
  const fields: Record<string, string> = {};
  const others: string[] = [];
  for (const [key, messages] of Object.entries(answer.errors)) {
    const path = prefix && key.startsWith(prefix) ? key.slice(prefix.length) : key;
    const field = path.split(".")[0]!;
    const message = own[field]?.() ?? messages[0] ?? t("admin.invalid");
    if (known.includes(field)) fields[field] ??= message;
    else others.push(message);
  }
  const form = others.length ? others.join(" ") : Object.keys(fields).length ? undefined : answer.message;
  return { fields, form };
}

export type FormStatus = 200 | 400 | 404 | 415 | 422;
export const statusOf = (answer: ApiAnswer): FormStatus => ([400, 404, 415, 422].includes(answer.status) ? (answer.status as FormStatus) : 422);

/** A message key of the catalogs, for tables of labels. */
export const tk = (key: string) => t(key as MessageKey);
