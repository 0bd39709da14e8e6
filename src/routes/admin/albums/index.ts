/** Albums, as administrators make them for a user. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../../http/types.ts";
import * as createAlbum from "./create-album.ts";

/** In this order: the order of the operations in the spec. */
const operations = [createAlbum];

export function register(app: OpenAPIHono<AppEnv>) {
  for (const operation of operations) operation.register(app);
}
