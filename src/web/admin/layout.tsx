/** The admin pages' frame: the user center's layout, the Admin section, and the admin pages' own menu. */
import type { PropsWithChildren } from "hono/jsx";
import { Layout } from "../components/index.ts";
import { type MessageKey, t } from "../i18n/index.ts";
import { BASE, type SignedIn } from "../session.ts";

export const ADMIN = `${BASE}/admin`;

export type AdminSection =
  | "overview"
  | "users"
  | "groups"
  | "strategies"
  | "settings"
  | "signIn"
  | "invitations"
  | "images"
  | "maintenance"
  | "webhooks"
  | "audit";

const sections: { id: AdminSection; href: string }[] = [
  { id: "overview", href: ADMIN },
  { id: "users", href: `${ADMIN}/users` },
  { id: "groups", href: `${ADMIN}/groups` },
  { id: "strategies", href: `${ADMIN}/strategies` },
  { id: "settings", href: `${ADMIN}/settings` },
  { id: "signIn", href: `${ADMIN}/sign-in` },
  { id: "invitations", href: `${ADMIN}/invitations` },
  { id: "images", href: `${ADMIN}/images` },
  { id: "maintenance", href: `${ADMIN}/maintenance` },
  { id: "webhooks", href: `${ADMIN}/webhooks` },
  { id: "audit", href: `${ADMIN}/audit` },
];

export function AdminLayout({ title, signedIn, section, children }: PropsWithChildren<{ title: string; signedIn: SignedIn; section: AdminSection }>) {
  return (
    <Layout title={title} signedIn={signedIn} active="admin">
      <nav class="admin-nav" aria-label={t("admin.nav.label")}>
        <ul>
          {sections.map((s) => (
            <li>
              <a href={s.href} aria-current={s.id === section ? "page" : undefined}>
                {t(`admin.nav.${s.id}` as MessageKey)}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      {children}
    </Layout>
  );
}
