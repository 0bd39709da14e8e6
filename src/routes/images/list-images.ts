import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { listImagesForOwner } from "../../db/repositories/images.ts";
import { getUser } from "../../db/repositories/users.ts";
import { requireUser } from "../../http/auth.ts";
import { respond } from "../../http/envelope.ts";
import { toImageResource } from "../../http/image-resource.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { envelope, ImagePage } from "../../http/schemas.ts";
import type { AppEnv } from "../../http/types.ts";
import { intField } from "../../http/validation.ts";

export const listImagesRoute = createRoute({
  method: "get",
  path: "/api/v1/images",
  operationId: "listImages",
  tags: ["Images"],
  summary: "List the account's images",
  description:
    "Returns only the calling account's images, newest first (ties by upload order), paginated. Each item has the fields of the upload response. `total` is the account's image count. Requires a permanent token.",
  security: [{ bearerAuth: [] }],
  middleware: [requireUser] as const,
  request: {
    query: z.object({
      per_page: intField(1, 100).default(30).openapi({ type: "integer", minimum: 1, maximum: 100, default: 30, description: "Items per page", example: 30 }),
      page: intField(1, 1_000_000).default(1).openapi({ type: "integer", minimum: 1, default: 1, description: "Page number", example: 1 }),
    }),
  },
  responses: {
    ...okResponse(envelope(ImagePage, "ImagePageResponse"), "A page of images"),
    ...errorResponses(401, 403, 422, 500),
  },
});

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(listImagesRoute, async (c) => {
    const { per_page, page } = c.req.valid("query");
    const caller = c.get("caller");
    const deps = c.get("deps");
    // the page and the account's current count at once (the caller's account may be up to a second old)
    const [rows, owner] = await Promise.all([
      listImagesForOwner(deps.db, caller.user.id, per_page, (page - 1) * per_page),
      getUser(deps.db, caller.user.id),
    ]);
    const total = owner?.imageNum ?? caller.user.imageNum;
    return respond(c, {
      current_page: page,
      last_page: Math.max(1, Math.ceil(total / per_page)),
      per_page,
      total,
      data: rows.map((r) => toImageResource(r.image, r.strategy, deps.storage, deps.config.baseUrl)),
    });
  });
}
