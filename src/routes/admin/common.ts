import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { bearerToken, clientIp, guardedAuth } from "../../http/auth.ts";
import { auditDetail, TOKEN_ACTOR, writeAudit } from "../../services/audit.ts";
import { unauthorized } from "../../errors.ts";
import { supportedExtensions } from "../../images/formats.ts";
import { METADATA_POLICIES } from "../../images/metadata/policy.ts";
import { CONVERT_FORMATS } from "../../images/process.ts";
import { GROUP_STRATEGIES_MAX } from "../../db/repositories/strategies.ts";
import { sameSecretHash, sha256Hex } from "../../services/secrets.ts";
import type { AppEnv } from "../../http/types.ts";
import { INT4_MAX, intField } from "../../http/validation.ts";
import { servicesOf } from "../../services/index.ts";

/**
 * Administration answers only to ADMIN_TOKEN; it is not subject to the site-wide API switch. Every change that
 * succeeds is written to the audit log (services/audit.ts): by ADMIN_TOKEN, or by the administrator whose admin page
 * made the call in-process.
 */
export const requireAdmin: MiddlewareHandler<AppEnv> = async (c, next) => {
  // an admin page's in-process call acts for its signed-in administrator: no token, no address throttle
  const internalActor = c.get("internalActor");
  if (!internalActor) {
    const header = c.req.header("authorization");
    if (header === undefined) throw unauthorized("Administration requires 'Authorization: Bearer <ADMIN_TOKEN>'.");
    await guardedAuth(c, true, () => {
      if (!sameSecretHash(sha256Hex(bearerToken(header) ?? ""), sha256Hex(c.get("deps").config.adminToken))) {
        throw unauthorized("Invalid admin token.");
      }
    });
  }
  const deps = c.get("deps");
  const changes = c.req.method !== "GET" && c.req.method !== "HEAD";
  const actor = changes ? (internalActor ?? { userId: null, label: TOKEN_ACTOR, ip: clientIp(c) }) : null;
  // the body was read whole by the /api middleware: a copy of it costs nothing more
  const sent =
    changes && c.req.raw.body
      ? await c.req.raw
          .clone()
          .json()
          .catch(() => null)
      : null;
  await next();
  if (!changes) return;
  // settings, users, groups, strategies and tokens decide authentication: this instance sees a change at once
  servicesOf(deps).lookups.clear();
  if (c.res.status >= 400) return;
  const route = c.req.routePath.replace(/:(\w+)/g, "{$1}");
  await writeAudit(deps.db, {
    actor: actor!,
    action: `${c.req.method} ${route}`,
    targetType: route.split("/")[3] ?? "",
    targetId: c.req.param("id") ?? c.req.param("key") ?? "",
    detail: { ...auditDetail(sent), ...c.get("auditNote") },
    at: deps.clock(),
  });
};

/** An administration operation: its tag, the admin-token security and the middleware that enforces it. */
export const adminRoute = <P extends string, R extends Omit<RouteConfig, "path" | "tags" | "security" | "middleware"> & { path: P }>(route: R) =>
  createRoute({ ...route, tags: ["Administration"], security: [{ adminToken: [] }], middleware: [requireAdmin] as const });

/** A record id: decimal digits naming a PostgreSQL `integer`; anything else (1e3, 0x10, 1.5, 99999999999) is a 422. */
export const idParam = z.object({
  id: intField(1, INT4_MAX).openapi({ param: { name: "id", in: "path", example: 1 }, type: "integer", minimum: 1, maximum: INT4_MAX, example: 1 }),
});

/** Every administration list is a page: `page` from 1, `per_page` 1–500 (default 100). */
const ADMIN_PER_PAGE = { default: 100, max: 500 } as const;

export const pageQuery = z.object({
  page: intField(1, 1_000_000).default(1).openapi({ type: "integer", minimum: 1, maximum: 1_000_000, default: 1, description: "Page number", example: 1 }),
  per_page: intField(1, ADMIN_PER_PAGE.max)
    .default(ADMIN_PER_PAGE.default)
    .openapi({ type: "integer", minimum: 1, maximum: ADMIN_PER_PAGE.max, default: ADMIN_PER_PAGE.default, description: "Items per page", example: 100 }),
});

/** The paging fields beside a list's items. */
export const pageFields = {
  current_page: z.number().int().openapi({ example: 1 }),
  last_page: z.number().int().openapi({ example: 1 }),
  per_page: z.number().int().openapi({ example: 100 }),
  total: z.number().int().openapi({ description: "Number of items over all pages", example: 1 }),
};

/** The paging fields of page `page` of `total` items, `perPage` a page. */
export const pageOf = (page: number, perPage: number, total: number) => ({
  current_page: page,
  last_page: Math.max(1, Math.ceil(total / perPage)),
  per_page: perPage,
  total,
});

export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { "application/json": { schema } },
});

/** The group's metadata policy, as the spec describes it. */
export const metadataPolicy = z.enum(METADATA_POLICIES).openapi({
  description:
    "What of an upload's metadata is stored and served. `keep`: the bytes exactly as sent. `strip_location` (the default): " +
    "removes the EXIF GPS position, XMP packets, IPTC/Photoshop blocks, C2PA/JUMBF boxes, multi-picture data and anything after " +
    "the end of the image; the rest of the EXIF stays. `strip_all`: also the rest of the EXIF (camera and lens serials, maker " +
    "notes, dates, owner names, embedded previews), comments and text chunks. Both keep the orientation and the ICC profile. " +
    "JPEG, PNG, WebP and GIF are stripped losslessly (segments and chunks removed; the pixels decode identically); AVIF is cleaned in " +
    "place at the same length (the Exif item rewritten, XMP blanked; the coded image untouched). TIFF cannot be stripped losslessly here and is " +
    "stored as sent under every policy (no re-encode), as is a file that cannot be walked. Refusals (format, size, pixels) are decided on the upload as sent; `size`, `md5`, `sha1`, quotas and capacity " +
    "are of the stored bytes.",
  example: "strip_location",
});

/** The processing-on-upload fields, beside `metadata`. */
const processing = {
  convert_format: z
    .enum(CONVERT_FORMATS)
    .nullable()
    .openapi({
      description:
        "Processing on upload (off while this, `max_width`, `max_height` and `jpeg_max_quality` are all null): convert every upload in another format to " +
        "this one at `convert_quality`. An animation (GIF or WebP of several frames) converts only to `webp` (animated); to `avif` or `jpeg` it keeps " +
        "its own format, never only its first frame. An upload already in this format is not re-encoded for the conversion's sake. Refusals (format, " +
        "size, pixels) are decided on the upload as sent, before any processing; the response (`mimetype`, `extension`, `name`, `pathname`, `url`, " +
        "`size`, dimensions, hashes) describes the stored result, `origin_name` stays the uploaded name. null: no conversion.",
      example: "webp",
    }),
  convert_quality: z.number().int().min(1).max(100).openapi({
    description: "Quality (1-100) of a conversion, and of a WebP or AVIF re-encoded because it was downscaled. Default 80.",
    example: 80,
  }),
  max_width: z.number().int().min(1).max(INT4_MAX).nullable().openapi({
    description: "Downscale (never enlarge) an upload wider than this, keeping its aspect ratio (every frame of an animation). null: no bound.",
    example: 2560,
  }),
  max_height: z.number().int().min(1).max(INT4_MAX).nullable().openapi({
    description: "Downscale (never enlarge) an upload taller than this, keeping its aspect ratio. null: no bound.",
    example: 2560,
  }),
  jpeg_max_quality: z
    .number()
    .int()
    .min(1)
    .max(100)
    .nullable()
    .openapi({
      description:
        "Re-encode a JPEG whose quality, estimated from its quantization tables, is above this, at this quality; kept only when smaller than the " +
        "JPEG as sent (unless it is also downscaled). With `convert_format: jpeg`, `convert_quality` caps it too. null: no quality cap.",
      example: 85,
    }),
};

/** The group's webhook grant (services/webhooks.ts allowListFor; docs/decisions/webhook-owner-scope.md). */
const webhookAllowInternal = z.boolean().openapi({
  description:
    "Lets the members' own webhook endpoints reach the internal hosts and ranges the operator lists in WEBHOOK_ALLOW (which otherwise open to " +
    "site-wide endpoints only). Off by default: a member's endpoint must resolve to public addresses only. Checked when an endpoint is saved " +
    "and again at every delivery, so switching it off stops such deliveries at once.",
  example: false,
});

/** Limits are stored as PostgreSQL `integer`. */
const nullableLimit = z.number().int().min(1).max(INT4_MAX).nullable();

export const GroupInput = z
  .object({
    name: z.string().min(1).max(100),
    enabled: z.boolean(),
    allow_api: z.boolean(),
    is_default: z.boolean().openapi({ description: "New users join the default group" }),
    max_file_size_kb: z.number().int().min(1).max(1_048_576),
    allowed_extensions: z.array(z.enum(supportedExtensions)).min(1),
    max_pixels: z.number().int().min(1).max(1_000_000_000),
    uploads_per_minute: nullableLimit,
    uploads_per_hour: nullableLimit,
    uploads_per_day: nullableLimit,
    uploads_per_week: nullableLimit,
    uploads_per_month: nullableLimit,
    concurrent_uploads: nullableLimit,
    retention_max_seconds: nullableLimit.openapi({ description: "Longest `expired_at` allowed, in seconds from now; null = no ceiling" }),
    default_capacity_kb: z.number().int().min(0),
    review_provider: z.enum(["none", "webhook"]),
    review_webhook_url: z.url().nullable(),
    review_timeout_ms: z.number().int().min(100).max(60_000),
    review_fail_open: z.boolean().openapi({ description: "Accept the image when the review webhook fails or times out" }),
    metadata: metadataPolicy,
    ...processing,
    webhook_allow_internal: webhookAllowInternal,
    strategy_ids: z
      .array(z.number().int().positive().max(INT4_MAX))
      .max(GROUP_STRATEGIES_MAX, `A group lists at most ${GROUP_STRATEGIES_MAX} strategies`)
      .openapi({ description: `Ordered: automatic uploads try them in this order (at most ${GROUP_STRATEGIES_MAX})` }),
  })
  .partial()
  .openapi("GroupInput");

export const Group = z
  .object({
    id: z.number().int(),
    name: z.string(),
    is_guest: z.boolean(),
    is_default: z.boolean(),
    enabled: z.boolean(),
    allow_api: z.boolean(),
    max_file_size_kb: z.number().int(),
    allowed_extensions: z.array(z.string()),
    max_pixels: z.number().int(),
    uploads_per_minute: z.number().int().nullable(),
    uploads_per_hour: z.number().int().nullable(),
    uploads_per_day: z.number().int().nullable(),
    uploads_per_week: z.number().int().nullable(),
    uploads_per_month: z.number().int().nullable(),
    concurrent_uploads: z.number().int().nullable(),
    retention_max_seconds: z.number().int().nullable(),
    default_capacity_kb: z.number().int(),
    review_provider: z.enum(["none", "webhook"]),
    review_webhook_url: z.string().nullable(),
    review_timeout_ms: z.number().int(),
    review_fail_open: z.boolean(),
    metadata: metadataPolicy,
    ...processing,
    webhook_allow_internal: webhookAllowInternal,
    strategy_ids: z.array(z.number().int()),
  })
  .openapi("Group");

export const StrategyInput = z
  .object({
    name: z.string().min(1).max(100),
    driver: z.enum(["local", "s3"]),
    config: z.record(z.string(), z.unknown()).openapi({
      description:
        "local: `{root?, url?, legacy_url?}` (defaults DATA_DIR/uploads and BASE_URL/i); s3: `{bucket, url, endpoint?, region?, access_key_id?, secret_access_key?, prefix?, legacy_url?}`. `legacy_url`: a former public prefix of the objects (an imported Lsky Pro strategy's), whose addresses answer 301 to the current ones",
    }),
    quota_kb: z.number().int().min(0).nullable().openapi({ description: "null = unlimited" }),
    enabled: z.boolean(),
  })
  .partial()
  .openapi("StrategyInput");

export const AdminStrategy = z
  .object({
    id: z.number().int(),
    name: z.string(),
    driver: z.enum(["local", "s3"]),
    config: z.record(z.string(), z.unknown()),
    quota_kb: z.number().int().nullable(),
    used_kb: z.number(),
    enabled: z.boolean(),
  })
  .openapi("AdminStrategy");

export const AdminUser = z
  .object({
    id: z.number().int(),
    username: z.string(),
    name: z.string(),
    email: z.string(),
    group_id: z.number().int(),
    enabled: z.boolean(),
    capacity_kb: z.number().int().nullable().openapi({ description: "null = the group's default capacity" }),
    used_kb: z.number(),
    image_num: z.number().int(),
    album_num: z.number().int(),
    registered_ip: z.string(),
    role: z.enum(["user", "admin"]).openapi({ description: "`admin` may use the site's admin pages" }),
  })
  .openapi("AdminUser");
