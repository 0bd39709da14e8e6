/**
 * The pages' static files. Each is served at /user/assets/<name> with a version in its address (a hash of its body),
 * so that browsers keep it a day and a new release is fetched at once. Every file made here is served (index.ts).
 */
import { readFileSync } from "node:fs";
import { LOCALES, type Locale, makeView, withView } from "../i18n/index.ts";
import { BASE } from "../session.ts";

export interface Asset {
  name: string;
  body: string;
  href: string;
  type: string;
}

const made = new Map<string, Asset>();

export function asset(name: string, body: string): Asset {
  const version = new Bun.CryptoHasher("sha256").update(body).digest("hex").slice(0, 12);
  const type = name.endsWith(".css") ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8";
  const file = { name, body, href: `${BASE}/assets/${name}?v=${version}`, type };
  made.set(name, file);
  return file;
}

/** A file of src/web/assets/ (or below), served under its name there. */
export const assetFile = (name: string) => asset(name, readFileSync(new URL(`../assets/${name}`, import.meta.url), "utf8"));

export const allAssets = () => [...made.values()];

/**
 * A script of src/web/assets/ in each language: `<base>.<locale>.js`, its words first (`self[global]`, made by
 * `words` in that language; `{name}`-style holes are filled in by the script), then the file. One cached file per
 * language, so that no page carries a script's words inline.
 */
export function scriptInLanguages(file: string, global: string, words: () => Record<string, string>): Record<Locale, Asset> {
  const body = readFileSync(new URL(`../assets/${file}`, import.meta.url), "utf8");
  const base = file.replace(/\.js$/, "");
  return Object.fromEntries(
    LOCALES.map((l) => [l, withView(makeView(l), () => asset(`${base}.${l}.js`, `"use strict";\nself.${global} = ${JSON.stringify(words())};\n${body}`))]),
  ) as Record<Locale, Asset>;
}
