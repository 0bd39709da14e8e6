/** What the Chevereto/ImgBB dialect answers, and how it reads its `source` and `expiration` (docs/decisions/chevereto-imgbb-dialect.md). */
import type { Deps } from "../../deps.ts";
import { AppError, badRequest, validationError } from "../../errors.ts";
import { toImageResource } from "../../http/image-resource.ts";
import { formatDateTime } from "../../http/time.ts";
import { describeContent, formats } from "../../images/formats.ts";
import { sniffMime } from "../../images/inspect.ts";
import { tagRefusal } from "../../observability/metrics.ts";
import type { StoredImage } from "../../services/upload/input.ts";
import { extensionOf } from "../../services/upload/input.ts";

const reasons: Record<number, string> = {
  200: "OK",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  408: "Request Timeout",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** Chevereto's codes where it has one for the same refusal. */
export const CODE_KEY = 100;
export const CODE_BASE64 = 120;
export const CODE_EMPTY_SOURCE = 130;

/** A refusal in the dialect: its HTTP status, Chevereto's code and this server's error code. */
export class DialectError extends AppError {
  constructor(
    code: AppError["code"],
    message: string,
    readonly dialectCode: number,
  ) {
    super(code, message);
  }
}

/** The error envelope of Chevereto and ImgBB. This server's 422 (a field's value) is Chevereto's 400. */
export function dialectError(e: AppError, requestId?: string) {
  const status = e.status === 422 ? 400 : e.status;
  return {
    status,
    body: {
      status_code: status,
      error: { message: e.message, code: e instanceof DialectError ? e.dialectCode : status, context: e.code },
      status_txt: reasons[status] ?? "Error",
      ...(requestId ? { request_id: requestId } : {}),
    },
  };
}

const gmt = (d: Date) => d.toISOString().slice(0, 19).replace("T", " ");
const withoutExtension = (name: string) => {
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(0, dot) : name;
};
const baseName = (path: string) => path.slice(path.lastIndexOf("/") + 1);

/** The image object both answers carry: Chevereto's fields and ImgBB's in one, from what the upload stored. */
export function cheveretoImage(deps: Deps, { image, strategy }: StoredImage) {
  const resource = toImageResource(image, strategy, deps.storage, deps.config.baseUrl);
  const variantOf = (path: string, url: string) => {
    const filename = baseName(path);
    const extension = extensionOf(filename);
    return { filename, name: withoutExtension(filename), mime: formats[extension as keyof typeof formats] ?? image.mimetype, extension, url };
  };
  const itself = variantOf(image.path, resource.url);
  return {
    id: image.key,
    id_encoded: image.key,
    name: withoutExtension(image.name),
    extension: image.extension,
    filename: image.name,
    original_filename: image.originName,
    title: withoutExtension(image.originName),
    description: null,
    mime: image.mimetype,
    size: image.size,
    width: image.width,
    height: image.height,
    md5: image.md5,
    nsfw: 0 as const,
    date: formatDateTime(image.createdAt),
    date_gmt: gmt(image.createdAt),
    time: Math.floor(image.createdAt.getTime() / 1000),
    expiration: image.expiredAt ? Math.max(0, Math.round((image.expiredAt.getTime() - image.createdAt.getTime()) / 1000)) : 0,
    expiration_date_gmt: image.expiredAt ? gmt(image.expiredAt) : null,
    url: resource.url,
    url_viewer: resource.url,
    display_url: resource.url,
    delete_url: resource.delete_url,
    image: itself,
    thumb: image.thumbnailPath ? variantOf(image.thumbnailPath, resource.thumbnail_url) : itself,
    medium: itself,
  };
}

/** The extension a sniffed type is stored under. */
const extensionFor: Record<string, string> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/avif": "avif",
  "image/tiff": "tiff",
};

const DATA_URI = /^data:[\w.+-]+\/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const URL_SOURCE = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * A `source` sent as text: base64 of the image. The length is checked against the caller's per-image limit before
 * anything is decoded; the name is ImgBB's `name` (or "image") with the extension of what the content is.
 */
export async function decodeTextSource(text: string, limitKb: number, name: string | undefined) {
  const trimmed = text.trim();
  if (trimmed === "") throw new DialectError("bad_request", "Empty upload source.", CODE_EMPTY_SOURCE);
  if (URL_SOURCE.test(trimmed)) {
    throw new DialectError("bad_request", "Uploading from a URL is not supported here: send the file itself, or its base64.", CODE_EMPTY_SOURCE);
  }
  const encoded = trimmed.replace(DATA_URI, "").replace(/\s+/g, "");
  if (encoded.length > Math.ceil((limitKb * 1024) / 3) * 4) {
    throw tagRefusal(badRequest(`The file is larger than the limit of ${limitKb} KB.`), "too_large");
  }
  if (encoded === "" || encoded.length % 4 !== 0 || !BASE64.test(encoded)) {
    throw new DialectError("bad_request", "Invalid base64 string: send the file itself, or its standard base64 (padded).", CODE_BASE64);
  }
  const bytes = new Uint8Array(Buffer.from(encoded, "base64"));
  const sniffed = await sniffMime(bytes);
  const extension = sniffed ? extensionFor[sniffed] : undefined;
  if (!extension) {
    throw tagRefusal(
      badRequest(`The base64 source is ${sniffed ? describeContent(sniffed) : "not an image this server recognises"}, not a supported image.`),
      "format",
    );
  }
  return { filename: named(name, extension), contentType: "", bytes };
}

/** `name` with `extension` added unless it already ends with it (or an alias of it: .jpeg for .jpg). */
export function named(name: string | undefined, extension: string): string {
  const base = name?.trim() || "image";
  const own = extensionOf(base);
  const same = own === extension || formats[own as keyof typeof formats] === formats[extension as keyof typeof formats];
  return own && same ? base : `${base}.${extension}`;
}

const DURATION = /^P(?!$)(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/i;
const MAX_EXPIRATION_SECONDS = 100 * 365 * 86_400;

/**
 * `expiration`: seconds (ImgBB) or an ISO 8601 duration (Chevereto: `PT5M`, `P3D`), counted from `now` on the
 * calendar as Chevereto does. Undefined when absent; 400 when it is neither or not in the future.
 */
export function expirationOf(value: string | undefined, now: Date): Date | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  const invalid = () => validationError({ expiration: ["The expiration field is invalid: use seconds (86400) or an ISO 8601 duration (P1D, PT5M)."] });
  if (/^\d{1,12}$/.test(v)) {
    const seconds = Number(v);
    if (seconds < 1 || seconds > MAX_EXPIRATION_SECONDS) throw invalid();
    return new Date(now.getTime() + seconds * 1000);
  }
  const m = DURATION.exec(v);
  if (!m) throw invalid();
  const [y, mo, w, d, h, mi, s] = m.slice(1).map((n) => Number(n ?? 0)) as number[];
  if (y! > 100 || mo! > 1200 || w! > 5300 || d! > 36_500 || h! > 876_000 || mi! > 52_560_000 || s! > MAX_EXPIRATION_SECONDS) throw invalid();
  const at = new Date(now.getTime());
  at.setUTCFullYear(at.getUTCFullYear() + y!, at.getUTCMonth() + mo!, at.getUTCDate() + w! * 7 + d!);
  at.setTime(at.getTime() + ((h! * 60 + mi!) * 60 + s!) * 1000);
  if (at.getTime() <= now.getTime()) throw invalid();
  return at;
}
