import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import { deleteUserAndImages } from "../../../services/delete-user.ts";
import type { AppEnv } from "../../../http/types.ts";
import { adminRoute, idParam } from "../common.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "delete",
      path: "/api/admin/users/{id}",
      operationId: "adminDeleteUser",
      summary: "Delete a user and all their images",
      description:
        "Disables the account, revokes its tokens and ends its sessions at once; then deletes every image of it with the guarantees of `DELETE /api/v1/images/{key}` (record, quota and capacity in one transaction each, objects, thumbnails and variants removed after the commit or by the removal workers), then the account with its albums. Synchronous: with many images it takes a while. A failure halfway leaves a disabled account with fewer images; deleting it again finishes.",
      request: { params: idParam },
      responses: {
        ...okResponse(envelope(z.object({ images_deleted: z.number().int() }), "DeleteUserResponse"), "Deleted"),
        ...errorResponses(401, 404, 422, 500),
      },
    }),
    async (c) => {
      const result = await deleteUserAndImages(c.get("deps"), c.req.valid("param").id);
      if (!result) throw notFound("User not found.");
      return respond(c, { images_deleted: result.images });
    },
  );
}
