/**
 * POST /api/1/upload: the upload API of Chevereto 3 and 4 and of ImgBB, which uploaders, CMS plugins and PicGo
 * plugins hard-code, as an adapter over the same upload service as POST /api/v1/upload: the same checks, limits,
 * metadata policy and events, the same cost-before-trust reading of the body. A token of this server is the `key`.
 * docs/decisions/chevereto-imgbb-dialect.md says what is kept of both APIs and where they differ.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { AppError } from "../../errors.ts";
import { authenticate, authenticateHeader, clientIp, guardedAuth } from "../../http/auth.ts";
import { boundaryOf, readStagedMultipart } from "../../http/multipart.ts";
import { DEFAULT_READ_TIMEOUT_SECONDS, PRELUDE_LIMIT, receiveUploadBody, uploadAccess } from "../../http/receive-upload.ts";
import { readStagedForm } from "../../http/staged-form.ts";
import type { AppEnv } from "../../http/types.ts";
import { intField, validate } from "../../http/validation.ts";
import { logFor } from "../../observability/log.ts";
import { refusalReason } from "../../observability/metrics.ts";
import type { Caller } from "../../services/caller.ts";
import { servicesOf } from "../../services/index.ts";
import { uploadImage } from "../../services/upload/index.ts";
import { CODE_EMPTY_SOURCE, CODE_KEY, cheveretoImage, DialectError, decodeTextSource, dialectError, expirationOf, named } from "./chevereto-answer.ts";
import { CheveretoError, CheveretoUploadForm, CheveretoUploadResponse, CheveretoUploadUrlencoded, ImgbbUploadResponse } from "./chevereto-schemas.ts";
import { extensionOf } from "../../services/upload/input.ts";

export const CHEVERETO_UPLOAD_PATHS = ["/api/1/upload", "/api/1/upload/"];
/** Multipart headers and the small fields around the file. */
const OVERHEAD = 64 * 1024;
/** Base64 is 4/3 of the bytes; MIME-style line breaks add up to 3 % more. */
const base64Bytes = (limitKb: number) => Math.ceil(((limitKb * 1024) / 3) * 4 * 1.03);
/** In a urlencoded body `+` and `/` are sent as three characters each: at worst three times the base64. */
const formBytes = (limitKb: number) => base64Bytes(limitKb) * 3;

const keyHint = "send the key in the X-API-Key header or the query string (?key=), or as a form field before source (a key after the source is never read)";

const errorContent = {
  "application/json": { schema: CheveretoError },
  "text/plain": { schema: z.string().openapi({ description: "With format=txt or format=redirect: the message alone", example: "Empty upload source." }) },
};
const errorResponse = (description: string, example: { status_code: number; message: string; code: number; context: string; status_txt: string }) => ({
  description,
  content: {
    ...errorContent,
    "application/json": {
      schema: CheveretoError,
      example: {
        status_code: example.status_code,
        error: { message: example.message, code: example.code, context: example.context },
        status_txt: example.status_txt,
      },
    },
  },
});
const retryAfter = { "Retry-After": { description: "Seconds to wait", schema: { type: "integer" as const } } };

const route = createRoute({
  method: "post",
  path: "/api/1/upload",
  operationId: "cheveretoUpload",
  tags: ["Compatibility"],
  summary: "Upload an image (Chevereto and ImgBB dialect)",
  description:
    "The upload API of Chevereto 3 and 4 and ImgBB, for clients that hard-code it (PicGo and ShareX configurations, CMS plugins, scripts); `/api/1/upload/` with a trailing slash is the same. " +
    "Not part of the v1 contract: its answers follow those products, not the `{status, message, data}` envelope. " +
    "It is the same upload as POST /api/v1/upload — the same checks in the same order, limits, metadata policy, processing and `image.uploaded` event — and the same cost before trust: a key in the header or the query is checked before the body is read; a key in the body must come within its first 64 KB, before `source`. " +
    "The key is a token of this server (permanent, or a temporary upload token); without one, a guest upload when guest upload is on. " +
    "The source is a file part, or base64 in a form field (multipart or urlencoded); URLs are refused. " +
    "The answer is Chevereto's (`image`) when the source was sent as `source`, ImgBB's (`data`) when it was sent as `image`; the image object is the same in both. " +
    "Refusals answer Chevereto's error envelope with the HTTP status this server gives the same refusal (400 for what the v1 API answers 422). With format=txt the answer is the image URL as text, with format=redirect a 302 to it; their refusals are the message as text.",
  security: [{ cheveretoKeyHeader: [] }, { cheveretoKeyQuery: [] }, { bearerAuth: [] }, { temporaryToken: [] }, {}] as Record<string, string[]>[],
  request: {
    query: z.object({
      key: z
        .string()
        .optional()
        .openapi({ description: "The token, when the client can set neither a header nor a field (it may end up in proxies' logs: prefer X-API-Key)" }),
      format: z.string().optional().openapi({ description: "json (default), txt or redirect", example: "json" }),
    }),
    body: {
      required: true,
      content: {
        "multipart/form-data": { schema: { $ref: "#/components/schemas/CheveretoUploadForm" } },
        "application/x-www-form-urlencoded": { schema: { $ref: "#/components/schemas/CheveretoUploadUrlencoded" } },
      },
    },
  },
  responses: {
    200: {
      description: "The stored image: Chevereto's answer, or ImgBB's when the source was sent as `image`; with format=txt its URL as text",
      content: {
        "application/json": { schema: z.union([CheveretoUploadResponse, ImgbbUploadResponse]) },
        "text/plain": {
          schema: z.string().openapi({ description: "format=txt: the image's URL", example: "https://img.example.com/i/2026/11/22/Xb3kQ9mT2pLw8RvY4nZc.png" }),
        },
      },
    },
    302: {
      description: "format=redirect: the stored image's address in `Location`",
      headers: { Location: { description: "The image's address", schema: { type: "string" as const } } },
    },
    400: errorResponse(
      "A check refused the upload (format, size, pixels, capacity, frequency, quota, album, retention, review), a field is invalid, or the source is missing, a URL or not base64",
      {
        status_code: 400,
        message: "Empty upload source.",
        code: 130,
        context: "bad_request",
        status_txt: "Bad Request",
      },
    ),
    401: errorResponse("Missing (guest upload off), wrong, revoked or expired key", {
      status_code: 401,
      message: "Invalid token.",
      code: 100,
      context: "unauthorized",
      status_txt: "Unauthorized",
    }),
    403: errorResponse("API switched off, account or group disabled, or the group may not use the API", {
      status_code: 403,
      message: "The API is disabled on this site.",
      code: 403,
      context: "forbidden",
      status_txt: "Forbidden",
    }),
    408: errorResponse("The body did not arrive within the read deadline", {
      status_code: 408,
      message: "The request body was not received within 60 seconds.",
      code: 408,
      context: "request_timeout",
      status_txt: "Request Timeout",
    }),
    415: errorResponse("The body is neither multipart/form-data nor application/x-www-form-urlencoded", {
      status_code: 415,
      message: "Send multipart/form-data or application/x-www-form-urlencoded.",
      code: 415,
      context: "unsupported_media_type",
      status_txt: "Unsupported Media Type",
    }),
    429: {
      ...errorResponse("Too many failed keys, or upload bodies, from this address: nothing was checked", {
        status_code: 429,
        message: "Too many failed authentications from your address: retry in 2 s.",
        code: 429,
        context: "too_many_requests",
        status_txt: "Too Many Requests",
      }),
      headers: retryAfter,
    },
    500: errorResponse("Storage or server failure; the message carries no internals", {
      status_code: 500,
      message: "Internal server error.",
      code: 500,
      context: "internal",
      status_txt: "Internal Server Error",
    }),
    503: errorResponse("A service-wide cap is reached or the database does not answer; retry after `Retry-After` when given", {
      status_code: 503,
      message: "Service unavailable.",
      code: 503,
      context: "unavailable",
      status_txt: "Service Unavailable",
    }),
  },
});

const Fields = z.object({
  album_id: intField(1, 2_147_483_647).optional(),
});

type Format = "json" | "txt" | "redirect";
const formatOf = (v: string | undefined): Format => (v === "txt" || v === "redirect" ? v : "json");

/** The key sent before the body: X-API-Key, then `Authorization: Bearer`, then `?key=`. Checked before a byte of the body is read. */
async function callerBeforeBody(c: Context<AppEnv>): Promise<Caller | undefined> {
  const deps = c.get("deps");
  const header = c.req.header("x-api-key")?.trim();
  if (header) return guardedAuth(c, true, () => authenticate(deps, header, uploadAccess));
  if (c.req.header("authorization") !== undefined) return authenticateHeader(c, uploadAccess);
  const query = c.req.query("key")?.trim();
  if (query) return guardedAuth(c, true, () => authenticate(deps, query, uploadAccess));
  return undefined;
}

/** A stranger without a key: the 401 says where the key goes. */
const withKeyHint = (e: unknown) =>
  e instanceof AppError && e.status === 401 ? new DialectError("unauthorized", `${e.message.replace(/[.:].*$/, "")}: ${keyHint}.`, CODE_KEY) : e;
/** A wrong key is Chevereto's code 100. */
const asKeyError = (e: unknown) =>
  e instanceof AppError && e.status === 401 && !(e instanceof DialectError) ? new DialectError("unauthorized", e.message, CODE_KEY) : e;

async function handle(c: Context<AppEnv>, format: { value: Format }): Promise<Response> {
  const deps = c.get("deps");
  format.value = formatOf(c.req.query("format"));
  const before = await callerBeforeBody(c).catch((e) => Promise.reject(asKeyError(e)));
  if (before) c.set("caller", before);
  const contentType = c.req.header("content-type") ?? "";
  const boundary = boundaryOf(contentType);
  const urlencoded = /^application\/x-www-form-urlencoded\s*(;|$)/i.test(contentType);
  if (!boundary && !urlencoded) {
    if (!before) await authenticate(deps, null, uploadAccess).catch((e) => Promise.reject(withKeyHint(e)));
    if (c.req.raw.body && contentType !== "") throw new AppError("unsupported_media_type", "Send multipart/form-data or application/x-www-form-urlencoded.");
    throw new DialectError("bad_request", "Empty upload source.", CODE_EMPTY_SOURCE);
  }
  const deadlineSeconds = deps.config.uploadReadTimeoutSeconds ?? DEFAULT_READ_TIMEOUT_SECONDS;
  const { caller, body, releaseSlot } = await receiveUploadBody(c, {
    read: (limitFor) =>
      boundary
        ? readStagedMultipart(c.req.raw, { boundary, preludeLimit: PRELUDE_LIMIT, deadlineSeconds, limitFor })
        : readStagedForm(c.req.raw, { preludeLimit: PRELUDE_LIMIT, deadlineSeconds, limitFor }).then((b) => ({ ...b, files: new Map() })),
    credential: (fields) => fields.get("key")?.trim() || null,
    allowance: (limitKb) => (boundary ? base64Bytes(limitKb) : formBytes(limitKb)) + OVERHEAD,
    noCredential: withKeyHint,
  }).catch((e) => Promise.reject(asKeyError(e)));
  c.set("caller", caller); // a body `key` or a guest: the access log names who sent it
  c.set("bytesIn", body.bytesRead ?? 0);
  try {
    if (body.fields.has("format")) format.value = formatOf(body.fields.get("format"));
    // a key the server never read (after the source) must not turn its sender into a guest
    if (caller.kind === "guest" && body.fields.get("key")?.trim()) {
      throw new DialectError("unauthorized", `The key came after the source: ${keyHint}.`, CODE_KEY);
    }
    const fields = validate(Fields, { album_id: body.fields.get("album_id") || undefined });
    const expiredAt = expirationOf(body.fields.get("expiration"), deps.clock());
    const imgbb = !body.files.has("source") && (body.files.has("image") || (!body.fields.has("source") && body.fields.has("image")));
    const name = body.fields.get("name");
    const part = body.files.get("source") ?? body.files.get("image");
    let file: { filename: string; contentType: string; bytes: Uint8Array };
    if (part) {
      file = name?.trim() ? { ...part, filename: named(name, extensionOf(part.filename)) } : part;
    } else {
      const text = body.fields.get("source") ?? body.fields.get("image");
      if (text === undefined) throw new DialectError("bad_request", "Empty upload source.", CODE_EMPTY_SOURCE);
      file = await decodeTextSource(text, caller.group.maxFileSizeKb, name);
    }
    const stored = await uploadImage(deps, {
      caller,
      ip: clientIp(c),
      file,
      albumId: fields.album_id,
      isPublic: true,
      expiredAt,
    });
    const image = cheveretoImage(deps, stored);
    if (format.value === "txt") return c.text(image.url, 200);
    if (format.value === "redirect") return c.redirect(image.url, 302);
    if (imgbb) return c.json({ data: image, success: true, status: 200 } satisfies z.infer<typeof ImgbbUploadResponse>, 200);
    return c.json(
      { status_code: 200, success: { message: "image uploaded", code: 200 }, image, status_txt: "OK" } satisfies z.infer<typeof CheveretoUploadResponse>,
      200,
    );
  } finally {
    await releaseSlot();
  }
}

/** Every refusal in the dialect's envelope (or as text, for txt and redirect), counted as the v1 upload counts its own. */
function refuse(c: Context<AppEnv>, e: unknown, format: Format): Response {
  const deps = c.get("deps");
  let error: AppError;
  let requestId: string | undefined;
  if (e instanceof AppError && e.status < 500) error = e;
  else if (c.req.raw.signal.aborted) error = new AppError("bad_request", "The client closed the connection.");
  else {
    requestId = c.get("requestId");
    logFor(deps).error({ err: e instanceof AppError ? (e.cause ?? e) : e }, `${c.req.method} ${c.req.path} failed`);
    error = e instanceof AppError ? e : new AppError("internal", "Internal server error.");
  }
  const { status, body } = dialectError(error, requestId);
  servicesOf(deps).metrics.uploadsRefused.inc({ reason: refusalReason(e, status) });
  const headers = error.headers ?? {};
  if (format !== "json") return c.text(error.message, status as 400, headers);
  return c.json(body satisfies z.infer<typeof CheveretoError>, status as 400, headers);
}

export function register(app: OpenAPIHono<AppEnv>) {
  app.openAPIRegistry.register("CheveretoUploadForm", CheveretoUploadForm);
  app.openAPIRegistry.register("CheveretoUploadUrlencoded", CheveretoUploadUrlencoded);
  app.openAPIRegistry.registerComponent("securitySchemes", "cheveretoKeyHeader", {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
    description: "A token of this server, as Chevereto 4's API key header (POST /api/1/upload only)",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "cheveretoKeyQuery", {
    type: "apiKey",
    in: "query",
    name: "key",
    description: "A token of this server as Chevereto's and ImgBB's `key` parameter (POST /api/1/upload only; also as a form field before `source`)",
  });
  const handler = async (c: Context<AppEnv>) => {
    const format = { value: "json" as Format };
    try {
      return await handle(c, format);
    } catch (e) {
      return refuse(c, e, format.value);
    }
  };
  app.openapi(route, handler);
  app.post("/api/1/upload/", handler);
}
