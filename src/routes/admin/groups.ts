import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { type GroupWithStrategies, listGroups, saveGroup } from "../../db/repositories/groups.ts";
import { deleteSessionsOfGroup } from "../../db/repositories/sessions.ts";
import { getStrategies } from "../../db/repositories/strategies.ts";
import type { Db } from "../../db/client.ts";
import { notFound, validationError } from "../../errors.ts";
import { toCamel, toSnake } from "../../http/case.ts";
import { respond } from "../../http/envelope.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { envelope } from "../../http/schemas.ts";
import type { AppEnv } from "../../http/types.ts";
import { adminRoute, Group, GroupInput, idParam, jsonBody, pageFields, pageOf, pageQuery } from "./common.ts";
import * as stripMetadata from "./strip-metadata.ts";

const GroupResponse = envelope(Group, "GroupResponse");

function toOutput(g: GroupWithStrategies) {
  const { createdAt: _, strategyIds, ...rest } = g;
  return { ...toSnake(rest), strategy_ids: strategyIds } as z.infer<typeof Group>;
}

async function checkStrategies(db: Db, ids: number[] | undefined) {
  if (!ids) return;
  if (new Set(ids).size !== ids.length) throw validationError({ strategy_ids: ["The strategy_ids must not repeat."] });
  const found = await getStrategies(db, ids);
  if (found.length !== ids.length) throw validationError({ strategy_ids: ["Every strategy id must exist."] });
}

async function save(db: Db, id: number | null, input: z.infer<typeof GroupInput>) {
  const { strategy_ids, ...fields } = input;
  await checkStrategies(db, strategy_ids);
  const values = toCamel(fields);
  if (values.reviewProvider === "webhook" && !values.reviewWebhookUrl && id === null) {
    throw validationError({ review_webhook_url: ["A webhook review needs review_webhook_url."] });
  }
  return saveGroup(db, id, values, strategy_ids);
}

export function register(app: OpenAPIHono<AppEnv>) {
  // the group's strip batch (issue 17 §1) lives in a file of its own
  stripMetadata.register(app);
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/groups",
      operationId: "adminListGroups",
      summary: "List user groups",
      description:
        "A page of the user groups by id (`page`, `per_page` up to 500, default 100), each with its flags, limits and ordered strategy ids. The guest group (`is_guest`) applies to callers without a token.",
      request: { query: pageQuery },
      responses: {
        ...okResponse(envelope(z.object({ groups: z.array(Group), ...pageFields }), "GroupListResponse"), "A page of groups"),
        ...errorResponses(401, 422, 500),
      },
    }),
    async (c) => {
      const { page, per_page } = c.req.valid("query");
      const { rows, total } = await listGroups(c.get("deps").db, per_page, (page - 1) * per_page);
      return respond(c, { groups: rows.map(toOutput), ...pageOf(page, per_page, total) });
    },
  );
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/groups",
      operationId: "adminCreateGroup",
      summary: "Create a user group",
      description: "Creates a user group. Omitted limits take their defaults (10 MB per image, 100 MP, 1 GB capacity, no frequency or concurrency limit, no retention ceiling, no content review).",
      request: { body: jsonBody(GroupInput.required({ name: true }).openapi("CreateGroupInput")) },
      responses: { ...okResponse(GroupResponse, "The group"), ...errorResponses(400, 401, 415, 422, 500) },
    }),
    async (c) => {
      const group = await save(c.get("deps").db, null, c.req.valid("json"));
      return respond(c, toOutput(group!));
    },
  );
  app.openapi(
    adminRoute({
      method: "patch",
      path: "/api/admin/groups/{id}",
      operationId: "adminUpdateGroup",
      summary: "Change a user group (flags, limits, ordered strategies)",
      description:
        "Changes the named fields. `strategy_ids` replaces the ordered strategy list (automatic uploads try them in this order); `null` on a limit removes it. A group left disabled or without API access ends its users' signed-in sessions.",
      request: { params: idParam, body: jsonBody(GroupInput) },
      responses: { ...okResponse(GroupResponse, "The group"), ...errorResponses(400, 401, 404, 415, 422, 500) },
    }),
    async (c) => {
      const { db } = c.get("deps");
      const group = await save(db, c.req.valid("param").id, c.req.valid("json"));
      if (!group) throw notFound("Group not found.");
      // its accounts can no longer sign in: their sessions end, so that enabling the group again does not revive them
      if (!group.enabled || !group.allowApi) await deleteSessionsOfGroup(db, group.id);
      return respond(c, toOutput(group));
    },
  );
}
