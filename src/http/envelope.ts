import type { Context } from "hono";
import type { FieldErrors } from "../errors.ts";

export const ok = <T>(data: T) => ({ status: true as const, message: "success" as const, data });

export const failure = (message: string, errors?: FieldErrors) =>
  errors ? { status: false as const, message, data: null, errors } : { status: false as const, message, data: null };

export const respond = <T>(c: Context, data: T) => c.json(ok(data), 200);
