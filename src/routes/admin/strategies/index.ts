/** The administration of strategies: one file per operation. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../../http/types.ts";
import * as listStrategies from "./list-strategies.ts";
import * as createStrategy from "./create-strategy.ts";
import * as updateStrategy from "./update-strategy.ts";
import * as testStrategy from "./test-strategy.ts";

/** In this order: the order of the operations in the spec. */
const operations = [listStrategies, createStrategy, updateStrategy, testStrategy];

export function register(app: OpenAPIHono<AppEnv>) {
  for (const operation of operations) operation.register(app);
}
