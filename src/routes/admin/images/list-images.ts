import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { validationError } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { toImageResource } from "../../../http/image-resource.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { dateTime, envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { INT4_MAX, intField } from "../../../http/validation.ts";
import { adminImageListQuery, countAdminImages, type AdminImageFilter } from "../../../db/repositories/admin-images.ts";
import { adminRoute, pageFields, pageOf } from "../common.ts";

/** The page size of the list: at most 100 images (their thumbnails) a page. */
const ADMIN_IMAGES_PER_PAGE = { default: 30, max: 100 } as const;

/** The largest size bound, in KB (1 TiB): far above any upload, and within a bigint of bytes. */
const KB_MAX = 1_073_741_824;

export const AdminImage = z
  .object({
    key: z.string().openapi({ example: "Qm7cX2kP9aLr4TzB" }),
    pathname: z.string().openapi({ description: "The object's path in its strategy's storage", example: "2026/11/22/x1Hq9ZL0cV2mN4bR7tWs.png" }),
    origin_name: z.string().openapi({ example: "screenshot.png" }),
    size: z.number().openapi({ description: "KB (may be fractional)", example: 120.5 }),
    mimetype: z.string().openapi({ example: "image/png" }),
    width: z.number().int(),
    height: z.number().int(),
    is_public: z.boolean(),
    created_at: dateTime,
    expired_at: dateTime.nullable().openapi({ description: "When the image is removed; null = never" }),
    user_id: z.number().int().nullable().openapi({ description: "The owner; null for a guest's upload", example: 3 }),
    username: z.string().nullable().openapi({ description: "The owner's username; null for a guest's upload", example: "alice" }),
    strategy_id: z.number().int().openapi({ example: 1 }),
    strategy_name: z.string().openapi({ example: "Local" }),
    url: z.string().openapi({ example: "https://img.example.com/i/2026/11/22/x1Hq9ZL0cV2mN4bR7tWs.png" }),
    thumbnail_url: z.string().openapi({ description: "The thumbnail's address, or the image's own when it has none" }),
  })
  .openapi("AdminImage");

const day = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, "must be a date as YYYY-MM-DD")
  .refine((v) => dayStart(v) !== null, "must be a real date")
  .openapi({ type: "string", format: "date", example: "2026-11-22" });

const kb = intField(0, KB_MAX).optional().openapi({ type: "integer", minimum: 0, maximum: KB_MAX });

const ListQuery = z.object({
  page: intField(1, 1_000_000).default(1).openapi({ type: "integer", minimum: 1, maximum: 1_000_000, default: 1, description: "Page number", example: 1 }),
  per_page: intField(1, ADMIN_IMAGES_PER_PAGE.max).default(ADMIN_IMAGES_PER_PAGE.default).openapi({
    type: "integer",
    minimum: 1,
    maximum: ADMIN_IMAGES_PER_PAGE.max,
    default: ADMIN_IMAGES_PER_PAGE.default,
    description: "Items per page",
    example: 30,
  }),
  user_id: intField(1, INT4_MAX).optional().openapi({ type: "integer", minimum: 1, maximum: INT4_MAX, description: "Only this user's images", example: 3 }),
  guests: z
    .enum(["true", "false"])
    .optional()
    .openapi({ description: "`true`: only guests' images (uploaded without an account); not with `user_id`", example: "true" }),
  strategy_id: intField(1, INT4_MAX)
    .optional()
    .openapi({ type: "integer", minimum: 1, maximum: INT4_MAX, description: "Only images stored by this strategy", example: 1 }),
  from: day.optional().openapi({ description: "Only images uploaded on this UTC day or later", example: "2026-11-01" }),
  to: day.optional().openapi({ description: "Only images uploaded on this UTC day or earlier", example: "2026-11-30" }),
  min_kb: kb.openapi({ description: "Only images of at least this many KB", example: 10 }),
  max_kb: kb.openapi({ description: "Only images of at most this many KB", example: 5120 }),
  visibility: z.enum(["public", "private"]).optional().openapi({ description: "Only public or only private images", example: "public" }),
});

const ImageListResponse = envelope(z.object({ images: z.array(AdminImage), ...pageFields }), "AdminImageListResponse");

const DAY_MS = 86_400_000;

/** The first instant of a UTC day `YYYY-MM-DD`, or null when there is no such day (2026-02-30). */
function dayStart(value: string): Date | null {
  const [y, m, d] = value.split("-").map(Number) as [number, number, number];
  const date = new Date(Date.UTC(2000, 0, 1));
  date.setUTCFullYear(y, m - 1, d);
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d ? date : null;
}

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/images",
      operationId: "adminListImages",
      summary: "List every image (users' and guests')",
      description:
        "A page of all the site's images, newest first (ties by upload order), with each one's owner (null for a guest's upload) and strategy. " +
        "Filters, all optional and combined: `user_id` or `guests=true`, `strategy_id`, `from`/`to` (UTC days of `created_at`, both included), " +
        "`min_kb`/`max_kb` (both included), `visibility`. `per_page` up to 100 (default 30); `total` counts every page.",
      request: { query: ListQuery },
      responses: {
        ...okResponse(ImageListResponse, "A page of images"),
        ...errorResponses(401, 422, 500),
      },
    }),
    async (c) => {
      const q = c.req.valid("query");
      const errors: Record<string, string[]> = {};
      if (q.user_id !== undefined && q.guests === "true") errors.guests = ["The guests field cannot be combined with user_id: guests' images have no user."];
      if (q.from && q.to && q.from > q.to) errors.to = ["The to field must be the same day as from or later."];
      if (q.min_kb !== undefined && q.max_kb !== undefined && q.min_kb > q.max_kb) errors.max_kb = ["The max_kb field must be at least min_kb."];
      if (Object.keys(errors).length) throw validationError(errors);
      const filter: AdminImageFilter = {
        owner: q.guests === "true" ? null : q.user_id,
        strategyId: q.strategy_id,
        from: q.from ? dayStart(q.from)! : undefined,
        before: q.to ? new Date(dayStart(q.to)!.getTime() + DAY_MS) : undefined,
        minBytes: q.min_kb === undefined ? undefined : q.min_kb * 1024,
        maxBytes: q.max_kb === undefined ? undefined : q.max_kb * 1024,
        visibility: q.visibility,
      };
      const deps = c.get("deps");
      const [rows, total] = await Promise.all([adminImageListQuery(deps.db, filter, q.per_page, (q.page - 1) * q.per_page), countAdminImages(deps.db, filter)]);
      return respond(c, {
        images: rows.map(({ image, strategy, user }) => {
          const r = toImageResource(image, strategy, deps.storage, deps.config.baseUrl);
          return {
            key: r.key,
            pathname: r.pathname,
            origin_name: r.origin_name,
            size: r.size,
            mimetype: r.mimetype,
            width: r.width,
            height: r.height,
            is_public: r.is_public,
            created_at: r.created_at,
            expired_at: r.expired_at,
            user_id: image.userId,
            username: user?.username ?? null,
            strategy_id: strategy.id,
            strategy_name: strategy.name,
            url: r.url,
            thumbnail_url: r.thumbnail_url,
          };
        }),
        ...pageOf(q.page, q.per_page, total),
      });
    },
  );
}
