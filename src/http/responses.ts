import type { z } from "@hono/zod-openapi";
import { ErrorEnvelope, ValidationError } from "./schemas.ts";

const errorDescriptions = {
  400: ["A business rule refused the request, or the body is malformed or larger than allowed", "Insufficient capacity."],
  401: ["Missing, malformed, wrong, revoked or expired credential", "Unauthenticated."],
  403: [
    "API disabled site-wide, account or group disabled, API not allowed for the group, or a temporary token beyond upload",
    "The API is disabled on this site.",
  ],
  404: ["Not found, or not owned by the caller (the two look the same)", "Image not found."],
  408: ["The request body did not arrive within the read deadline", "The request body was not received within 60 seconds."],
  415: ["The request body is not in a supported media type", "Unsupported Media Type."],
  429: [
    "Too many failed authentications from this client address: the credential was not checked. Retry after the `Retry-After` header's seconds (each address may fail 30 times at once, then once every 2 seconds)",
    "Too many failed authentications from your address: retry in 2 s.",
  ],
  500: ["Storage or server failure; the message carries no internals", "Internal server error."],
  503: [
    "A service-wide cap is reached (uploads being received, images being processed) or the database does not answer: nothing was done; retry after the `Retry-After` header's seconds when it is given",
    "Service unavailable.",
  ],
} as const;

type ErrorStatus = keyof typeof errorDescriptions | 422;

/** The header of a refusal that waiting can lift. */
export const retryAfter = { "Retry-After": { description: "Seconds to wait", schema: { type: "integer" } } } as const;

/** The error answers of an operation, each with the envelope schema and an example. Where a credential is checked (401), failures are throttled (429). */
export function errorResponses<const S extends ErrorStatus[]>(...statuses: S) {
  const out: Record<number, unknown> = {};
  const all: ErrorStatus[] = statuses.includes(401) ? [...statuses, 429] : statuses;
  for (const status of all) {
    if (status === 422) {
      out[422] = {
        description: "A field is missing, has the wrong type or is out of range; see `errors`",
        content: {
          "application/json": {
            schema: ValidationError,
            example: {
              status: false,
              message: "The per_page field is invalid: must be at most 100.",
              data: null,
              errors: { per_page: ["The per_page field is invalid: must be at most 100."] },
            },
          },
        },
      };
      continue;
    }
    const [description, message] = errorDescriptions[status];
    out[status] = {
      description,
      ...(status === 429 ? { headers: retryAfter } : {}),
      content: {
        "application/json": {
          schema: ErrorEnvelope,
          example: { status: false, message, data: null, ...(status === 500 ? { request_id: "b3f1c2d4" } : {}) },
        },
      },
    };
  }
  return out as {
    [K in S[number] | (401 extends S[number] ? 429 : never)]: { description: string; content: { "application/json": { schema: typeof ErrorEnvelope } } };
  };
}

export function okResponse<T extends z.ZodType>(schema: T, description: string) {
  return { 200: { description, content: { "application/json": { schema } } } };
}

type SecurityRequirement = Record<string, string[]>;
/** A bearer token, or none (guest). Declared with a wide type: an inline `{}` breaks the handler's input types. */
export const bearerOrGuest: SecurityRequirement[] = [{ bearerAuth: [] }, {}];
