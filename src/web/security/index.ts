/** Second factors and passkeys in the pages: the sign-in steps, the Security page, and their scripts. */
import type { Hono } from "hono";
import type { WebEnv } from "../session.ts";
import * as page from "./page.tsx";
import * as steps from "./sign-in-steps.tsx";

export { PasskeyButton, passkeyScripts } from "./shared.tsx";

export function register(web: Hono<WebEnv>) {
  steps.register(web);
  page.register(web);
}
