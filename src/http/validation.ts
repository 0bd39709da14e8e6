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

/** The validation hook of every route: a failed zod check becomes the contract's 422. */
export const validationHook = (result: { success: boolean; error?: unknown }) => {
  if (!result.success) throw validationError(fieldErrors(result.error as z.ZodError));
};

export function validate<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw validationError(fieldErrors(parsed.error));
  return parsed.data;
}

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
