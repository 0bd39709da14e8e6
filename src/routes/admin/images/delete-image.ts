import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { EmptyResponse } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { deleteAnyImage } from "../../../services/delete.ts";
import { adminRoute } from "../common.ts";

const keyParam = z.object({
  key: z
    .string()
    .min(1)
    .max(255)
    .openapi({ param: { name: "key", in: "path", example: "Qm7cX2kP9aLr4TzB" }, example: "Qm7cX2kP9aLr4TzB" }),
});

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "delete",
      path: "/api/admin/images/{key}",
      operationId: "adminDeleteImage",
      summary: "Delete any image",
      description:
        "Deletes a user's or a guest's image by `key` (or its stored file name) with the guarantees of `DELETE /api/v1/images/{key}`: the record, " +
        "the owner's capacity and the strategy's quota in one transaction, the object, its thumbnail and variants removed after the commit " +
        "(or by the removal workers when the storage fails). Cannot be undone. `data` is null.",
      request: { params: keyParam },
      responses: { ...okResponse(EmptyResponse, "Deleted; `data` is null"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const deleted = await deleteAnyImage(c.get("deps"), c.req.valid("param").key);
      if (!deleted) throw notFound("Image not found.");
      // the audit entry names what went, which the key alone no longer can: "alice deleted image photo.jpg of carol"
      c.set("auditNote", { origin_name: deleted.originName, owner: deleted.owner });
      return respond(c, null);
    },
  );
}
