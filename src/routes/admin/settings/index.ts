/** The administration of settings: one file per operation. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../../http/types.ts";
import * as getSettings from "./get-settings.ts";
import * as updateSettings from "./update-settings.ts";

/** In this order: the order of the operations in the spec. */
const operations = [getSettings, updateSettings];

export function register(app: OpenAPIHono<AppEnv>) {
  for (const operation of operations) operation.register(app);
}
