import type { Executor } from "../../db/client.ts";
import { writeAudit } from "../audit.ts";

/** Who changes an account's sign-in methods: the account itself (from its pages), or an administrator. */
export interface AccountActor {
  /** The account whose methods change. */
  userId: number;
  /** The actor as the audit log names it: "alice (user 3)". */
  label: string;
  actorUserId: number | null;
  ip: string;
}

export const selfActor = (user: { id: number; username: string }, ip: string): AccountActor => ({
  userId: user.id,
  label: `${user.username} (user ${user.id})`,
  actorUserId: user.id,
  ip,
});

/** Every change of an account's sign-in methods is written to the audit log. */
export const auditAccount = (db: Executor, actor: AccountActor, action: string, detail: Record<string, unknown>, at: Date) =>
  writeAudit(db, {
    actor: { userId: actor.actorUserId, label: actor.label, ip: actor.ip },
    action,
    targetType: "user",
    targetId: String(actor.userId),
    detail,
    at,
  });
