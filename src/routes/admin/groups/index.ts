/** The administration of groups: one file per operation. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../../http/types.ts";
import * as stripGroupMetadata from "./strip-group-metadata.ts";
import * as listGroups from "./list-groups.ts";
import * as createGroup from "./create-group.ts";
import * as updateGroup from "./update-group.ts";

/** In this order: the order of the operations in the spec. */
const operations = [stripGroupMetadata, listGroups, createGroup, updateGroup];

export function register(app: OpenAPIHono<AppEnv>) {
  for (const operation of operations) operation.register(app);
}
