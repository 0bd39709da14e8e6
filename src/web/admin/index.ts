/**
 * The admin pages, under /user/admin, for accounts with the administrator role (requireAdminSession): one
 * file per page. They read through the repositories and change nothing themselves: every change is a call of the
 * admin API in-process (api.ts), with its validation, its messages and its audit log.
 */
import type { Hono } from "hono";
import type { WebEnv } from "../session.ts";
import * as audit from "./audit.tsx";
import * as groups from "./groups.tsx";
import * as images from "./images.tsx";
import * as invitations from "./invitations.tsx";
import * as mail from "./mail.tsx";
import * as maintenance from "./maintenance.tsx";
import * as overview from "./overview.tsx";
import * as settings from "./settings.tsx";
import * as signIn from "./sign-in.tsx";
import * as strategies from "./strategies.tsx";
import * as users from "./users.tsx";
import * as webhooks from "./webhooks.tsx";

export function register(web: Hono<WebEnv>) {
  overview.register(web);
  users.register(web);
  groups.register(web);
  strategies.register(web);
  settings.register(web);
  signIn.register(web);
  mail.register(web);
  invitations.register(web);
  images.register(web);
  maintenance.register(web);
  webhooks.register(web);
  audit.register(web);
}
