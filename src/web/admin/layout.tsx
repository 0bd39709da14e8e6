/** The admin pages' frame: the user center's layout, the Admin section, and the admin pages' own menu. */
import type { PropsWithChildren } from "hono/jsx";
import { Layout } from "../components/index.ts";
import { BASE, type SignedIn } from "../session.ts";

export const ADMIN = `${BASE}/admin`;

type AdminSection = "overview" | "users" | "groups" | "strategies" | "settings" | "images" | "maintenance" | "webhooks" | "audit";

const sections: { id: AdminSection; label: string; href: string }[] = [
  { id: "overview", label: "Overview", href: ADMIN },
  { id: "users", label: "Users", href: `${ADMIN}/users` },
  { id: "groups", label: "Groups", href: `${ADMIN}/groups` },
  { id: "strategies", label: "Strategies", href: `${ADMIN}/strategies` },
  { id: "settings", label: "Settings", href: `${ADMIN}/settings` },
  { id: "images", label: "Images", href: `${ADMIN}/images` },
  { id: "maintenance", label: "Maintenance", href: `${ADMIN}/maintenance` },
  { id: "webhooks", label: "Webhooks", href: `${ADMIN}/webhooks` },
  { id: "audit", label: "Audit log", href: `${ADMIN}/audit` },
];

export function AdminLayout({ title, signedIn, section, children }: PropsWithChildren<{ title: string; signedIn: SignedIn; section: AdminSection }>) {
  return (
    <Layout title={title} signedIn={signedIn} active="admin">
      <nav class="admin-nav" aria-label="Administration">
        <ul>
          {sections.map((s) => (
            <li>
              <a href={s.href} aria-current={s.id === section ? "page" : undefined}>
                {s.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      {children}
    </Layout>
  );
}
