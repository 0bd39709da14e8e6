import { AppError, badRequest } from "../errors.ts";

interface FilePart {
  filename: string;
  /** The Content-Type the client declared for the part ("" when absent). */
  contentType: string;
  bytes: Uint8Array;
}

interface MultipartBody {
  fields: Map<string, string>;
  files: Map<string, FilePart>;
  /** Bytes of the body as received (readStagedMultipart). */
  bytesRead?: number;
}

const wholeBodies = new WeakSet<Request>();

/** Whether this request's body was read to its end by one of the readers here (a refusal of any other closes its connection). */
export const bodyReadWhole = (request: Request) => wholeBodies.has(request);
/** Records that a reader outside this file read this request's body to its end. */
export const markReadWhole = (request: Request) => void wholeBodies.add(request);

export class BodyTooLarge extends AppError {
  constructor(readonly limitBytes: number) {
    super("bad_request", "The request body is too large.");
  }
}

/**
 * Reads a whole request body within its bounds: BodyTooLarge as soon as it passes `limit` bytes (announced by
 * Content-Length or not), BodyTimeout when it has not arrived within `deadlineMs`, and a plain 400 when the client
 * goes away mid-body — never a 500. A client cannot make the server buffer more, or wait longer, than that.
 */
export async function readBodyWithin(request: Request, bounds: { limit: number; deadlineMs: number }): Promise<Buffer<ArrayBuffer>> {
  const declared = Number(request.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > bounds.limit) throw new BodyTooLarge(bounds.limit);
  if (!request.body) return Buffer.alloc(0);
  const reader = request.body.getReader();
  const deadline = Date.now() + bounds.deadlineMs;
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await readBefore(reader, deadline, bounds.deadlineMs);
      if (done) {
        wholeBodies.add(request);
        break;
      }
      total += value.byteLength;
      if (total > bounds.limit) throw new BodyTooLarge(bounds.limit);
      chunks.push(value);
    }
  } catch (e) {
    await reader.cancel().catch(() => {});
    throw e instanceof AppError ? e : clientGone();
  }
  return Buffer.concat(chunks, total);
}

export const clientGone = () => badRequest("The request body ended early: the connection was closed.");

/** A stalled sender: the body did not arrive within the read deadline. */
export class BodyTimeout extends AppError {
  readonly seconds: number;
  constructor(deadlineMs: number) {
    const seconds = Math.max(1, Math.round(deadlineMs / 1000));
    super("request_timeout", `The request body was not received within ${seconds} second${seconds === 1 ? "" : "s"}.`);
    this.seconds = seconds;
  }
}

interface StagedRead {
  boundary: string;
  /** Most bytes read before the file part begins while the sender is still unknown. */
  preludeLimit: number;
  /** Called once, with the fields sent before the file part: authenticates and answers how many bytes this sender may send in all. */
  limitFor(fieldsBeforeFile: Map<string, string>): Promise<number>;
  /** The whole body must arrive within this many seconds. */
  deadlineSeconds: number;
}

/**
 * Reads a multipart upload without trusting its sender: only the small parts before the file part are read
 * (at most `preludeLimit` bytes) until `limitFor` has authenticated the sender from them or refused it; then
 * the rest, stopping as soon as the sender's own limit is passed or the deadline expires.
 */
export async function readStagedMultipart(request: Request, read: StagedRead): Promise<MultipartBody> {
  if (!request.body) return parseMultipart(new Uint8Array(0), read.boundary);
  const reader = request.body.getReader();
  const deadline = Date.now() + read.deadlineSeconds * 1000;
  const chunks: Uint8Array[] = [];
  let total = 0;
  let limit: number | null = null;
  const settleLimit = async (buffered: Buffer) => {
    limit = await read.limitFor(scanPrelude(buffered, read.boundary).fields);
    const declared = Number(request.headers.get("content-length"));
    if (Number.isFinite(declared) && declared > limit) throw new BodyTooLarge(limit);
  };
  try {
    for (;;) {
      const { done, value } = await readBefore(reader, deadline, read.deadlineSeconds * 1000);
      if (done) {
        wholeBodies.add(request);
        break;
      }
      chunks.push(value);
      total += value.byteLength;
      if (limit === null) {
        const buffered = Buffer.concat(chunks, total);
        if (total > read.preludeLimit || scanPrelude(buffered, read.boundary).fileStart !== null) {
          await settleLimit(buffered);
        }
      }
      if (limit !== null && total > limit) throw new BodyTooLarge(limit);
    }
    const body = Buffer.concat(chunks, total);
    if (limit === null) await settleLimit(body);
    return { ...parseMultipart(body, read.boundary), bytesRead: total };
  } catch (e) {
    await reader.cancel().catch(() => {});
    // anything but our own refusals is the stream failing: the client went away mid-body, not a server error
    throw e instanceof AppError ? e : clientGone();
  }
}

export async function readBefore(reader: ReadableStreamDefaultReader<Uint8Array>, deadline: number, deadlineMs: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BodyTimeout(deadlineMs)), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([reader.read(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The fields of the complete parts at the start of a (possibly partial) body, up to the first file part,
 * and where that file part starts (null while its headers have not arrived).
 */
function scanPrelude(buf: Buffer, boundary: string): { fields: Map<string, string>; fileStart: number | null } {
  const delimiter = Buffer.from(`--${boundary}`);
  const fields = new Map<string, string>();
  let pos = buf.indexOf(delimiter);
  while (pos >= 0) {
    const start = pos;
    const headersAt = buf.indexOf(CRLF, pos + delimiter.length);
    if (headersAt < 0) break;
    const headerEnd = buf.indexOf(HEADER_END, headersAt);
    if (headerEnd < 0) break;
    const disposition = headerParams(parseHeaders(buf.subarray(headersAt + 2, headerEnd).toString("utf8")).get("content-disposition") ?? "");
    if (dispositionParam(disposition, "filename*") !== null || dispositionParam(disposition, "filename") !== null) {
      return { fields, fileStart: start };
    }
    const next = buf.indexOf(Buffer.from(`\r\n--${boundary}`), headerEnd + 4);
    if (next < 0) break;
    const name = dispositionParam(disposition, "name");
    if (name !== null && !fields.has(name)) fields.set(name, buf.subarray(headerEnd + 4, next).toString("utf8"));
    pos = next + 2;
  }
  return { fields, fileStart: null };
}

export function boundaryOf(contentType: string | undefined): string | null {
  if (!contentType || !/^multipart\/form-data\s*;/i.test(contentType)) return null;
  const b = headerParams(contentType).get("boundary");
  // RFC 2046 allows 70 characters, and a space only inside quotes
  return b && b.raw.length >= 1 && b.raw.length <= 200 && (b.quoted || !/\s/.test(b.raw)) ? b.raw : null;
}

const CRLF = Buffer.from("\r\n");
const HEADER_END = Buffer.from("\r\n\r\n");

/** Parses a buffered multipart/form-data body (RFC 7578), keeping each part's declared Content-Type. */
export function parseMultipart(body: Uint8Array, boundary: string): MultipartBody {
  const buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const delimiter = Buffer.from(`--${boundary}`);
  const fields = new Map<string, string>();
  const files = new Map<string, FilePart>();
  const malformed = () => badRequest("Malformed multipart/form-data body.");

  let pos = buf.indexOf(delimiter);
  if (pos < 0) throw malformed();
  for (;;) {
    pos += delimiter.length;
    if (buf[pos] === 0x2d && buf[pos + 1] === 0x2d) break; // closing delimiter "--"
    if (buf.indexOf(CRLF, pos) !== pos) {
      // tolerate transport padding (spaces/tabs) after the delimiter
      const eol = buf.indexOf(CRLF, pos);
      if (eol < 0 || buf.subarray(pos, eol).toString("latin1").trim() !== "") throw malformed();
      pos = eol;
    }
    pos += 2;
    const headerEnd = buf.indexOf(HEADER_END, pos);
    if (headerEnd < 0) throw malformed();
    const headers = parseHeaders(buf.subarray(pos, headerEnd).toString("utf8"));
    const contentStart = headerEnd + 4;
    const next = buf.indexOf(Buffer.from(`\r\n--${boundary}`), contentStart);
    if (next < 0) throw malformed();
    const content = buf.subarray(contentStart, next);
    pos = next + 2;

    const disposition = headerParams(headers.get("content-disposition") ?? "");
    const name = dispositionParam(disposition, "name");
    if (name === null) throw malformed();
    const filename = dispositionParam(disposition, "filename*") ?? dispositionParam(disposition, "filename");
    if (filename !== null) {
      if (!files.has(name)) {
        files.set(name, {
          filename: filename,
          contentType: (headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase(),
          bytes: new Uint8Array(content),
        });
      }
    } else if (!fields.has(name)) {
      fields.set(name, content.toString("utf8"));
    }
  }
  return { fields, files };
}

function parseHeaders(block: string): Map<string, string> {
  const headers = new Map<string, string>();
  for (const line of block.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return headers;
}

interface Param {
  raw: string;
  quoted: boolean;
}

/**
 * The parameters of a header value (`type; a=b; c="d"`) by lower-cased name, the first of each kept.
 * A quoted value is read whole, so a `;` or `name=` inside a quoted filename cannot start a parameter.
 */
function headerParams(header: string): Map<string, Param> {
  const params = new Map<string, Param>();
  const re = /(?:\s*;)+\s*([^\s=;]+)\s*(?:=\s*(?:"((?:[^"\\]|\\.)*)"[^;]*|([^;]*)))?/y;
  re.lastIndex = Math.max(0, header.indexOf(";"));
  for (let m = re.exec(header); m; m = re.exec(header)) {
    const name = m[1]!.toLowerCase();
    if (params.has(name) || (m[2] === undefined && m[3] === undefined)) continue;
    params.set(name, m[2] !== undefined ? { raw: m[2], quoted: true } : { raw: m[3]!.trim(), quoted: false });
  }
  return params;
}

function dispositionParam(params: Map<string, Param>, param: string): string | null {
  const p = params.get(param);
  if (!p) return null;
  if (param.endsWith("*")) {
    // RFC 5987: charset'lang'percent-encoded
    const parts = /^([^']*)'[^']*'(.*)$/.exec(p.raw);
    if (!parts) return null;
    try {
      return decodeURIComponent(parts[2]!);
    } catch {
      return null;
    }
  }
  if (p.quoted) {
    // browsers percent-encode only these three (WHATWG multipart/form-data); a backslash before a
    // quote is a quoted-pair, any other backslash is literal (old browsers send C:\path\name.png)
    return p.raw.replace(/\\"/g, '"').replace(/%22/gi, '"').replace(/%0D/gi, "\r").replace(/%0A/gi, "\n");
  }
  return p.raw;
}
