import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { requireUser } from "../../http/auth.ts";
import { respond } from "../../http/envelope.ts";
import { imagePage } from "../../http/image-resource.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { envelope, ImagePage } from "../../http/schemas.ts";
import type { AppEnv } from "../../http/types.ts";
import { intField } from "../../http/validation.ts";

const listImagesRoute = createRoute({
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
    return respond(c, await imagePage(c.get("deps"), c.get("caller").user, per_page, page));
  });
}
