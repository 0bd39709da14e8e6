/**
 * Every image of the site for administrators (issue 18): a filtered page of all of them, users' and guests', and the
 * delete of any one with the guarantees of the API's own delete (services/delete.ts).
 */
import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, desc, eq, gte, isNull, lt, lte, or, type SQL, sql } from "drizzle-orm";
import type { Executor } from "../../db/client.ts";
import { images, strategies, users } from "../../db/schema.ts";
import type { Deps } from "../../deps.ts";
import { AppError, notFound, validationError } from "../../errors.ts";
import { respond } from "../../http/envelope.ts";
import { toImageResource } from "../../http/image-resource.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { dateTime, EmptyResponse, envelope } from "../../http/schemas.ts";
import type { AppEnv } from "../../http/types.ts";
import { INT4_MAX, intField } from "../../http/validation.ts";
import { deleteImage, removeImage } from "../../services/delete.ts";
import { finishRemovals } from "../../services/removals.ts";
import { adminRoute, pageFields, pageOf } from "./common.ts";
import { servicesOf } from "../../services/index.ts";

/** The page size of the list: at most 100 images (their thumbnails) a page. */
export const ADMIN_IMAGES_PER_PAGE = { default: 30, max: 100 } as const;
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
  per_page: intField(1, ADMIN_IMAGES_PER_PAGE.max)
    .default(ADMIN_IMAGES_PER_PAGE.default)
    .openapi({ type: "integer", minimum: 1, maximum: ADMIN_IMAGES_PER_PAGE.max, default: ADMIN_IMAGES_PER_PAGE.default, description: "Items per page", example: 30 }),
  user_id: intField(1, INT4_MAX).optional().openapi({ type: "integer", minimum: 1, maximum: INT4_MAX, description: "Only this user's images", example: 3 }),
  guests: z.enum(["true", "false"]).optional().openapi({ description: "`true`: only guests' images (uploaded without an account); not with `user_id`", example: "true" }),
  strategy_id: intField(1, INT4_MAX).optional().openapi({ type: "integer", minimum: 1, maximum: INT4_MAX, description: "Only images stored by this strategy", example: 1 }),
  from: day.optional().openapi({ description: "Only images uploaded on this UTC day or later", example: "2026-11-01" }),
  to: day.optional().openapi({ description: "Only images uploaded on this UTC day or earlier", example: "2026-11-30" }),
  min_kb: kb.openapi({ description: "Only images of at least this many KB", example: 10 }),
  max_kb: kb.openapi({ description: "Only images of at most this many KB", example: 5120 }),
  visibility: z.enum(["public", "private"]).optional().openapi({ description: "Only public or only private images", example: "public" }),
});

const ImageListResponse = envelope(z.object({ images: z.array(AdminImage), ...pageFields }), "AdminImageListResponse");

const keyParam = z.object({
  key: z.string().min(1).max(255).openapi({ param: { name: "key", in: "path", example: "Qm7cX2kP9aLr4TzB" }, example: "Qm7cX2kP9aLr4TzB" }),
});

const DAY_MS = 86_400_000;

/** The first instant of a UTC day `YYYY-MM-DD`, or null when there is no such day (2026-02-30). */
function dayStart(value: string): Date | null {
  const [y, m, d] = value.split("-").map(Number) as [number, number, number];
  const date = new Date(Date.UTC(2000, 0, 1));
  date.setUTCFullYear(y, m - 1, d);
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d ? date : null;
}

/** What the list shows; every field narrows it. */
export interface AdminImageFilter {
  /** A user's id, or null for guests' images. */
  owner?: number | null;
  strategyId?: number;
  /** created_at ≥ this. */
  from?: Date;
  /** created_at < this. */
  before?: Date;
  minBytes?: number;
  maxBytes?: number;
  visibility?: "public" | "private";
}

function filterWhere(filter: AdminImageFilter): SQL | undefined {
  const conditions: SQL[] = [];
  if (filter.owner === null) conditions.push(isNull(images.userId));
  else if (filter.owner !== undefined) conditions.push(eq(images.userId, filter.owner));
  if (filter.strategyId !== undefined) conditions.push(eq(images.strategyId, filter.strategyId));
  if (filter.from) conditions.push(gte(images.createdAt, filter.from));
  if (filter.before) conditions.push(lt(images.createdAt, filter.before));
  if (filter.minBytes !== undefined) conditions.push(gte(images.size, filter.minBytes));
  if (filter.maxBytes !== undefined) conditions.push(lte(images.size, filter.maxBytes));
  if (filter.visibility) conditions.push(eq(images.isPublic, filter.visibility === "public"));
  return conditions.length ? and(...conditions) : undefined;
}

/**
 * A page of every image, newest first (ties by id, so pages never overlap), with its strategy and owner. With an owner
 * (a user or the guests) the order and the date range are those of images_owner_created_idx (user_id, created_at, id)
 * scanned backwards: the page is read from the index, no sort (test/admin-pages-data.test.ts checks the plans). Across
 * owners no index has created_at first: the rows that pass the filters are read and the page picked by a top-N sort,
 * which keeps LIMIT + OFFSET rows in memory (per_page ≤ 100).
 */
export function adminImageListQuery(db: Executor, filter: AdminImageFilter, limit: number, offset: number) {
  return db
    .select({ image: images, strategy: strategies, user: { id: users.id, username: users.username } })
    .from(images)
    .innerJoin(strategies, eq(strategies.id, images.strategyId))
    .leftJoin(users, eq(users.id, images.userId))
    .where(filterWhere(filter))
    // with an owner, user_id leads the order too (one value: the same order), so that `user_id is null`, which the
    // planner does not take for a constant as it does `user_id = 3`, is also read in the index's order
    .orderBy(...(filter.owner === undefined ? [] : [sql`${images.userId} desc nulls first`]), desc(images.createdAt), desc(images.id))
    .limit(limit)
    .offset(offset);
}

/** How many images the filter lets through, in one statement. */
export async function countAdminImages(db: Executor, filter: AdminImageFilter): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(images).where(filterWhere(filter));
  return row?.n ?? 0;
}

/**
 * Deletes any image by key (or stored file name) with the guarantees of DELETE /api/v1/images/{key}: an owner's through
 * deleteImage itself; a guest's by the same steps (record, quota and the objects' removal queued in one transaction
 * under the row's lock, the objects removed after the commit or by the removal workers). False when there is none.
 */
export async function deleteAnyImage(deps: Deps, keyOrName: string): Promise<boolean> {
  const [found] = await deps.db
    .select({ key: images.key, userId: images.userId })
    .from(images)
    .where(or(eq(images.key, keyOrName), eq(images.name, keyOrName)))
    .limit(1);
  if (!found) return false;
  if (found.userId !== null) {
    try {
      await deleteImage(deps, found.userId, found.key);
      return true;
    } catch (e) {
      if (e instanceof AppError && e.code === "not_found") return false; // deleted meanwhile
      throw e;
    }
  }
  const queued = await deps.db.transaction(async (tx) => {
    const [image] = await tx.select().from(images).where(and(eq(images.key, found.key), isNull(images.userId))).limit(1).for("update");
    return image ? removeImage(deps, tx, image) : null;
  });
  if (queued === null) return false;
  servicesOf(deps).lookups.forget("strategies:");
  await finishRemovals(deps, queued);
  return true;
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
      const [rows, total] = await Promise.all([
        adminImageListQuery(deps.db, filter, q.per_page, (q.page - 1) * q.per_page),
        countAdminImages(deps.db, filter),
      ]);
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

  app.openapi(
    adminRoute({
      method: "delete",
      path: "/api/admin/images/{key}",
      operationId: "adminDeleteImage",
      summary: "Delete any image",
      description:
        "Deletes a user's or a guest's image by `key` (or its stored file name) with the guarantees of `DELETE /api/v1/images/{key}`: the record, " +
        "the owner's capacity and the strategy's quota in one transaction, the object, its thumbnail and variants removed after the commit " +
        "(or by the removal workers when the storage fails). Cannot be undone. `data` is null.",
      request: { params: keyParam },
      responses: { ...okResponse(EmptyResponse, "Deleted; `data` is null"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      if (!(await deleteAnyImage(c.get("deps"), c.req.valid("param").key))) throw notFound("Image not found.");
      return respond(c, null);
    },
  );
}
