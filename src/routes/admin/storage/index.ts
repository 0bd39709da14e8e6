/** The administration of storage: one file per operation. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../../http/types.ts";
import * as reconcileStorage from "./reconcile-storage.ts";

/** In this order: the order of the operations in the spec. */
const operations = [reconcileStorage];

export function register(app: OpenAPIHono<AppEnv>) {
  for (const operation of operations) operation.register(app);
}
