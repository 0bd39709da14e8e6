import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { listTokensForUser } from "../../db/repositories/tokens.ts";
import { ALBUMS_PER_ACCOUNT, createOwnAlbum } from "../../db/repositories/albums.ts";
import { getUser } from "../../db/repositories/users.ts";
import { badRequest, notFound } from "../../errors.ts";
import { respond } from "../../http/envelope.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { dateTime, EmptyResponse, envelope } from "../../http/schemas.ts";
import { formatDateTime } from "../../http/time.ts";
import type { AppEnv } from "../../http/types.ts";
import { issuePermanentToken, revokeToken, TOKEN_LIMITS } from "../../services/tokens.ts";
import { adminRoute, idParam, jsonBody, pageFields, pageOf, pageQuery } from "./common.ts";

const PermanentToken = z
  .object({
    id: z.number().int(),
    token: z.string().openapi({ description: "`id|raw`, shown once; the raw part alone also works", example: "1|q8Zf3…" }),
  })
  .openapi("PermanentToken");

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

/** A permanent token's name, as the user center's API Tokens page takes it. */
export const TOKEN_LABEL_MAX = 100;
const CreateTokenInput = z
  .object({
    label: z
      .string()
      .trim()
      .max(TOKEN_LABEL_MAX)
      .nullable()
      .optional()
      .openapi({ description: `What uses the token, e.g. "laptop ShareX" (at most ${TOKEN_LABEL_MAX} characters; empty or null: none)`, example: "laptop ShareX" }),
  })
  .openapi("CreateTokenInput");

const formatOptional = (d: Date | null) => (d ? formatDateTime(d) : null);

const Album = z.object({ id: z.number().int(), name: z.string() }).openapi("Album");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/users/{id}/tokens",
      operationId: "adminCreateToken",
      summary: "Create a permanent API token for a user",
      description: `The full value is returned once; only its SHA-256 is stored. An optional JSON body names it (\`label\`). An account holds at most ${TOKEN_LIMITS.livePermanent} unrevoked permanent tokens: beyond, 400.`,
      request: { params: idParam, body: { required: false, content: { "application/json": { schema: CreateTokenInput } } } },
      responses: { ...okResponse(envelope(PermanentToken, "PermanentTokenResponse"), "The token"), ...errorResponses(400, 401, 404, 415, 422, 500) },
    }),
    async (c) => {
      const { db, clock } = c.get("deps");
      const user = await getUser(db, c.req.valid("param").id);
      if (!user) throw notFound("User not found.");
      return respond(c, await issuePermanentToken(db, user.id, clock(), c.req.valid("json").label || null));
    },
  );
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
  app.openapi(
    adminRoute({
      method: "delete",
      path: "/api/admin/tokens/{id}",
      operationId: "adminRevokeToken",
      summary: "Revoke a token (permanent or temporary)",
      description: "Revokes a permanent or temporary token by id; it answers 401 from then on. Revoking a permanent token also revokes the temporary tokens it issued, in the same transaction. Revoking twice is not an error.",
      request: { params: idParam },
      responses: { ...okResponse(EmptyResponse, "Revoked; `data` is null"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const { db, clock } = c.get("deps");
      if (!(await revokeToken(db, c.req.valid("param").id, clock()))) throw notFound("Token not found.");
      return respond(c, null);
    },
  );
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/users/{id}/albums",
      operationId: "adminCreateAlbum",
      summary: "Create an album for a user",
      description: `Creates an album owned by the user; uploads may then name it in \`album_id\`. An account holds at most ${ALBUMS_PER_ACCOUNT} albums (400 beyond).`,
      request: { params: idParam, body: jsonBody(z.object({ name: z.string().min(1).max(100) }).openapi("AlbumInput")) },
      responses: { ...okResponse(envelope(Album, "AlbumResponse"), "The album"), ...errorResponses(400, 401, 404, 415, 422, 500) },
    }),
    async (c) => {
      const { db } = c.get("deps");
      const user = await getUser(db, c.req.valid("param").id);
      if (!user) throw notFound("User not found.");
      const album = await createOwnAlbum(db, user.id, c.req.valid("json").name);
      if (album === "missing") throw notFound("User not found.");
      if (album === "limit") throw badRequest(`The user has ${ALBUMS_PER_ACCOUNT} albums, the most an account may hold.`);
      return respond(c, { id: album.id, name: album.name });
    },
  );
}
