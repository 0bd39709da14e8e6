import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { revokeToken } from "../../db/repositories/tokens.ts";
import { createAlbum, getUser } from "../../db/repositories/users.ts";
import { notFound } from "../../errors.ts";
import { respond } from "../../http/envelope.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { EmptyResponse, envelope } from "../../http/schemas.ts";
import type { AppEnv } from "../../http/types.ts";
import { issuePermanentToken } from "../../services/tokens.ts";
import { adminRoute, idParam, jsonBody } from "./common.ts";

const PermanentToken = z
  .object({
    id: z.number().int(),
    token: z.string().openapi({ description: "`id|raw`, shown once; the raw part alone also works", example: "1|q8Zf3…" }),
  })
  .openapi("PermanentToken");

const Album = z.object({ id: z.number().int(), name: z.string() }).openapi("Album");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/users/{id}/tokens",
      operationId: "adminCreateToken",
      summary: "Create a permanent API token for a user",
      description: "The full value is returned once; only its SHA-256 is stored.",
      request: { params: idParam },
      responses: { ...okResponse(envelope(PermanentToken, "PermanentTokenResponse"), "The token"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const { db } = c.get("deps");
      const user = await getUser(db, c.req.valid("param").id);
      if (!user) throw notFound("User not found.");
      return respond(c, await issuePermanentToken(db, user.id));
    },
  );
  app.openapi(
    adminRoute({
      method: "delete",
      path: "/api/admin/tokens/{id}",
      operationId: "adminRevokeToken",
      summary: "Revoke a token (permanent or temporary)",
      description: "Revokes a permanent or temporary token by id; it answers 401 from then on. Revoking twice is not an error.",
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
      description: "Creates an album owned by the user; uploads may then name it in `album_id`.",
      request: { params: idParam, body: jsonBody(z.object({ name: z.string().min(1).max(100) }).openapi("AlbumInput")) },
      responses: { ...okResponse(envelope(Album, "AlbumResponse"), "The album"), ...errorResponses(400, 401, 404, 415, 422, 500) },
    }),
    async (c) => {
      const { db } = c.get("deps");
      const user = await getUser(db, c.req.valid("param").id);
      if (!user) throw notFound("User not found.");
      const album = await createAlbum(db, user.id, c.req.valid("json").name);
      return respond(c, { id: album.id, name: album.name });
    },
  );
}
