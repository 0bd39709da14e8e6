/**
 * The site-wide webhook endpoints (issue 19), /user/admin/webhooks, for administrators: the same pages as the user
 * center's (../webhooks.tsx) with scope `{ site: true }`, every event (user.disabled too) and the admin frame.
 *
 * There is no admin API for webhooks to call in-process yet (api.ts), so these pages call the service layer
 * (services/webhooks.ts, webhooks/deliver.ts) directly, with its validation and messages, and write the audit row of
 * each change themselves (writeAudit, as requireAdmin writes the admin API's): the administrator as the actor, the
 * page's route as the action, target type "webhooks", the fields sent (never a secret).
 */
import type { Hono } from "hono";
import { EVENT_TYPES } from "../../db/schema.ts";
import { clientIp } from "../../http/auth.ts";
import { auditDetail, writeAudit } from "../../services/audit.ts";
import { SITE_ENDPOINTS_MAX } from "../../services/webhooks.ts";
import { requireAdminSession, type WebEnv } from "../session.ts";
import { registerWebhookPages, type WebhookArea } from "../webhooks.tsx";
import { ADMIN, AdminLayout } from "./layout.tsx";

export const adminArea: WebhookArea = {
  base: `${ADMIN}/webhooks`,
  scope: () => ({ site: true }),
  events: [...EVENT_TYPES],
  max: SITE_ENDPOINTS_MAX,
  whose: "every account (images, tokens, accounts disabled)",
  gate: requireAdminSession,
  frame: ({ title, signedIn, children }) => (
    <AdminLayout title={title === "Webhooks" ? "Site-wide webhooks" : title} signedIn={signedIn} section="webhooks">
      {children}
    </AdminLayout>
  ),
  changed: async (c, { action, endpointId, detail }) => {
    const deps = c.get("deps");
    const { user } = c.get("signedIn");
    await writeAudit(deps.db, {
      actor: { userId: user.id, label: `${user.username} (user ${user.id})`, ip: clientIp(c) },
      action,
      targetType: "webhooks",
      targetId: endpointId === null ? "" : String(endpointId),
      detail: auditDetail(detail),
      at: deps.clock(),
    });
  },
};

export function register(web: Hono<WebEnv>) {
  registerWebhookPages(web, adminArea);
}
