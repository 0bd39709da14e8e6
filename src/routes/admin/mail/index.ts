/** The administration of mail: one file per operation. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../../http/types.ts";
import * as getMailSettings from "./get-mail-settings.ts";
import * as sendTestMail from "./send-test-mail.ts";
import * as updateMailSettings from "./update-mail-settings.ts";

/** In this order: the order of the operations in the spec. */
const operations = [getMailSettings, updateMailSettings, sendTestMail];

export function register(app: OpenAPIHono<AppEnv>) {
  for (const operation of operations) operation.register(app);
}
