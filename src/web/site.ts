/**
 * The site's identity in the pages: name, logo, favicon and accent colour from the settings (the admin API keeps
 * them, src/http/site-identity.ts), served from this host only. The accent is a small stylesheet of its own (the
 * pages' policy allows no inline style), its shades adjusted so that text in it stays readable (WCAG AA, 4.5:1)
 * on the light and the dark background.
 */
import type { Hono } from "hono";
import type { Settings } from "../db/repositories/settings.ts";
import { parseSiteImage, SITE_IMAGE_MAX, type SiteImage } from "../http/site-identity.ts";
import { DEFAULT_SITE, isLocale, type Site } from "./i18n/index.ts";
import { BASE, type WebEnv } from "./session.ts";

const version = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("hex").slice(0, 12);

// ---- colour ---------------------------------------------------------------------------------------------------

type Rgb = [number, number, number];
const rgbOf = (hex: string): Rgb => [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)) as Rgb;
const hexOf = (c: Rgb) =>
  `#${c
    .map((v) =>
      Math.round(Math.max(0, Math.min(255, v)))
        .toString(16)
        .padStart(2, "0"),
    )
    .join("")}`;
const luminance = ([r, g, b]: Rgb) => {
  const lin = (v: number) => {
    const s = v / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
};
const contrast = (a: Rgb, b: Rgb) => {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p) as [number, number];
  return (x + 0.05) / (y + 0.05);
};
/** The colour moved towards `to` until it reads at 4.5:1 on `bg` (or reaches `to`). */
function readable(c: Rgb, bg: Rgb, to: Rgb): Rgb {
  for (let step = 0; step <= 20; step++) {
    const mixed = c.map((v, i) => v + ((to[i]! - v) * step) / 20) as Rgb;
    if (contrast(mixed, bg) >= 4.6) return mixed;
  }
  return to;
}
const LIGHT_BG: Rgb = [0xf6, 0xf7, 0xf9];
const LIGHT_CARD: Rgb = [0xff, 0xff, 0xff];
const DARK_BG: Rgb = [0x15, 0x18, 0x1c];

/** The accent stylesheet: the colour for light and dark, each readable on its background, and the text on it. */
export function accentStylesheet(hex: string): string {
  const base = rgbOf(hex);
  const light = readable(readable(base, LIGHT_BG, [0, 0, 0]), LIGHT_CARD, [0, 0, 0]);
  const dark = readable(base, DARK_BG, [255, 255, 255]);
  const on = (c: Rgb) => (contrast(c, [255, 255, 255]) >= contrast(c, [0, 0, 0]) ? "#ffffff" : "#000000");
  const l = `--accent: ${hexOf(light)}; --accent-fg: ${on(light)};`;
  const d = `--accent: ${hexOf(dark)}; --accent-fg: ${on(dark)};`;
  return `:root { ${l} }\n:root[data-theme="dark"] { ${d} }\n@media (prefers-color-scheme: dark) { :root:not([data-theme="light"]) { ${d} } }\n`;
}

// ---- the identity -------------------------------------------------------------------------------------------------

interface Identity {
  site: Site;
  logo: SiteImage | null;
  favicon: SiteImage | null;
  accent: string | null;
}

const built = new WeakMap<Settings, Identity>();
let last: Identity = { site: DEFAULT_SITE, logo: null, favicon: null, accent: null };

const image = (value: string | null, max: number) => {
  if (!value) return null;
  const parsed = parseSiteImage(value, max);
  return "error" in parsed ? null : parsed;
};

/** The identity the settings describe (built once per settings row read; the lookup cache keeps that row a second). */
export function identityOf(settings: Settings): Identity {
  let found = built.get(settings);
  if (found) return found;
  const logo = image(settings.siteLogo, SITE_IMAGE_MAX.logo);
  const favicon = image(settings.siteFavicon, SITE_IMAGE_MAX.favicon);
  const accent = /^#[0-9a-fA-F]{6}$/.test(settings.accentColor) ? accentStylesheet(settings.accentColor) : null;
  found = {
    site: {
      name: settings.siteName.trim() || DEFAULT_SITE.name,
      logo: logo ? `${BASE}/site/logo?v=${version(settings.siteLogo!)}` : null,
      favicon: favicon ? `${BASE}/site/favicon?v=${version(settings.siteFavicon!)}` : DEFAULT_SITE.favicon,
      accentCss: accent ? `${BASE}/site/accent.css?v=${version(accent)}` : null,
      defaultLocale: isLocale(settings.defaultLocale) ? settings.defaultLocale : DEFAULT_SITE.defaultLocale,
    },
    logo,
    favicon,
    accent,
  };
  built.set(settings, found);
  last = found;
  return found;
}

/** The logo, favicon and accent stylesheet, as the last settings read describe them. */
export function register(web: Hono<WebEnv>) {
  const cached = { "cache-control": "public, max-age=86400" };
  const image = (found: SiteImage | null) =>
    found ? new Response(found.bytes as Uint8Array<ArrayBuffer>, { headers: { "content-type": found.mime, ...cached } }) : null;
  web.get("/site/logo", (c) => image(last.logo) ?? c.notFound());
  web.get("/site/favicon", (c) => image(last.favicon) ?? c.notFound());
  web.get("/site/accent.css", (c) => (last.accent ? c.body(last.accent, 200, { "content-type": "text/css; charset=utf-8", ...cached }) : c.notFound()));
}
