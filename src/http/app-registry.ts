import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Deps } from "../deps.ts";
import type { AppEnv } from "./types.ts";

/** The app made for a set of dependencies: the admin pages call its admin API in-process (web/admin/api.ts). */
const apps = new WeakMap<Deps, OpenAPIHono<AppEnv>>();

export const registerApp = (deps: Deps, app: OpenAPIHono<AppEnv>) => apps.set(deps, app);

export function appOf(deps: Deps): OpenAPIHono<AppEnv> {
  const app = apps.get(deps);
  if (!app) throw new Error("no app for these dependencies");
  return app;
}
