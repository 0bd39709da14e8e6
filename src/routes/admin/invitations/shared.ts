import { z } from "@hono/zod-openapi";
import { dateTime } from "../../../http/schemas.ts";
import { formatDateTime } from "../../../http/time.ts";
import type { Invitation } from "../../../services/invitations.ts";

export const AdminInvitation = z
  .object({
    id: z.number().int().openapi({ example: 4 }),
    group_id: z.number().int().openapi({ description: "The group the invited accounts join", example: 1 }),
    max_uses: z.number().int().openapi({ description: "Accounts the invitation may make", example: 5 }),
    uses: z.number().int().openapi({ description: "Accounts made with it so far", example: 2 }),
    note: z.string().openapi({ description: "The administrator's note (whom it is for)", example: "photo club" }),
    status: z.enum(["active", "used_up", "expired", "revoked"]),
    expired_at: dateTime.openapi({ description: "When it stops working" }),
    revoked_at: dateTime.nullable().openapi({ description: "null unless withdrawn" }),
    created_at: dateTime,
  })
  .openapi("AdminInvitation", { description: "An invitation's record; its code is shown only when it is made." });

export function statusOf(i: Invitation, now: Date): z.infer<typeof AdminInvitation>["status"] {
  if (i.revokedAt) return "revoked";
  if (i.uses >= i.maxUses) return "used_up";
  if (i.expiresAt <= now) return "expired";
  return "active";
}

export const toOutput = (i: Invitation, now: Date): z.infer<typeof AdminInvitation> => ({
  id: i.id,
  group_id: i.groupId,
  max_uses: i.maxUses,
  uses: i.uses,
  note: i.note,
  status: statusOf(i, now),
  expired_at: formatDateTime(i.expiresAt),
  revoked_at: i.revokedAt ? formatDateTime(i.revokedAt) : null,
  created_at: formatDateTime(i.createdAt),
});
