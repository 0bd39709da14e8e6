import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { requireUser } from "../../http/auth.ts";
import { failure, respond } from "../../http/envelope.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { EmptyResponse } from "../../http/schemas.ts";
import type { AppEnv } from "../../http/types.ts";
import { deleteImage } from "../../services/delete.ts";

const deleteImageRoute = createRoute({
  method: "delete",
  path: "/api/v1/images/{key}",
  operationId: "deleteImage",
  tags: ["Images"],
  summary: "Delete an image",
  description:
    "Deletes one of the account's images by `key` (or by its stored file name with extension). The stored object, its thumbnail and the record are removed synchronously and the space is released; this cannot be undone. A missing image and another account's image both answer 404. If the storage fails, nothing is deleted and the answer is 500. `data` is null. Requires a permanent token.",
  security: [{ bearerAuth: [] }],
  middleware: [requireUser] as const,
  request: {
    params: z.object({
      key: z
        .string()
        .min(1)
        .max(255)
        .openapi({ param: { name: "key", in: "path", example: "Qm7cX2kP9aLr4TzB" }, example: "Qm7cX2kP9aLr4TzB" }),
    }),
  },
  responses: {
    ...okResponse(EmptyResponse, "Deleted; `data` is null"),
    ...errorResponses(401, 403, 404, 422, 500),
  },
});

export function register(app: OpenAPIHono<AppEnv>) {
  // a delete_url opened in a browser: say how the address is used rather than a bare 404 (not an operation of the spec)
  app.get("/api/v1/images/:key", (c) => {
    const issuing = c.req.param("key") === "tokens";
    const message = issuing
      ? "Method not allowed: issue temporary upload tokens with POST and a permanent API token."
      : "Method not allowed: delete this image with DELETE and a permanent API token ('Authorization: Bearer <token>').";
    return c.json(failure(message), 405, { allow: issuing ? "POST" : "DELETE" });
  });
  app.openapi(deleteImageRoute, async (c) => {
    const caller = c.get("caller");
    await deleteImage(c.get("deps"), caller.user.id, c.req.valid("param").key);
    return respond(c, null);
  });
}
