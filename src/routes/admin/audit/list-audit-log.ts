import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { dateTime, envelope } from "../../../http/schemas.ts";
import { formatDateTime } from "../../../http/time.ts";
import type { AppEnv } from "../../../http/types.ts";
import { intField } from "../../../http/validation.ts";
import { listAudit } from "../../../services/audit.ts";
import { adminRoute } from "../common.ts";

export const AuditEntry = z
  .object({
    id: z.number().int(),
    actor: z
      .string()
      .openapi({ description: "`ADMIN_TOKEN`, or the administrator's username and id when the change came from the admin pages", example: "ADMIN_TOKEN" }),
    actor_user_id: z.number().int().nullable(),
    action: z.string().openapi({ description: "The method and route of the change", example: "PATCH /api/admin/users/{id}" }),
    target_type: z.string().openapi({ example: "users" }),
    target_id: z.string().openapi({ example: "3" }),
    detail: z.record(z.string(), z.unknown()).openapi({ description: 'The fields sent; secrets are shown as "(set)"' }),
    ip: z.string(),
    created_at: dateTime,
  })
  .openapi("AuditEntry");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/audit-log",
      operationId: "adminListAuditLog",
      summary: "Read the audit log of administration",
      description:
        "Every change made through the admin API (by ADMIN_TOKEN or, through the admin pages, by an administrator), newest first: who, what, which record, when and from where. Pages by `before` (the last id of the previous page), `limit` up to 200 (default 50).",
      request: {
        query: z.object({
          limit: intField(1, 200).default(50).openapi({ type: "integer", minimum: 1, maximum: 200, default: 50 }),
          before: intField(1, Number.MAX_SAFE_INTEGER).optional().openapi({ type: "integer", minimum: 1, description: "Entries older than this id" }),
        }),
      },
      responses: {
        ...okResponse(envelope(z.object({ entries: z.array(AuditEntry), total: z.number().int() }), "AuditLogResponse"), "A page of the log"),
        ...errorResponses(401, 422, 500),
      },
    }),
    async (c) => {
      const { limit, before } = c.req.valid("query");
      const { rows, total } = await listAudit(c.get("deps").db, limit, before);
      return respond(c, {
        total,
        entries: rows.map((r) => ({
          id: r.id,
          actor: r.actor,
          actor_user_id: r.actorUserId,
          action: r.action,
          target_type: r.targetType,
          target_id: r.targetId,
          detail: r.detail,
          ip: r.ip,
          created_at: formatDateTime(r.createdAt),
        })),
      });
    },
  );
}
