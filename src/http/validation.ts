import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { type FieldErrors, validationError } from "../errors.ts";

function messageFor(field: string, issue: z.core.$ZodIssue): string {
  const label = field || "body";
  if (issue.code === "invalid_type" && /received undefined/.test(issue.message)) {
    return `The ${label} field is required.`;
  }
  return `The ${label} field is invalid: ${issue.message}.`;
}

export function fieldErrors(error: z.ZodError): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of error.issues) {
    const field = issue.path.map(String).join(".");
    (errors[field || "body"] ??= []).push(messageFor(field, issue));
  }
  return errors;
}

/** Control characters (C0, DEL, C1): PostgreSQL refuses NUL in text, and none belongs in a name, a key or a query. */
const controlCharacter = /\p{Cc}/u;

/**
 * The field of the first string in a validated input (a value, or a key of an object) that holds a control
 * character: its dotted path ("" for the input itself), or null when there is none. Walks arrays and plain
 * objects without recursion, so a deeply nested free-form value (a strategy's `config`) cannot exhaust the stack.
 */
function controlCharacterField(input: unknown): string | null {
  const stack: [unknown, string][] = [[input, ""]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === "string") {
      if (controlCharacter.test(value)) return path;
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => {
        stack.push([v, path ? `${path}.${i}` : String(i)]);
      });
    } else if (value !== null && typeof value === "object" && [Object.prototype, null].includes(Object.getPrototypeOf(value))) {
      for (const [k, v] of Object.entries(value)) {
        if (controlCharacter.test(k)) return path;
        stack.push([v, path ? `${path}.${k}` : k]);
      }
    }
  }
  return null;
}

/** Refuses (422) a validated input holding a control character in any string. */
function refuseControlCharacters(data: unknown) {
  const field = controlCharacterField(data);
  if (field !== null) {
    const label = field || "body";
    throw validationError({ [label]: [`The ${label} field must not contain control characters.`] });
  }
}

/**
 * The validation hook of every route: a failed zod check becomes the contract's 422, and so does a string
 * holding a control character in a validated path, query or body (a NUL would otherwise reach PostgreSQL).
 */
export const validationHook = (result: { success: boolean; error?: unknown; data?: unknown }) => {
  if (!result.success) throw validationError(fieldErrors(result.error as z.ZodError));
  refuseControlCharacters(result.data);
};

export function validate<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw validationError(fieldErrors(parsed.error));
  refuseControlCharacters(parsed.data);
  return parsed.data;
}

/** The largest value of PostgreSQL's `integer` (int4): ids and counters above it cannot exist. */
export const INT4_MAX = 2_147_483_647;

/** An integer field sent as a JSON number or as a decimal string (query, form). */
export const intField = (min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === "string" && /^\s*-?\d+\s*$/.test(v) ? Number(v) : v),
    z
      .number({ error: (i) => (i.input === undefined ? undefined : "must be an integer") })
      .int("must be an integer")
      .min(min, `must be at least ${min}`)
      .max(max, `must be at most ${max}`),
  );

/** Fields of a small JSON, urlencoded or multipart body (no files), for routes that accept all three. */
export async function readFields(c: Context): Promise<Record<string, unknown>> {
  const type = (c.req.header("content-type") ?? "").toLowerCase();
  if (type.startsWith("application/json") || type.includes("+json")) {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      throw validationError({ body: ["The body is not valid JSON."] });
    }
    if (body === null || typeof body !== "object" || Array.isArray(body)) {
      throw validationError({ body: ["The body must be a JSON object."] });
    }
    return body as Record<string, unknown>;
  }
  if (type.startsWith("application/x-www-form-urlencoded") || type.startsWith("multipart/form-data")) {
    try {
      return (await c.req.parseBody()) as Record<string, unknown>;
    } catch {
      throw validationError({ body: ["The form body could not be parsed."] });
    }
  }
  return {};
}
