/** Second factors and passkeys in the pages: the sign-in steps, the Security page, and their scripts. */
import type { Hono } from "hono";
import type { WebEnv } from "../session.ts";
import * as page from "./page.tsx";
import { passkeyAssets } from "./shared.tsx";
import * as steps from "./sign-in-steps.tsx";

export { PasskeyButton, passkeyScripts } from "./shared.tsx";

export function register(web: Hono<WebEnv>) {
  for (const file of Object.values(passkeyAssets)) {
    web.get(`/assets/${file.name}`, (c) =>
      c.body(file.body, 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=86400" }),
    );
  }
  steps.register(web);
  page.register(web);
}
