import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { ALBUMS_PER_ACCOUNT, createOwnAlbum } from "../../../db/repositories/albums.ts";
import { getUser } from "../../../db/repositories/users.ts";
import { badRequest, notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute, idParam, jsonBody } from "../common.ts";

const Album = z.object({ id: z.number().int(), name: z.string() }).openapi("Album");

export function register(app: OpenAPIHono<AppEnv>) {
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
