/**
 * The frame of every page: the site's name and mark, the navigation (a menu on a phone, no script needed), the
 * account menu (theme, language, sign out), the page's title and the footer. Language, theme and site come from the
 * request's view (i18n/index.ts); docs/decisions/pages-design-system.md.
 */
import { readFileSync } from "node:fs";
import type { PropsWithChildren } from "hono/jsx";
import { raw } from "hono/html";
import { type MessageKey, t, view } from "../i18n/index.ts";
import { BASE, type SignedIn } from "../session.ts";
import { FormToken } from "./form.tsx";
import { PreferenceFields } from "./preferences.tsx";

/** The static files of the pages, with a version in their address so that browsers may keep them. */
const asset = (name: string) => {
  const body = readFileSync(new URL(`../assets/${name}`, import.meta.url), "utf8");
  const version = new Bun.CryptoHasher("sha256").update(body).digest("hex").slice(0, 12);
  return { name, body, href: `${BASE}/assets/${name}?v=${version}` };
};
export const assets = {
  css: asset("style.css"),
  app: asset("app.js"),
  upload: asset("upload.js"),
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
  /** Where the page was asked from: the preferences form comes back here. */
  here?: string;
}

/** The default mark: a framed picture in the accent colour, drawn by the stylesheet (cached, not in every page). */
const Mark = () => <span class="mark" aria-hidden="true"></span>;

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

/** The account menu: who is signed in, the theme and the language (saved), and sign out. */
function AccountMenu({ signedIn, here }: { signedIn: SignedIn; here: string }) {
  return (
    <details class="menu account-menu">
      <summary>
        <span class="who">{signedIn.user.username}</span>
      </summary>
      <div class="menu-panel">
        <form method="post" action={`${BASE}/preferences`} class="preferences">
          <FormToken signedIn={signedIn} />
          <input type="hidden" name="back" value={here} />
          <PreferenceFields signedIn={signedIn} prefix="pref" />
          <button type="submit">{t("common.menu.save")}</button>
        </form>
        <form class="signout" method="post" action={`${BASE}/logout`}>
          <FormToken signedIn={signedIn} />
          <button type="submit" class="link">
            {t("common.signOut")}
          </button>
        </form>
      </div>
    </details>
  );
}

export function Layout({ title, signedIn, active, scripts = [], here, children }: PropsWithChildren<LayoutProps>) {
  const v = view();
  const { site } = v;
  return (
    <>
      {raw("<!DOCTYPE html>")}
      <html lang={v.locale} data-theme={v.theme === "system" ? undefined : v.theme}>
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <meta name="color-scheme" content={v.theme === "system" ? "light dark" : v.theme} />
          <title>{`${title} · ${site.name}`}</title>
          <link rel="icon" href={site.favicon} />
          <link rel="stylesheet" href={assets.css.href} />
          {site.accentCss && <link rel="stylesheet" href={site.accentCss} />}
          {signedIn && <meta name="csrf-token" content={signedIn.formToken} />}
          <script src={assets.app.href} defer></script>
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
              {site.logo ? <img class="logo" src={site.logo} alt="" height="28" /> : <Mark />}
              <span>{site.name}</span>
            </a>
            {signedIn && (
              <>
                {/* one list: a row on a wide screen (the stylesheet shows the menu's content), a menu on a phone */}
                <details class="menu site-nav">
                  <summary>{t("common.nav.menu")}</summary>
                  <nav class="menu-panel" aria-label={t("common.nav.label")}>
                    <NavList signedIn={signedIn} active={active} />
                  </nav>
                </details>
                <AccountMenu
                  signedIn={signedIn}
                  here={here ?? (active ? (SECTIONS.find((s) => s.id === active)?.href ?? `${BASE}/dashboard`) : `${BASE}/dashboard`)}
                />
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
