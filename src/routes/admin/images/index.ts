/**
 * Every image of the site for administrators: a filtered page of all of them, users' and guests', and the
 * delete of any one with the guarantees of the API's own delete (services/delete.ts).
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../../http/types.ts";
import * as listImages from "./list-images.ts";
import * as deleteImage from "./delete-image.ts";

/** In this order: the order of the operations in the spec. */
const operations = [listImages, deleteImage];

export function register(app: OpenAPIHono<AppEnv>) {
  for (const operation of operations) operation.register(app);
}
