/**
 * The pages' static files. Each is served at /user/assets/<name> with a version in its address (a hash of its body),
 * so that browsers keep it a day and a new release is fetched at once. Every file made here is served (index.ts).
 */
import { readFileSync } from "node:fs";
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
