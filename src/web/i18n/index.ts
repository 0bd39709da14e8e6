/**
 * The pages' languages (docs/decisions/pages-design-system.md): ICU messages from the catalogs under messages/,
 * formatted by formatjs (`@formatjs/intl`), with the request's locale, site and theme in a per-request view that
 * components read with `view()`, `t()` and `rich()`. The API's messages are not translated.
 *
 * Which language a visitor sees: the account's own choice (users.locale), else the browser's Accept-Language, else
 * the site's default (settings.default_locale).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createIntl, createIntlCache, type IntlShape } from "@formatjs/intl";
import type { Child } from "hono/jsx";
import { IntlMessageFormat } from "intl-messageformat";
import { en, type MessageKey } from "./messages/en/index.ts";
import { zhCN } from "./messages/zh-CN/index.ts";

export type { MessageKey } from "./messages/en/index.ts";

export const LOCALES = ["en", "zh-CN"] as const;
export type Locale = (typeof LOCALES)[number];
export const DEFAULT_LOCALE: Locale = "en";
/** Each language's name in itself, for the language choice. */
export const LOCALE_NAMES: Record<Locale, string> = { en: "English", "zh-CN": "简体中文" };
export const catalogs: Record<Locale, Record<MessageKey, string>> = { en, "zh-CN": zhCN };

export const isLocale = (value: unknown): value is Locale => typeof value === "string" && (LOCALES as readonly string[]).includes(value);

const cache = createIntlCache();
const intls = new Map<Locale, IntlShape<Child>>();
/** One formatter per language for the life of the process: the catalogs do not change. */
export function intlFor(locale: Locale): IntlShape<Child> {
  let intl = intls.get(locale);
  if (!intl) {
    intl = createIntl<Child>(
      {
        locale,
        defaultLocale: DEFAULT_LOCALE,
        messages: catalogs[locale],
        // a key missing in a catalog shows its English text (the catalog test fails on it); nothing is logged per request
        onError: () => {},
      },
      cache,
    );
    intls.set(locale, intl);
  }
  return intl;
}

/** A language tag of Accept-Language as one of ours: any Chinese is zh-CN (the one Chinese catalog), any English en. */
function ours(tag: string): Locale | null {
  const t = tag.trim().toLowerCase();
  if (t === "zh" || t.startsWith("zh-")) return "zh-CN";
  if (t === "en" || t.startsWith("en-")) return "en";
  return null;
}

/** The best of ours in an Accept-Language header (by q, then order), or null. */
export function fromAcceptLanguage(header: string | undefined): Locale | null {
  if (!header) return null;
  const ranked = header
    .split(",")
    .slice(0, 20)
    .map((part, i) => {
      const [tag = "", ...params] = part.split(";");
      const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find(Boolean);
      return { tag, q: q === undefined ? 1 : Number(q), i };
    })
    .filter((r) => r.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  for (const r of ranked) {
    const found = ours(r.tag);
    if (found) return found;
  }
  return null;
}

/** The account's choice, else the browser's, else the site's. */
export function negotiate(account: string | null | undefined, acceptLanguage: string | undefined, siteDefault: string | undefined): Locale {
  if (isLocale(account)) return account;
  return fromAcceptLanguage(acceptLanguage) ?? (isLocale(siteDefault) ? siteDefault : DEFAULT_LOCALE);
}

export type Theme = "light" | "dark" | "system";
export const THEMES: readonly Theme[] = ["system", "light", "dark"];

/** What the site shows of itself (web/site.ts builds it from the settings). */
export interface Site {
  name: string;
  /** The logo's address, null for the default mark. */
  logo: string | null;
  favicon: string;
  /** The stylesheet of the accent colour, null for the default. */
  accentCss: string | null;
  defaultLocale: Locale;
}

export const DEFAULT_SITE: Site = { name: "Picshelf", logo: null, favicon: "/favicon.svg", accentCss: null, defaultLocale: DEFAULT_LOCALE };

/** The request's view: its language (and formatter), the site, the theme. */
export interface View {
  locale: Locale;
  intl: IntlShape<Child>;
  site: Site;
  theme: Theme;
  /** The Accept-Language the request sent, to negotiate again once the account is known. */
  acceptLanguage?: string;
}

const store = new AsyncLocalStorage<View>();

export const makeView = (locale: Locale, site: Site = DEFAULT_SITE, theme: Theme = "system", acceptLanguage?: string): View => ({
  locale,
  intl: intlFor(locale),
  site,
  theme,
  acceptLanguage,
});

/** Runs `fn` (the rest of the request) with this view. */
export const withView = <T>(view: View, fn: () => T): T => store.run(view, fn);

/** The current request's view; outside a request, English and the default site. */
export const view = (): View => store.getStore() ?? makeView(DEFAULT_LOCALE);

/** Once the account is known (session.ts): its own language choice wins. */
export function useAccountLocale(locale: string | null | undefined) {
  const v = store.getStore();
  if (!v) return;
  const chosen = negotiate(locale, v.acceptLanguage, v.site.defaultLocale);
  if (chosen !== v.locale) Object.assign(v, { locale: chosen, intl: intlFor(chosen) });
}

type Values = Record<string, string | number | Date | null | undefined>;

/**
 * Each message compiled once per language and kept: a message without ICU syntax is its own text, one of text and
 * `{name}` holes its pieces, the others (plurals, selects, tags) IntlMessageFormat instances (formatjs's formatter,
 * which @formatjs/intl uses too). The pages format hundreds of messages a request, and intl.formatMessage looks its
 * formatter up by serializing its arguments (the formats included) on every call: 3–12 µs a message, against
 * well under one here.
 */
/** The Intl formatters the compiled messages use, kept by language and options (few of either). */
function kept<T, O>(make: (locale: string, options?: O) => T) {
  const made = new Map<string, T>();
  return (locales: string | string[], options?: O): T => {
    const id = `${locales} ${options ? JSON.stringify(options) : ""}`;
    let f = made.get(id);
    if (f === undefined) made.set(id, (f = make(String(locales), options)));
    return f;
  };
}
const formatters = {
  getNumberFormat: kept((l, o?: Intl.NumberFormatOptions) => new Intl.NumberFormat(l, o)),
  getDateTimeFormat: kept((l, o?: Intl.DateTimeFormatOptions) => new Intl.DateTimeFormat(l, o)),
  getPluralRules: kept((l, o?: Intl.PluralRulesOptions) => new Intl.PluralRules(l, o)),
};

/** A message made only of text and `{name}` holes, kept as its pieces: formatting it is a join. */
type Pieces = (string | { hole: string })[];
type Compiled = string | Pieces | IntlMessageFormat;

const compiledByLocale = new Map<Locale, Map<string, Compiled>>(LOCALES.map((l) => [l, new Map()]));

function compile(locale: Locale, text: string): Compiled {
  if (!/[{<]|''/.test(text)) return text;
  const message = new IntlMessageFormat(text, locale, undefined, { formatters: formatters as never });
  const ast = message.getAst();
  // plural, select, number, tags: the library formats them (0 and 1 are the parser's TYPE.literal and TYPE.argument)
  if (!ast.every((el) => el.type === 0 || el.type === 1)) return message;
  return ast.map((el) => {
    const { value } = el as { value: string };
    return el.type === 0 ? value : { hole: value };
  });
}

function compiledOf(locale: Locale, key: MessageKey): Compiled {
  const kept = compiledByLocale.get(locale)!;
  let message = kept.get(key);
  if (message === undefined) {
    // a key missing in a catalog shows its English text (the catalog test fails on it)
    message = compile(locale, catalogs[locale][key] ?? catalogs.en[key] ?? key);
    kept.set(key, message);
  }
  return message;
}

/** Pieces with their holes filled: text, or (an element among the values) the parts in order. */
function fill(pieces: Pieces, values: Record<string, unknown> | undefined): unknown {
  const parts: unknown[] = [];
  let text = true;
  for (const piece of pieces) {
    if (typeof piece === "string") {
      parts.push(piece);
      continue;
    }
    const value = values?.[piece.hole];
    if (value === undefined) throw new Error(`no value for {${piece.hole}}`);
    if (typeof value === "string" || typeof value === "number") parts.push(String(value));
    else if (value === null) parts.push("");
    else {
      text = false;
      parts.push(value);
    }
  }
  return text ? parts.join("") : parts;
}

function format(key: MessageKey, values: Record<string, unknown> | undefined): unknown {
  const { locale } = view();
  const message = compiledOf(locale, key);
  if (typeof message === "string") return message;
  try {
    return Array.isArray(message) ? fill(message, values) : message.format(values as never);
  } catch {
    // a value missing: the message as written, as formatjs does; nothing is logged per request
    return catalogs[locale][key] ?? key;
  }
}

/** A message as text. */
export function t(key: MessageKey, values?: Values): string {
  const out = format(key, values);
  return Array.isArray(out) ? out.join("") : (out as string);
}

/** A message with markup: `<b>…</b>`-style tags in it are given as functions, other values may be elements. */
export function rich(key: MessageKey, values: Record<string, Child | ((chunks: Child[]) => Child)>): Child {
  return format(key, values) as Child;
}

/** A number in the locale. */
export const num = (n: number, options?: Intl.NumberFormatOptions): string => formatters.getNumberFormat(view().locale, options).format(n);
