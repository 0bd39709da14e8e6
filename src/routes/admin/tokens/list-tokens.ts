import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { listTokensForUser } from "../../../db/repositories/tokens.ts";
import { getUser } from "../../../db/repositories/users.ts";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { dateTime, envelope } from "../../../http/schemas.ts";
import { formatDateTime } from "../../../http/time.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute, idParam, pageFields, pageOf, pageQuery } from "../common.ts";

const AdminToken = z
  .object({
    id: z.number().int().openapi({ example: 7 }),
    kind: z.enum(["permanent", "temporary"]),
    label: z.string().nullable().openapi({ description: "The name given at creation (admin API or user center); null without one", example: "laptop ShareX" }),
    created_at: dateTime,
    last_used_at: dateTime.nullable().openapi({ description: "When the token last authenticated a request (recorded at most once a minute); null if never" }),
    expired_at: dateTime.nullable().openapi({ description: "null for a permanent token" }),
    revoked_at: dateTime.nullable().openapi({ description: "null unless revoked" }),
    parent_token_id: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "The permanent token that issued this temporary token; revoking it revokes this one too", example: 3 }),
  })
  .openapi("AdminToken", { description: "A token's record; its secret is never shown again." });

const formatOptional = (d: Date | null) => (d ? formatDateTime(d) : null);

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/users/{id}/tokens",
      operationId: "adminListTokens",
      summary: "List a user's tokens",
      description:
        "A page of the user's permanent and temporary tokens, oldest first, without their secrets (`page`, `per_page` up to 500, default 100). Tokens that expired or were revoked more than an hour ago are forgotten.",
      request: { params: idParam, query: pageQuery },
      responses: {
        ...okResponse(envelope(z.object({ tokens: z.array(AdminToken), ...pageFields }), "AdminTokenListResponse"), "A page of tokens"),
        ...errorResponses(401, 404, 422, 500),
      },
    }),
    async (c) => {
      const { db } = c.get("deps");
      const user = await getUser(db, c.req.valid("param").id);
      if (!user) throw notFound("User not found.");
      const { page, per_page } = c.req.valid("query");
      const { rows, total } = await listTokensForUser(db, user.id, per_page, (page - 1) * per_page);
      return respond(c, {
        ...pageOf(page, per_page, total),
        tokens: rows.map((t) => ({
          id: t.id,
          kind: t.kind,
          label: t.label,
          created_at: formatDateTime(t.createdAt),
          last_used_at: formatOptional(t.lastUsedAt),
          expired_at: formatOptional(t.expiredAt),
          revoked_at: formatOptional(t.revokedAt),
          parent_token_id: t.parentTokenId,
        })),
      });
    },
  );
}
