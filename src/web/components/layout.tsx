/**
 * The frame of every page: the site's name and mark, the navigation (a menu on a phone, no script needed), the
 * account menu (theme, language, sign out), the page's title and the footer. Language, theme and site come from the
 * request's view (i18n/index.ts); docs/decisions/pages-design-system.md.
 */
import type { PropsWithChildren } from "hono/jsx";
import { raw } from "hono/html";
import { LOCALE_NAMES, LOCALES, type MessageKey, t, view } from "../i18n/index.ts";
import { BASE, type SignedIn } from "../session.ts";
import { assetFile, scriptInLanguages } from "./assets.ts";
import { FormToken } from "./form.tsx";

/** The holes of the shared script's words, filled in by app.js. */
const NAME = { name: "{name}" };

export const assets = {
  css: assetFile("style.css"),
  /** app.js with its words, in each language */
  app: scriptInLanguages("app.js", "pageWords", () => ({
    copied: t("common.js.copied"),
    selected: t("common.js.selected"),
    copiedName: t("common.js.copiedName", NAME),
    copiedAndSelected: t("common.js.copiedAndSelected", NAME),
    copyRefused: t("common.js.copyRefused", NAME),
    text: t("common.js.text"),
  })),
};

export type Section = "dashboard" | "images" | "albums" | "upload" | "tokens" | "integrations" | "webhooks" | "account" | "admin";

const SECTIONS: { id: Section; href: string }[] = [
  { id: "dashboard", href: `${BASE}/dashboard` },
  { id: "images", href: `${BASE}/images` },
  { id: "albums", href: `${BASE}/albums` },
  { id: "upload", href: `${BASE}/upload` },
  { id: "tokens", href: `${BASE}/tokens` },
  { id: "integrations", href: `${BASE}/integrations` },
  { id: "webhooks", href: `${BASE}/webhooks` },
  { id: "account", href: `${BASE}/account` },
];

interface LayoutProps {
  title: string;
  signedIn?: SignedIn;
  active?: Section;
  /** Scripts of this page beyond the shared one. */
  scripts?: string[];
}

function NavList({ signedIn, active }: { signedIn: SignedIn; active?: Section }) {
  const items = [...SECTIONS, ...(signedIn.user.role === "admin" ? [{ id: "admin" as const, href: `${BASE}/admin` }] : [])];
  return (
    <ul>
      {items.map((s) => (
        <li>
          <a href={s.href} aria-current={s.id === active ? "page" : undefined}>
            {t(`common.nav.${s.id}` as MessageKey)}
          </a>
        </li>
      ))}
    </ul>
  );
}

/**
 * The account menu: who is signed in; a dark-mode switch and the other language, both remembered; sign out. One form,
 * one form token (the pages' scripts read it from here). The full choices, "as the device" and "as the browser says",
 * are on the account page. With the theme as the device, app.js sets the switch from the device's scheme.
 */
// biome-ignore-start lint/a11y/useButtonType: HTML's default, submit, is what these buttons do (the type would be bytes in every page)
function AccountMenu({ signedIn }: { signedIn: SignedIn }) {
  const v = view();
  const dark = v.theme === "dark";
  return (
    <details class="menu">
      <summary>{signedIn.user.username}</summary>
      <form method="post" action={`${BASE}/preferences`}>
        <FormToken signedIn={signedIn} />
        <button name="theme" value={dark ? "light" : "dark"} aria-pressed={String(dark)}>
          {t("common.menu.dark")}
        </button>
        {LOCALES.filter((l) => l !== v.locale).map((l) => (
          <button name="locale" value={l} lang={l}>
            {LOCALE_NAMES[l]}
          </button>
        ))}
        <button formaction={`${BASE}/logout`}>{t("common.signOut")}</button>
      </form>
    </details>
  );
}
// biome-ignore-end lint/a11y/useButtonType: the account menu's buttons

export function Layout({ title, signedIn, active, scripts = [], children }: PropsWithChildren<LayoutProps>) {
  const v = view();
  const { site } = v;
  return (
    <>
      {raw("<!DOCTYPE html>")}
      <html lang={v.locale} data-theme={v.theme === "system" ? undefined : v.theme}>
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{`${title} · ${site.name}`}</title>
          <link rel="icon" href={site.favicon} />
          <link rel="stylesheet" href={assets.css.href} />
          {site.accentCss && <link rel="stylesheet" href={site.accentCss} />}
          <script src={assets.app[v.locale].href} defer></script>
          {scripts.map((src) => (
            <script src={src} defer></script>
          ))}
        </head>
        <body>
          <a class="skip" href="#main">
            {t("common.skip")}
          </a>
          <header class="top">
            <a class="brand" href={signedIn ? `${BASE}/dashboard` : `${BASE}/login`}>
              {site.logo && <img src={site.logo} alt="" height="28" />}
              {site.name}
            </a>
            {signedIn && (
              <>
                {/* one list: a row on a wide screen (the stylesheet shows the menu's content), a menu on a phone */}
                <details class="nav">
                  <summary>{t("common.nav.menu")}</summary>
                  <nav aria-label={t("common.nav.label")}>
                    <NavList signedIn={signedIn} active={active} />
                  </nav>
                </details>
                <AccountMenu signedIn={signedIn} />
              </>
            )}
          </header>
          <main id="main">
            <h1>{title}</h1>
            {children}
          </main>
          <footer>
            <a href="/docs">{t("common.footer.api")}</a>
          </footer>
          <div id="announcer" class="visually-hidden" role="status" aria-live="polite"></div>
        </body>
      </html>
    </>
  );
}
