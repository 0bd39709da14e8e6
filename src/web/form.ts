/**
 * The one reader of the user center's form posts: every form of every page (sign-in, sign-up, sign-out, tokens,
 * images, account) and the session's form-token check read their body here, once per request, with the same bounds:
 *
 * - at most `formLimits.bytes` (64 KB): a larger body, announced or not, is 400 before or as soon as it passes;
 * - within `formLimits.deadlineMs` (30 s) from the first read: a slower body is 408, and the read is cancelled;
 * - `application/x-www-form-urlencoded` (UTF-8) or `multipart/form-data` (a boundary, well formed): anything else
 *   with a body is 415, a malformed body (no or wrong boundary, bad percent-encoding or UTF-8) is 400;
 * - a client that goes away mid-body is 400 (never a 500);
 * - the API's rule on control characters: a field name or value holding one (NUL, C0, DEL, C1) is 422.
 *
 * Files are not part of any form here: a multipart file part is ignored.
 */
import type { Context } from "hono";
import type { Deps } from "../deps.ts";
import { AppError, badRequest, validationError } from "../errors.ts";
import { BodyTimeout, BodyTooLarge, readBodyWithin } from "../http/multipart.ts";

export const formLimits = {
  /** The largest form body: forms carry a few short fields. */
  bytes: 64 * 1024,
  /** How long a form body may take to arrive, from its first read. */
  deadlineMs: 30_000,
};

export type FormFields = Readonly<Record<string, string>>;

const read = new WeakMap<Request, Promise<FormFields>>();

/** The form fields of the request (the first value of a repeated name), read and checked once (see above). */
export function readForm(c: Context): Promise<FormFields> {
  const request = c.req.raw;
  let fields = read.get(request);
  if (!fields) {
    const configured = (c.get("deps") as Deps | undefined)?.config.bodyReadTimeoutSeconds;
    fields = parseForm(request, configured === undefined ? formLimits.deadlineMs : configured * 1000);
    read.set(request, fields);
  }
  return fields;
}

/** One field as text ("" when absent). */
export const formField = (fields: FormFields, name: string) => fields[name] ?? "";

const tooLarge = () => badRequest(`The form is larger than ${formLimits.bytes / 1024} KB.`);
const malformed = () => badRequest("The form could not be read: it is malformed.");
const controlCharacter = /\p{Cc}/u;

async function parseForm(request: Request, deadlineMs: number): Promise<FormFields> {
  const type = (request.headers.get("content-type") ?? "").toLowerCase();
  const bytes = await readBody(request, deadlineMs);
  if (bytes.length === 0 && !type.startsWith("multipart/")) return {};
  let entries: [string, string][];
  if (type.startsWith("application/x-www-form-urlencoded")) {
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      throw malformed();
    }
    try {
      entries = [...new URLSearchParams(text).entries()];
    } catch {
      throw malformed();
    }
  } else if (type.startsWith("multipart/form-data")) {
    if (!/;\s*boundary=/i.test(request.headers.get("content-type") ?? "")) throw badRequest("The form could not be read: its Content-Type names no boundary.");
    let data: FormData;
    try {
      data = await new Response(bytes, { headers: { "content-type": request.headers.get("content-type")! } }).formData();
    } catch {
      throw malformed();
    }
    entries = [];
    for (const [name, value] of data.entries()) if (typeof value === "string") entries.push([name, value]);
  } else {
    throw new AppError("unsupported_media_type", "Send the form as application/x-www-form-urlencoded or multipart/form-data.");
  }
  const fields: Record<string, string> = Object.create(null);
  for (const [name, value] of entries) {
    if (controlCharacter.test(name)) throw validationError({ body: ["A field name must not contain control characters."] });
    if (controlCharacter.test(value)) throw validationError({ [name]: [`The ${name} field must not contain control characters.`] });
    if (!(name in fields)) fields[name] = value;
  }
  return fields;
}

/** The whole body, at most `formLimits.bytes`, within `formLimits.deadlineMs`, in this page's words. */
async function readBody(request: Request, deadlineMs: number) {
  if (request.bodyUsed) throw malformed();
  try {
    return await readBodyWithin(request, { limit: formLimits.bytes, deadlineMs });
  } catch (e) {
    if (e instanceof BodyTooLarge) throw tooLarge();
    if (e instanceof BodyTimeout)
      throw new AppError("request_timeout", `The form did not arrive within ${Math.max(1, Math.round(deadlineMs / 1000))} seconds.`);
    if (e instanceof AppError && e.status === 400) throw badRequest("The form did not arrive completely: the connection ended.");
    throw e;
  }
}
