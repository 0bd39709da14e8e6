import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { dateTime, envelope, Strategy } from "../../../http/schemas.ts";
import { formatDateTime } from "../../../http/time.ts";
import type { AppEnv } from "../../../http/types.ts";
import { type ReconcileReport, REPORT_LIST_LIMIT, reconcileStorage } from "../../../services/reconcile/index.ts";
import { adminRoute } from "../common.ts";

const count = z.number().int().min(0);

const listed = `at most ${REPORT_LIST_LIMIT} entries; the count beside it is complete`;

const LocationReconciliation = z
  .object({
    strategies: z.array(Strategy).openapi({ description: "The strategies stored in this location (several may share one root or bucket)" }),
    driver: z.enum(["local", "s3"]),
    objects_scanned: count,
    recent_objects: count.openapi({ description: "Younger than the grace period: not judged yet" }),
    unrecognised_objects: count.openapi({ description: "Named unlike anything this service writes: never removed" }),
    orphans_found: count.openapi({ description: "Objects no record names, older than the grace period" }),
    orphans_removed: count,
    orphans: z.array(z.string()).openapi({ description: `Paths of the orphans found (${listed})`, example: ["2026/11/22/x1Hq9ZL0cV2mN4bR7tWs.png"] }),
    parts_found: count.openapi({
      description: "Temporary files of abandoned writes (`*.part`) and readiness probes left behind (`.probe/ready-*.txt`), older than the grace period",
    }),
    parts_removed: count,
    records_missing_object: count.openapi({ description: "Records whose object or thumbnail is missing (reported, never deleted)" }),
    missing_objects: z.array(z.object({ key: z.string(), path: z.string() })).openapi({ description: `The image key and the missing path (${listed})` }),
    errors: z.array(z.string()).openapi({ description: `Storage failures met on the way (at most ${REPORT_LIST_LIMIT} entries)` }),
  })
  .openapi("LocationReconciliation");

const Reconciliation = z
  .object({
    dry_run: z.boolean(),
    skipped: z.boolean().openapi({ description: "Another reconciliation was running (on this or another instance): nothing was scanned" }),
    grace_seconds: count.openapi({ description: "Objects younger than this are never removed: an upload stores its objects before its record", example: 3600 }),
    started_at: dateTime,
    duration_ms: count,
    locations: z.array(LocationReconciliation),
  })
  .openapi("Reconciliation");

const reportOnly = "Report without removing anything";

const ReconcileInput = z
  .object({ dry_run: z.boolean().optional().openapi({ description: reportOnly }) })
  .strict()
  .openapi("ReconcileInput");

const toOutput = (r: ReconcileReport): z.infer<typeof Reconciliation> => ({
  dry_run: r.dryRun,
  skipped: r.skipped,
  grace_seconds: r.graceSeconds,
  started_at: formatDateTime(r.startedAt),
  duration_ms: r.durationMs,
  locations: r.locations.map((l) => ({
    strategies: l.strategies,
    driver: l.driver,
    objects_scanned: l.objectsScanned,
    recent_objects: l.recentObjects,
    unrecognised_objects: l.unrecognisedObjects,
    orphans_found: l.orphansFound,
    orphans_removed: l.orphansRemoved,
    orphans: l.orphans,
    parts_found: l.partsFound,
    parts_removed: l.partsRemoved,
    records_missing_object: l.recordsMissingObject,
    missing_objects: l.missingObjects,
    errors: l.errors,
  })),
});

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/storage/reconcile",
      operationId: "adminReconcileStorage",
      summary: "Reconcile stored objects with the image records",
      description:
        "Lists every storage location and compares its objects with the image records. Objects no record names and " +
        "temporary files of abandoned writes are removed once older than the grace period (an upload stores its objects " +
        "before its record commits); records whose object is missing are reported, never deleted. The server also runs " +
        "this at start and every RECONCILE_INTERVAL_SECONDS. `dry_run` (query or body; either one true) reports without removing.",
      request: {
        query: z.object({ dry_run: z.enum(["true", "false"]).optional().openapi({ description: reportOnly, example: "true" }) }),
        body: { required: false, content: { "application/json": { schema: ReconcileInput } } },
      },
      responses: {
        ...okResponse(envelope(Reconciliation, "ReconciliationResponse"), "What the run found and did"),
        ...errorResponses(400, 401, 415, 422, 500),
      },
    }),
    async (c) => {
      const query = c.req.valid("query").dry_run;
      const dryRun = query === "true" || c.req.valid("json").dry_run === true;
      return respond(c, toOutput(await reconcileStorage(c.get("deps"), { dryRun })));
    },
  );
}
