/** The administration of tokens: one file per operation. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../../http/types.ts";
import * as createToken from "./create-token.ts";
import * as listTokens from "./list-tokens.ts";
import * as revokeToken from "./revoke-token.ts";

/** In this order: the order of the operations in the spec. */
const operations = [createToken, listTokens, revokeToken];

export function register(app: OpenAPIHono<AppEnv>) {
  for (const operation of operations) operation.register(app);
}
