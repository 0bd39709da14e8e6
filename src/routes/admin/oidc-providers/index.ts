/** The administration of OpenID Connect providers (docs/single-sign-on.md): one file per operation. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../../http/types.ts";
import * as createOidcProvider from "./create-oidc-provider.ts";
import * as deleteOidcProvider from "./delete-oidc-provider.ts";
import * as getOidcProvider from "./get-oidc-provider.ts";
import * as listOidcProviders from "./list-oidc-providers.ts";
import * as updateOidcProvider from "./update-oidc-provider.ts";

/** In this order: the order of the operations in the spec. */
const operations = [listOidcProviders, createOidcProvider, getOidcProvider, updateOidcProvider, deleteOidcProvider];

export function register(app: OpenAPIHono<AppEnv>) {
  for (const operation of operations) operation.register(app);
}
