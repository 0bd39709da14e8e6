import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { requireUser } from "../../http/auth.ts";
import { respond } from "../../http/envelope.ts";
import { errorResponses, okResponse, retryAfter } from "../../http/responses.ts";
import { envelope, TemporaryToken, TemporaryTokenRequest } from "../../http/schemas.ts";
import { formatDateTime } from "../../http/time.ts";
import type { AppEnv } from "../../http/types.ts";
import { readFields, validate } from "../../http/validation.ts";
import { issueTemporaryTokens, TOKEN_LIMITS } from "../../services/tokens.ts";

const bodyRef = { $ref: "#/components/schemas/TemporaryTokenRequest" };

const refusals = errorResponses(400, 401, 403, 422, 500);

const createTemporaryTokensRoute = createRoute({
  method: "post",
  path: "/api/v1/images/tokens",
  operationId: "createTemporaryTokens",
  tags: ["Tokens"],
  summary: "Issue temporary upload tokens",
  description:
    "Issues `num` temporary upload-only tokens valid for `seconds`. A temporary token works only for POST /upload (header `Authorization: Bearer <token>` or a multipart field `token`); anywhere else it answers 403. It can be used any number of times until it expires or the permanent token that issued it is revoked; then it answers 401. The body may be JSON or a form. Requires a permanent token.\n\n" +
    `Bounds per account: at most ${TOKEN_LIMITS.liveTemporary} live temporary tokens (unexpired, unrevoked) — a batch that would exceed it is refused with 400 and issues nothing; ` +
    `at most ${TOKEN_LIMITS.temporaryPerMinute} tokens issued in any 60 seconds — beyond, 400 with \`Retry-After\` (the seconds until the batch fits) and nothing issued. ` +
    "Both are counted atomically, whatever the number of concurrent requests.",
  security: [{ bearerAuth: [] }],
  middleware: [requireUser] as const,
  request: {
    body: {
      required: true,
      content: {
        "application/json": { schema: bodyRef, example: { num: 5, seconds: 3600 } },
        "application/x-www-form-urlencoded": { schema: bodyRef },
      },
    },
  },
  responses: {
    ...okResponse(envelope(z.object({ tokens: z.array(TemporaryToken) }), "TemporaryTokenListResponse"), "The new tokens"),
    ...refusals,
    400: {
      ...refusals[400],
      description: `${refusals[400].description}; the account's live temporary tokens, or its issuing rate (${TOKEN_LIMITS.temporaryPerMinute} in any 60 seconds: retry after \`Retry-After\` seconds); nothing was issued`,
      headers: retryAfter,
    },
  },
});

export function register(app: OpenAPIHono<AppEnv>) {
  app.openAPIRegistry.register("TemporaryTokenRequest", TemporaryTokenRequest);
  app.openapi(createTemporaryTokensRoute, async (c) => {
    const { num, seconds } = validate(TemporaryTokenRequest, await readFields(c));
    const { db, clock } = c.get("deps");
    const issued = await issueTemporaryTokens(db, c.get("caller"), num, seconds, clock());
    return respond(c, { tokens: issued.map((t) => ({ token: t.token, expired_at: formatDateTime(t.expiredAt) })) });
  });
}
