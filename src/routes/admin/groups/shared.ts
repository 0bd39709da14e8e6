import type { z } from "@hono/zod-openapi";
import { type GroupWithStrategies, saveGroup } from "../../../db/repositories/groups.ts";
import { getStrategies } from "../../../db/repositories/strategies.ts";
import type { Db } from "../../../db/client.ts";
import { validationError } from "../../../errors.ts";
import { toCamel, toSnake } from "../../../http/case.ts";
import { envelope } from "../../../http/schemas.ts";
import { Group, type GroupInput } from "../common.ts";

export const GroupResponse = envelope(Group, "GroupResponse");

export function toOutput(g: GroupWithStrategies) {
  const { createdAt: _, strategyIds, ...rest } = g;
  return { ...toSnake(rest), strategy_ids: strategyIds } as z.infer<typeof Group>;
}

async function checkStrategies(db: Db, ids: number[] | undefined) {
  if (!ids) return;
  if (new Set(ids).size !== ids.length) throw validationError({ strategy_ids: ["The strategy_ids must not repeat."] });
  const found = await getStrategies(db, ids);
  if (found.length !== ids.length) throw validationError({ strategy_ids: ["Every strategy id must exist."] });
}

export async function save(db: Db, id: number | null, input: z.infer<typeof GroupInput>) {
  const { strategy_ids, ...fields } = input;
  await checkStrategies(db, strategy_ids);
  const values = toCamel(fields);
  if (values.reviewProvider === "webhook" && !values.reviewWebhookUrl && id === null) {
    throw validationError({ review_webhook_url: ["A webhook review needs review_webhook_url."] });
  }
  return saveGroup(db, id, values, strategy_ids);
}
