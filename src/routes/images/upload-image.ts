import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { authenticate, authenticateHeader, clientIp } from "../../http/auth.ts";
import { respond } from "../../http/envelope.ts";
import { toImageResource } from "../../http/image-resource.ts";
import { boundaryOf, readStagedMultipart } from "../../http/multipart.ts";
import { DEFAULT_READ_TIMEOUT_SECONDS, PRELUDE_LIMIT, receiveUploadBody, uploadAccess } from "../../http/receive-upload.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { envelope, Image } from "../../http/schemas.ts";
import { parseDateTime } from "../../http/time.ts";
import type { AppEnv } from "../../http/types.ts";
import { intField, validate } from "../../http/validation.ts";
import { AppError, validationError } from "../../errors.ts";
import { uploadImage } from "../../services/upload/index.ts";
import { refusalReason } from "../../observability/metrics.ts";
import { servicesOf } from "../../services/index.ts";

/** Multipart headers and the small fields around the file. */
const MULTIPART_OVERHEAD = 64 * 1024;

export const UploadRequest = z
  .object({
    file: z.string().openapi({ type: "string", format: "binary", description: "The image. Its extension, declared Content-Type and content must agree." }),
    strategy_id: z
      .number()
      .int()
      .optional()
      .openapi({ description: "One of GET /strategies; no fallback when it lacks quota. Also accepted in the query string." }),
    album_id: z.number().int().optional().openapi({ description: "An album of the account; not for guests" }),
    permission: z.number().int().min(0).max(1).optional().openapi({
      description:
        "1 = public (default), 0 = private; guests cannot upload private images. Private images are kept out of public listings; their unguessable address still serves them, so embeds keep working.",
    }),
    expired_at: z.string().optional().openapi({
      description:
        "When the image is removed: ISO 8601 with an offset (2026-12-01T08:00:00+08:00) or `YYYY-MM-DD HH:MM:SS` in the server's time zone. Must be in the future (else 422) and within the group's retention ceiling (else 400).",
      example: "2026-12-31T23:59:59Z",
    }),
    token: z.string().optional().openapi({
      description:
        "A temporary upload token, for clients that cannot set headers. It must come before the `file` part: without a header credential, the server reads only the small fields before the file (at most 64 KB) to learn who sends it, and answers 401 when the file begins and no credential is known (unless guest upload is on).",
    }),
  })
  .openapi("UploadRequest");

const UploadFields = z.object({
  strategy_id: intField(1, 2_147_483_647).optional(),
  album_id: intField(1, 2_147_483_647).optional(),
  permission: intField(0, 1).optional(),
  expired_at: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === "") return undefined;
      const d = parseDateTime(v);
      if (!d) {
        ctx.addIssue({ code: "custom", message: "use ISO 8601 with an offset, or YYYY-MM-DD HH:MM:SS" });
        return z.NEVER;
      }
      return d;
    }),
});

/**
 * A sender refused for having no credential is told where a form token must be: the file part is never read to
 * find one after it (cost before trust), which a client putting `token` last cannot guess.
 */
function withTokenFieldHint(e: unknown): unknown {
  if (!(e instanceof AppError) || e.status !== 401) return e;
  return new AppError("unauthorized", `${e.message.replace(/\.$/, "")}, or a form field 'token' before the file part (a token after the file is never read).`);
}

/** Counts the refused uploads by reason, whatever step refused them (the gates here, or the service's checks). */
const countRefusals: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (c.res.status >= 400) servicesOf(c.get("deps")).metrics.uploadsRefused.inc({ reason: refusalReason(c.error, c.res.status) });
};

/** A header credential is checked before the body is read; without one the body's `token` field may carry it. */
const headerAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.header("authorization") !== undefined) c.set("caller", await authenticateHeader(c, uploadAccess));
  await next();
};

const uploadImageRoute = createRoute({
  method: "post",
  path: "/api/v1/upload",
  operationId: "uploadImage",
  tags: ["Images"],
  summary: "Upload an image",
  description:
    "Stores an image on a strategy of the caller's group and returns its address, thumbnail and embed snippets (also under `links`, for existing uploaders). " +
    "Credential: a permanent token, a temporary upload token (header, or multipart field `token`), or none as a guest when guest upload is enabled. " +
    "Checks, before anything is stored: allowed format (extension, declared type and sniffed content agree; SVG is not accepted), per-image size, pixel count, remaining capacity, upload frequency, concurrent uploads, strategy permission and quota, retention ceiling, album ownership, content review. " +
    "A failed business check answers 400; a missing or ill-typed field 422. Unknown fields are ignored. " +
    "403 also when the administrator asks accounts made by sign-up to confirm their email address first (admin API `email_verification`) and this account has not yet: before its body is read; accounts made by an administrator are never asked. " +
    "Every check judges the upload as sent; then the group's metadata policy and processing on upload (convert, downscale, JPEG quality cap; off unless an administrator turns it on) make what is stored, which the answer describes (`origin_name` stays the uploaded name). " +
    "In a group with a retention ceiling, an upload without `expired_at` expires at the ceiling. " +
    "Cost before trust: nothing beyond the small fields before the file is read until the sender is known, and never more than its own group's per-image limit; " +
    "a client address without a header credential may send 4 upload bodies at once (429 beyond, with `Retry-After`), a known caller 16 at once on one server (400 beyond, with `Retry-After`, as every failed upload check), " +
    "the server 64 in all (503, with `Retry-After`); a body must arrive within 60 seconds (408).",
  security: [{ bearerAuth: [] }, { temporaryToken: [] }, {}] as Record<string, string[]>[],
  middleware: [countRefusals, headerAuth] as const,
  request: {
    query: z.object({
      strategy_id: z.string().optional().openapi({ description: "Same as the form field (for uploaders that put it in the query)", example: "1" }),
    }),
    body: {
      required: true,
      content: { "multipart/form-data": { schema: { $ref: "#/components/schemas/UploadRequest" } } },
    },
  },
  responses: {
    ...okResponse(envelope(Image, "ImageResponse"), "The stored image"),
    ...errorResponses(400, 401, 403, 408, 422, 500, 503),
  },
});

export function register(app: OpenAPIHono<AppEnv>) {
  app.openAPIRegistry.register("UploadRequest", UploadRequest);
  app.openapi(uploadImageRoute, async (c) => {
    const deps = c.get("deps");
    const boundary = boundaryOf(c.req.header("content-type"));
    if (!boundary) {
      if (!c.get("caller")) await authenticate(deps, null, uploadAccess).catch((e) => Promise.reject(withTokenFieldHint(e)));
      throw validationError({ file: ["The file field is required: send multipart/form-data."] });
    }
    const { caller, body, releaseSlot } = await receiveUploadBody(c, {
      read: (limitFor) =>
        readStagedMultipart(c.req.raw, {
          boundary,
          preludeLimit: PRELUDE_LIMIT,
          deadlineSeconds: deps.config.uploadReadTimeoutSeconds ?? DEFAULT_READ_TIMEOUT_SECONDS,
          limitFor,
        }),
      credential: (fields) => fields.get("token")?.trim() || null,
      allowance: (limitKb) => limitKb * 1024 + MULTIPART_OVERHEAD,
      noCredential: withTokenFieldHint,
    });
    c.set("caller", caller); // a body `token` or a guest: the access log names who sent it
    c.set("bytesIn", body.bytesRead ?? 0);
    try {
      const fields = validate(UploadFields, {
        strategy_id: body.fields.get("strategy_id") || c.req.query("strategy_id") || undefined,
        album_id: body.fields.get("album_id") || undefined,
        permission: body.fields.get("permission") || undefined,
        expired_at: body.fields.get("expired_at"),
      });
      const file = body.files.get("file");
      if (!file) throw validationError({ file: ["The file field is required."] });

      const { image, strategy } = await uploadImage(deps, {
        caller,
        ip: clientIp(c),
        file,
        strategyId: fields.strategy_id,
        albumId: fields.album_id,
        isPublic: fields.permission !== 0,
        expiredAt: fields.expired_at,
      });
      return respond(c, toImageResource(image, strategy, deps.storage, deps.config.baseUrl));
    } finally {
      await releaseSlot();
    }
  });
}
