import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { INT4_MAX } from "../../../http/validation.ts";
import { STRIP_BATCH_MAX, type StripBatch, stripMetadataBatch } from "../../../services/strip-metadata.ts";
import { adminRoute, idParam, jsonBody, metadataPolicy } from "../common.ts";

const StripMetadataInput = z
  .object({
    dry_run: z.boolean().optional().openapi({ description: "Report what would change without writing anything" }),
    after_id: z
      .number()
      .int()
      .min(0)
      .max(INT4_MAX)
      .optional()
      .openapi({ description: "Resume after this image id (the previous batch's `next_after_id`); default 0" }),
    limit: z
      .number()
      .int()
      .min(1)
      .max(STRIP_BATCH_MAX)
      .optional()
      .openapi({ description: `Images in this batch (default 100, at most ${STRIP_BATCH_MAX})` }),
  })
  .strict()
  .openapi("StripMetadataInput");

const StripMetadataItem = z
  .object({
    id: z.number().int(),
    key: z.string(),
    pathname: z.string().openapi({ description: "The object's path: unchanged, so the image keeps its address" }),
    action: z.enum(["changed", "skipped"]).openapi({ description: "`changed`: the object was replaced (with `dry_run`: would be)" }),
    reason: z.string().nullable().openapi({ description: "Why it was skipped (or what else was done); null for a plain change" }),
    removed: z
      .array(z.string())
      .openapi({ description: 'What was removed: "EXIF GPS", "EXIF", "XMP", "IPTC", "trailing data"…', example: ["EXIF GPS", "XMP"] }),
    size_before: z.number().int().openapi({ description: "Bytes of the stored object before" }),
    size_after: z.number().int().openapi({ description: "Bytes after (charged to the account and the strategy)" }),
  })
  .openapi("StripMetadataItem");

const StripMetadataBatch = z
  .object({
    group_id: z.number().int(),
    policy: metadataPolicy,
    dry_run: z.boolean(),
    changed: z.number().int().min(0),
    skipped: z.number().int().min(0),
    items: z.array(StripMetadataItem),
    next_after_id: z.number().int().nullable().openapi({ description: "Pass as `after_id` for the next batch; null: this batch reached the last image" }),
  })
  .openapi("StripMetadataBatch");

const toOutput = (b: StripBatch): z.infer<typeof StripMetadataBatch> => ({
  group_id: b.groupId,
  policy: b.policy,
  dry_run: b.dryRun,
  changed: b.items.filter((i) => i.action === "changed").length,
  skipped: b.items.filter((i) => i.action === "skipped").length,
  items: b.items.map((i) => ({
    id: i.id,
    key: i.key,
    pathname: i.path,
    action: i.action,
    reason: i.reason,
    removed: i.removed,
    size_before: i.sizeBefore,
    size_after: i.sizeAfter,
  })),
  next_after_id: b.nextAfterId,
});

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/groups/{id}/strip-metadata",
      operationId: "adminStripGroupMetadata",
      summary: "Apply a group's metadata policy to its existing images (one batch)",
      description:
        "Applies the group's `metadata` policy to the images its accounts already have (for the guest group: the images " +
        "without an account), in id order after `after_id`, at most `limit` of them. Each image keeps its address: its object " +
        "is replaced at the same path, and its size and hashes and the account's and strategy's used space are updated in " +
        "the transaction that holds the image during the swap. `bun run cli images strip-metadata` calls this in a loop.",
      request: { params: idParam, body: jsonBody(StripMetadataInput) },
      responses: {
        ...okResponse(envelope(StripMetadataBatch, "StripMetadataBatchResponse"), "What the batch changed and skipped"),
        ...errorResponses(400, 401, 404, 415, 422, 500),
      },
    }),
    async (c) => {
      const body = c.req.valid("json");
      const batch = await stripMetadataBatch(c.get("deps"), {
        groupId: c.req.valid("param").id,
        dryRun: body.dry_run === true,
        afterId: body.after_id ?? 0,
        limit: body.limit ?? 100,
      });
      return respond(c, toOutput(batch));
    },
  );
}
