/**
 * An audit entry as a sentence ("alice disabled bob's account"): what the entry records (the method and route, the
 * target's id, the fields sent), with the names of the accounts, groups and strategies it names looked up for a page
 * of entries at once. An action this does not know reads as a generic sentence; the raw entry is on the page too.
 */
import { inArray } from "drizzle-orm";
import type { Db } from "../../db/client.ts";
import type { auditLog } from "../../db/schema.ts";
import { groups, strategies, users } from "../../db/schema.ts";
import { type MessageKey, t } from "../i18n/index.ts";

type Entry = typeof auditLog.$inferSelect;

export interface Names {
  user: Map<number, string>;
  group: Map<number, string>;
  strategy: Map<number, string>;
}

const idsOf = (rows: Entry[], type: string) => [
  ...new Set(rows.filter((r) => r.targetType === type && /^\d{1,10}$/.test(r.targetId)).map((r) => Number(r.targetId))),
];

/** The names of the accounts, groups and strategies the entries name (three bounded queries). */
export async function namesOf(db: Db, rows: Entry[]): Promise<Names> {
  const [u, g, s] = [idsOf(rows, "users"), idsOf(rows, "groups"), idsOf(rows, "strategies")];
  const [ur, gr, sr] = await Promise.all([
    u.length ? db.select({ id: users.id, name: users.username }).from(users).where(inArray(users.id, u)) : [],
    g.length ? db.select({ id: groups.id, name: groups.name }).from(groups).where(inArray(groups.id, g)) : [],
    s.length ? db.select({ id: strategies.id, name: strategies.name }).from(strategies).where(inArray(strategies.id, s)) : [],
  ]);
  const map = (rs: { id: number; name: string }[]) => new Map(rs.map((r) => [r.id, r.name]));
  return { user: map(ur), group: map(gr), strategy: map(sr) };
}

/** "alice (user 3)" → "alice"; ADMIN_TOKEN stays itself. */
export const actorName = (actor: string) => /^(.*) \(user \d+\)$/.exec(actor)?.[1] ?? (actor === "ADMIN_TOKEN" ? t("admin.audit.token") : actor);

const str = (v: unknown) => (typeof v === "string" ? v : undefined);

/** The sentence of one entry. */
export function sentence(entry: Entry, names: Names): string {
  const actor = actorName(entry.actor);
  const d = (entry.detail ?? {}) as Record<string, unknown>;
  const id = Number(entry.targetId);
  const user = names.user.get(id) ?? t("admin.audit.userN", { id: entry.targetId });
  const group = names.group.get(id) ?? t("admin.audit.groupN", { id: entry.targetId });
  const strategy = names.strategy.get(id) ?? t("admin.audit.strategyN", { id: entry.targetId });
  const webhook = t("admin.audit.webhookN", { id: entry.targetId });
  const fields = Object.keys(d).join(", ");
  const say = (key: string, values: Record<string, string | number> = {}) => t(`admin.audit.${key}` as MessageKey, { actor, ...values });
  switch (entry.action) {
    case "POST /api/admin/users":
      return say("user.create", { name: str(d.username) ?? "?" });
    case "PATCH /api/admin/users/{id}":
      if (d.enabled === false) return say("user.disable", { user });
      if (d.enabled === true && Object.keys(d).length === 1) return say("user.enable", { user });
      if (d.password !== undefined && Object.keys(d).length === 1) return say("user.password", { user });
      return say("user.update", { user, fields });
    case "DELETE /api/admin/users/{id}":
      return say("user.delete", { user });
    case "POST /api/admin/users/{id}/password-link":
      return say("user.link", { user });
    case "POST /api/admin/users/{id}/sign-out":
      return say("user.signOut", { user });
    case "POST /api/admin/users/{id}/albums":
      return say("user.album", { user });
    case "POST /api/admin/users/{id}/tokens":
      return say("user.token", { user });
    case "DELETE /api/admin/users/{id}/second-factors":
      return say("user.secondFactors", { user });
    case "DELETE /api/admin/tokens/{id}":
      return say("token.revoke", { id: entry.targetId });
    case "DELETE /api/admin/images/{key}": {
      const name = str(d.origin_name);
      if (!name) return say("image.deleteKey", { key: entry.targetId });
      return say("image.delete", { name, owner: str(d.owner) ?? t("admin.audit.guest") });
    }
    case "POST /api/admin/groups":
      return say("group.create", { name: str(d.name) ?? "?" });
    case "PATCH /api/admin/groups/{id}":
      return say("group.update", { group });
    case "POST /api/admin/groups/{id}/strip-metadata":
      return say("group.strip", { group });
    case "POST /api/admin/strategies":
      return say("strategy.create", { name: str(d.name) ?? "?" });
    case "PATCH /api/admin/strategies/{id}":
      return say("strategy.update", { strategy });
    case "POST /api/admin/strategies/{id}/test":
      return say("strategy.test", { strategy });
    case "PATCH /api/admin/settings":
      return say("settings", { fields });
    case "POST /api/admin/storage/reconcile":
      return say(d.dry_run === false ? "reconcile.apply" : "reconcile.dry");
    case "POST /api/admin/webhooks":
      return say("webhook.create", { url: str(d.url) ?? "?" });
    case "PATCH /api/admin/webhooks/{id}":
      return say("webhook.update", { webhook });
    case "DELETE /api/admin/webhooks/{id}":
      return say("webhook.delete", { webhook });
    case "POST /api/admin/webhooks/{id}/secret":
      return say("webhook.secret", { webhook });
    case "POST /api/admin/webhooks/{id}/test":
      return say("webhook.test", { webhook });
    case "POST /api/admin/webhooks/{id}/deliveries/{delivery_id}/resend":
      return say("webhook.resend", { webhook });
    case "POST /api/admin/webhooks/{id}/resend-failed":
      return say("webhook.resendFailed", { webhook });
    case "PATCH /api/admin/mail":
      return say("mail.update", { fields });
    case "POST /api/admin/mail/test":
      return say("mail.test", { to: str(d.to) ?? "?" });
    case "POST /api/admin/invitations":
      return say("invitation.create");
    case "DELETE /api/admin/invitations/{id}":
      return say("invitation.delete", { id: entry.targetId });
    case "POST /api/admin/oidc-providers":
      return say("oidc.create", { name: str(d.label) ?? str(d.slug) ?? "?" });
    case "PATCH /api/admin/oidc-providers/{id}":
      return say("oidc.update", { id: entry.targetId, fields });
    case "DELETE /api/admin/oidc-providers/{id}":
      return say("oidc.delete", { id: entry.targetId });
    default:
      return say("other", { action: entry.action });
  }
}
