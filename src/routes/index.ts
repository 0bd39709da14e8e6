import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../http/types.ts";
import * as adminAlbums from "./admin/albums/index.ts";
import * as adminAudit from "./admin/audit/index.ts";
import * as adminGroups from "./admin/groups/index.ts";
import * as adminImages from "./admin/images/index.ts";
import * as adminOidcProviders from "./admin/oidc-providers/index.ts";
import * as adminInvitations from "./admin/invitations/index.ts";
import * as adminMail from "./admin/mail/index.ts";
import * as adminSettings from "./admin/settings/index.ts";
import * as adminStorage from "./admin/storage/index.ts";
import * as adminStrategies from "./admin/strategies/index.ts";
import * as adminTokens from "./admin/tokens/index.ts";
import * as adminUsers from "./admin/users/index.ts";
import * as adminWebhooks from "./admin/webhooks/index.ts";
import * as cheveretoUpload from "./compat/chevereto-upload.ts";
import * as deleteImage from "./images/delete-image.ts";
import * as listImages from "./images/list-images.ts";
import * as uploadImage from "./images/upload-image.ts";
import * as getProfile from "./profile/get-profile.ts";
import * as docs from "./site/docs.ts";
import * as getHealth from "./site/get-health.ts";
import * as getReadiness from "./site/get-readiness.ts";
import * as metrics from "./site/metrics.ts";
import * as serveObject from "./site/serve-object.ts";
import * as listStrategies from "./strategies/list-strategies.ts";
import * as createTemporaryTokens from "./tokens/create-temporary-tokens.ts";
import * as userCenter from "../web/index.ts";

const modules = [
  getProfile,
  listStrategies,
  uploadImage,
  listImages,
  deleteImage,
  createTemporaryTokens,
  cheveretoUpload,
  adminSettings,
  adminMail,
  adminGroups,
  adminStrategies,
  adminUsers,
  adminInvitations,
  adminTokens,
  adminAlbums,
  adminStorage,
  adminImages,
  adminAudit,
  adminWebhooks,
  adminOidcProviders,
  getReadiness,
  getHealth,
  metrics,
  serveObject,
  docs,
  // the user center's pages (plain routes, outside the spec)
  userCenter,
];

export function registerRoutes(app: OpenAPIHono<AppEnv>) {
  for (const m of modules) m.register(app);
}

/** The routes alone, for generating the spec without a database. */
export function routesOnly<T extends OpenAPIHono<AppEnv>>(app: T): T {
  registerRoutes(app);
  return app;
}
