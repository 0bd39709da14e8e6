import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { getUser } from "../../../db/repositories/users.ts";
import { notFound } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { issuePermanentToken, TOKEN_LIMITS } from "../../../services/tokens.ts";
import { adminRoute, idParam } from "../common.ts";

const PermanentToken = z
  .object({
    id: z.number().int(),
    token: z.string().openapi({ description: "`id|raw`, shown once; the raw part alone also works", example: "1|q8Zf3…" }),
  })
  .openapi("PermanentToken");

/** A permanent token's name, as the user center's API Tokens page takes it. */
const TOKEN_LABEL_MAX = 100;

const CreateTokenInput = z
  .object({
    label: z
      .string()
      .trim()
      .max(TOKEN_LABEL_MAX)
      .nullable()
      .optional()
      .openapi({
        description: `What uses the token, e.g. "laptop ShareX" (at most ${TOKEN_LABEL_MAX} characters; empty or null: none)`,
        example: "laptop ShareX",
      }),
  })
  .openapi("CreateTokenInput");

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
}
