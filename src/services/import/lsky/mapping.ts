/**
 * How Lsky Pro's records translate into ours, as pure functions: a group's configuration, a strategy's, an
 * account's name, an image's stored path. What cannot be carried is said, never dropped without a word.
 */
import { formats, isSupportedExtension } from "../../../images/formats.ts";
import type { ConvertFormat, groups } from "../../../db/schema.ts";
import { localConfigSchema, s3ConfigSchema } from "../../../storage/index.ts";
import type { LskyGroup, LskyStrategy } from "./source.ts";

/** Lsky's storage drivers by their key (app/Enums/StrategyKey.php). */
export const LSKY_DRIVERS: Record<number, string> = {
  1: "local",
  2: "AWS S3",
  3: "Aliyun OSS",
  4: "Tencent COS",
  5: "Qiniu Kodo",
  6: "Upyun USS",
  7: "SFTP",
  8: "FTP",
  9: "WebDAV",
  10: "MinIO",
};

type NewGroup = typeof groups.$inferInsert;

const num = (v: unknown): number | null => {
  const n = Number(v);
  return v === null || v === undefined || v === "" || !Number.isFinite(n) ? null : n;
};
/** A Lsky limit: 0 (or absent) is "no limit" (ImageService::rateLimiter checks `$value && $count >= $value`). */
const limit = (v: unknown): number | null => {
  const n = num(v);
  return n === null || n <= 0 ? null : Math.min(Math.floor(n), 2_147_483_647);
};

/**
 * Our group's values from a Lsky group's `configs` (config/convention.php's keys). Lsky's settings we do not have
 * are listed in `dropped`, each once, so the report can name them.
 */
export function groupValues(g: LskyGroup, defaultCapacityKb: number | null): { values: Omit<NewGroup, "id">; dropped: string[] } {
  const c = g.configs;
  const dropped: string[] = [];
  const suffixes = Array.isArray(c.accepted_file_suffixes) ? c.accepted_file_suffixes.map((s) => String(s).toLowerCase()) : null;
  const allowed = suffixes ? [...new Set(suffixes.filter(isSupportedExtension))] : null;
  const unsupported = suffixes ? suffixes.filter((s) => !isSupportedExtension(s)) : [];
  if (unsupported.length > 0) dropped.push(`formats ${unsupported.join(", ")} (not served here)`);
  const maxFileSizeKb = limit(c.maximum_file_size);
  const saveFormat = String(c.image_save_format ?? "").toLowerCase();
  let convertFormat: ConvertFormat | null = null;
  if (saveFormat === "webp" || saveFormat === "jpeg" || saveFormat === "jpg") convertFormat = saveFormat === "webp" ? "webp" : "jpeg";
  else if (saveFormat) dropped.push(`conversion to ${saveFormat}`);
  const quality = num(c.image_save_quality);
  if (c.is_enable_watermark && Number(c.is_enable_watermark)) dropped.push("watermark");
  if (c.is_enable_scan && Number(c.is_enable_scan)) dropped.push("content scanning (use the group's review webhook)");
  if (c.is_enable_original_protection && Number(c.is_enable_original_protection)) dropped.push("original protection");
  return {
    values: {
      name: (g.name || `Lsky group ${g.id}`).slice(0, 100),
      isDefault: g.isDefault,
      isGuest: g.isGuest,
      enabled: true,
      allowApi: true,
      ...(maxFileSizeKb !== null ? { maxFileSizeKb } : {}),
      ...(allowed ? { allowedExtensions: allowed } : {}),
      uploadsPerMinute: limit(c.limit_per_minute),
      uploadsPerHour: limit(c.limit_per_hour),
      uploadsPerDay: limit(c.limit_per_day),
      uploadsPerWeek: limit(c.limit_per_week),
      uploadsPerMonth: limit(c.limit_per_month),
      concurrentUploads: limit(c.concurrent_upload_num),
      ...(defaultCapacityKb !== null ? { defaultCapacityKb } : {}),
      convertFormat,
      ...(convertFormat && quality !== null && quality >= 1 && quality <= 100 ? { convertQuality: Math.round(quality) } : {}),
    },
    dropped,
  };
}

/** The public address prefix a Lsky strategy served at, without its trailing slashes ("" when none). */
export const lskyUrlOf = (s: LskyStrategy) => String(s.configs.url ?? "").replace(/\/+$/, "");

export type StrategyPlan =
  | { ok: true; driver: "local"; config: Record<string, unknown>; root: string; legacyUrl: string | null; notes: string[] }
  | { ok: true; driver: "s3"; config: Record<string, unknown>; notes: string[] }
  | { ok: false; reason: string };

/**
 * Our strategy for a Lsky one. Local: the files are read from `sourceRoot` and kept in `targetRoot` (undefined: our
 * DATA_DIR/uploads), served at BASE_URL/i; a Lsky address prefix other than that becomes the strategy's
 * `legacy_url`, whose addresses answer 301 to ours. S3 and MinIO: the same bucket, keys and public prefix, so the
 * objects stay where they are and their addresses do not change. Other drivers have no driver here.
 */
export function strategyPlan(s: LskyStrategy, sourceRoot: string, targetRoot: string | undefined, baseUrl: string): StrategyPlan {
  const c = s.configs;
  const url = lskyUrlOf(s);
  if (s.key === 1) {
    const ours = `${baseUrl.replace(/\/+$/, "")}/i`;
    const legacyUrl = url && url !== ours ? url : null;
    const config: Record<string, unknown> = {};
    if (targetRoot) config.root = targetRoot;
    if (legacyUrl) {
      if (!localConfigSchema.shape.legacy_url.safeParse(legacyUrl).success)
        return { ok: false, reason: `its address prefix ${JSON.stringify(url)} is not a URL` };
      config.legacy_url = legacyUrl;
    }
    return { ok: true, driver: "local", config, root: sourceRoot, legacyUrl, notes: [] };
  }
  if (s.key === 2 || s.key === 10) {
    const minio = s.key === 10;
    const notes: string[] = [];
    const config = Object.fromEntries(
      Object.entries({
        bucket: String(c.bucket ?? ""),
        endpoint: String(c.endpoint ?? "") || undefined,
        region: String(c.region ?? "") || (minio ? "us-east-1" : undefined),
        access_key_id: String((minio ? c.access_key : c.access_key_id) ?? "") || undefined,
        secret_access_key: String((minio ? c.secret_key : c.secret_access_key) ?? "") || undefined,
        url: url || undefined,
      }).filter(([, v]) => v !== undefined),
    );
    if (minio && c.bucket_endpoint && Number(c.bucket_endpoint)) notes.push("its endpoint named the bucket (bucket_endpoint): check the imported endpoint");
    const parsed = s3ConfigSchema.strict().safeParse(config);
    if (!parsed.success) {
      const what = parsed.error.issues.map((i) => `${i.path.join(".") || "config"}: ${i.message}`).join("; ");
      return { ok: false, reason: `its ${LSKY_DRIVERS[s.key]} configuration is incomplete here (${what})` };
    }
    return { ok: true, driver: "s3", config, notes };
  }
  return { ok: false, reason: `driver ${LSKY_DRIVERS[s.key] ?? `#${s.key}`} has no driver here (local and S3-compatible only)` };
}

/** Our usernames: 2–64 letters, digits, '_', '.' or '-' (the admin API's rule). */
const USERNAME = /^[A-Za-z0-9_.-]{2,64}$/;

/**
 * Candidate usernames for a Lsky account (Lsky has none: `name` is a display name, the sign-in is the email): its
 * name when it is one, else the email's local part cleaned, else `lsky-<id>`; each later one with `-<id>` appended.
 */
export function usernameCandidates(name: string, email: string, id: number): string[] {
  const cleaned = (s: string) =>
    s
      .normalize("NFKD")
      .replace(/[^A-Za-z0-9_.-]+/g, "-")
      .replace(/^[-.]+|[-.]+$/g, "")
      .slice(0, 56);
  const out: string[] = [];
  if (USERNAME.test(name)) out.push(name);
  const local = cleaned(email.split("@")[0] ?? "");
  if (USERNAME.test(local)) out.push(local);
  const fromName = cleaned(name);
  if (USERNAME.test(fromName)) out.push(fromName);
  for (const c of [...out]) out.push(`${c.slice(0, 56)}-${id}`);
  out.push(`lsky-${id}`);
  return [...new Set(out)];
}

/** A Laravel bcrypt hash ($2y$, or $2a$/$2b$), which Bun.password verifies as written. */
export const isBcrypt = (hash: string) => /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/.test(hash);

/** What the address `/i/<path>` may hold (routes/site/serve-object.ts serves nothing else). */
export const servablePath = (path: string) => /^[A-Za-z0-9_./-]{1,300}$/.test(path) && !path.split("/").some((p) => p === "" || p === "." || p === "..");

/** Lsky's pathname (Image::pathname): `path/name`, or the name alone. */
export const lskyPathname = (path: string, name: string) => (path ? `${path.replace(/^\/+|\/+$/g, "")}/${name}` : name);

/** The media type we store for an extension the bytes were found to be. */
export function canonicalMime(extension: string): string | null {
  return isSupportedExtension(extension) ? formats[extension] : null;
}

/** Whether the sniffed type is what the extension says (an animated PNG is a PNG). */
export function contentMatches(extension: string, sniffed: string | null): boolean {
  const expected = canonicalMime(extension);
  if (!expected || !sniffed) return false;
  return sniffed === expected || (expected === "image/png" && sniffed === "image/apng");
}

/** Whether an email looks like one (our accounts need one, unique). */
export const plausibleEmail = (email: string) => /^[^\s@]{1,64}@[^\s@]{1,255}$/.test(email) && email.length <= 254;
