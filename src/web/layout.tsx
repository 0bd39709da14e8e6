/** The frame every page of the user center shares, and the small pieces pages are built from. */
import { readFileSync } from "node:fs";
import type { Child, PropsWithChildren } from "hono/jsx";
import { raw } from "hono/html";
import { BASE, FORM_TOKEN_FIELD, type SignedIn } from "./session.ts";

/** The static files of the pages, with a version in their address so that browsers may keep them. */
const asset = (name: string) => {
  const body = readFileSync(new URL(`./assets/${name}`, import.meta.url), "utf8");
  const version = new Bun.CryptoHasher("sha256").update(body).digest("hex").slice(0, 12);
  return { name, body, href: `${BASE}/assets/${name}?v=${version}` };
};
export const assets = {
  css: asset("style.css"),
  app: asset("app.js"),
  upload: asset("upload.js"),
};

export type Section = "dashboard" | "images" | "albums" | "upload" | "tokens" | "integrations" | "webhooks" | "account" | "admin";

const sections: { id: Section; label: string; href: string }[] = [
  { id: "dashboard", label: "Dashboard", href: `${BASE}/dashboard` },
  { id: "images", label: "Images", href: `${BASE}/images` },
  { id: "albums", label: "Albums", href: `${BASE}/albums` },
  { id: "upload", label: "Upload", href: `${BASE}/upload` },
  { id: "tokens", label: "API tokens", href: `${BASE}/tokens` },
  { id: "integrations", label: "Integrations", href: `${BASE}/integrations` },
  { id: "webhooks", label: "Webhooks", href: `${BASE}/webhooks` },
  { id: "account", label: "Account", href: `${BASE}/account` },
];

interface LayoutProps {
  title: string;
  signedIn?: SignedIn;
  active?: Section;
  /** Scripts of this page beyond the shared one. */
  scripts?: string[];
}

export function Layout({ title, signedIn, active, scripts = [], children }: PropsWithChildren<LayoutProps>) {
  return (
    <>
      {raw("<!DOCTYPE html>")}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{`${title} · Image host`}</title>
          <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
          <link rel="stylesheet" href={assets.css.href} />
          {signedIn && <meta name="csrf-token" content={signedIn.formToken} />}
          <script src={assets.app.href} defer></script>
          {scripts.map((src) => (
            <script src={src} defer></script>
          ))}
        </head>
        <body>
          <a class="skip" href="#main">
            Skip to content
          </a>
          <header class="top">
            <a class="brand" href={signedIn ? `${BASE}/dashboard` : `${BASE}/login`}>
              Image host
            </a>
            {signedIn && (
              <nav aria-label="User center">
                <ul>
                  {sections.map((s) => (
                    <li>
                      <a href={s.href} aria-current={s.id === active ? "page" : undefined}>
                        {s.label}
                      </a>
                    </li>
                  ))}
                  {signedIn.user.role === "admin" && (
                    <li>
                      <a href={`${BASE}/admin`} aria-current={active === "admin" ? "page" : undefined}>
                        Admin
                      </a>
                    </li>
                  )}
                </ul>
              </nav>
            )}
            {signedIn && (
              <form class="signout" method="post" action={`${BASE}/logout`}>
                <FormToken signedIn={signedIn} />
                <span class="who">{signedIn.user.username}</span>
                <button type="submit" class="link">
                  Sign out
                </button>
              </form>
            )}
          </header>
          <main id="main">
            <h1>{title}</h1>
            {children}
          </main>
          <footer>
            <a href="/docs">API reference</a>
          </footer>
          <div id="announcer" class="visually-hidden" role="status" aria-live="polite"></div>
        </body>
      </html>
    </>
  );
}

export const FormToken = ({ signedIn }: { signedIn: SignedIn }) => <input type="hidden" name={FORM_TOKEN_FIELD} value={signedIn.formToken} />;

export function Notice({ kind, children }: PropsWithChildren<{ kind: "error" | "success" | "info" }>) {
  return (
    <p class={`notice ${kind}`} role={kind === "error" ? "alert" : "status"}>
      {children}
    </p>
  );
}

/** A labelled form field; `hint` is tied to it for screen readers. */
export function Field({ label, id, hint, children }: PropsWithChildren<{ label: string; id: string; hint?: Child }>) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

/** A list's "Per page" choice: the usual `choices`, and the current `perPage` when it is another (set in the address). */
export function PerPageField({ choices, perPage }: { choices: readonly number[]; perPage: number }) {
  return (
    <div class="field">
      <label for="per_page">Per page</label>
      <select id="per_page" name="per_page">
        {[...new Set([...choices, perPage])]
          .sort((a, b) => a - b)
          .map((n) => (
            <option value={String(n)} selected={n === perPage}>
              {n}
            </option>
          ))}
      </select>
    </div>
  );
}

/** A form field's error, referenced by the input's `aria-describedby` as `<id>-error`. */
export const FieldError = ({ id, error }: { id: string; error?: string }) =>
  error ? (
    <small id={`${id}-error`} class="field-error">
      {error}
    </small>
  ) : null;

/** The end of a no-script delete confirmation: the form token, the confirmation, where to go back, Delete and Cancel. */
export const ConfirmDeleteFooter = ({ signedIn, count, back }: { signedIn: SignedIn; count: number; back: string }) => (
  <>
    <FormToken signedIn={signedIn} />
    <input type="hidden" name="confirmed" value="1" />
    <input type="hidden" name="back" value={back} />
    <div class="buttons">
      <button type="submit" class="danger">
        {count === 1 ? "Delete 1 image" : `Delete ${count} images`}
      </button>
      <a class="button" href={back}>
        Cancel
      </a>
    </div>
  </>
);

/** A button that copies `text` (app.js). */
export const CopyButton = ({ text, label, name }: { text: string; label: string; name?: string }) => (
  <button type="button" class="copy" data-copy={text} data-copy-name={name ?? label}>
    {label}
  </button>
);

/** A secret shown once: read-only, labelled for screen readers, with its copy button. */
export const SecretValue = ({ id, label, value, name }: { id: string; label: string; value: string; name: string }) => (
  <div class="secret-value">
    <label for={id} class="visually-hidden">
      {label}
    </label>
    <input id={id} type="text" readonly value={value} data-testid={id} />
    <CopyButton text={value} label="Copy" name={name} />
  </div>
);

const UNITS = ["B", "KB", "MB", "GB", "TB", "PB"];

/** 1536 → "1.5 KB" (units of 1024, as the API's KB). */
export function humanBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = unit === 0 || value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${Number(value.toFixed(digits))} ${UNITS[unit]}`;
}
