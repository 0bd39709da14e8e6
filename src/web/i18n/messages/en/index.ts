/**
 * The English catalog, merged from one file per area (several people can edit areas at once). Its keys are
 * the keys of every catalog: zh-CN's files must have exactly these (types.ts).
 */
import common from "./common.ts";
import auth from "./auth.ts";
import dashboard from "./dashboard.ts";
import images from "./images.ts";
import albums from "./albums.ts";
import upload from "./upload.ts";
import tokens from "./tokens.ts";
import integrations from "./integrations.ts";
import account from "./account.ts";
import webhooks from "./webhooks.ts";
import admin from "./admin.ts";
import oidc from "./oidc.ts";
import mail from "./mail.ts";
import adminAudit from "./admin-audit.ts";
import adminGroups from "./admin-groups.ts";
import adminStrategies from "./admin-strategies.ts";
import adminSettings from "./admin-settings.ts";
import adminMaintenance from "./admin-maintenance.ts";
import adminOverview from "./admin-overview.ts";
import adminImages from "./admin-images.ts";
import adminUsers from "./admin-users.ts";
import security from "./security.ts";

export const en = {
  ...common,
  ...auth,
  ...dashboard,
  ...images,
  ...albums,
  ...upload,
  ...tokens,
  ...integrations,
  ...account,
  ...webhooks,
  ...admin,
  ...oidc,
  ...mail,
  ...adminAudit,
  ...adminGroups,
  ...adminStrategies,
  ...adminSettings,
  ...adminMaintenance,
  ...adminOverview,
  ...adminImages,
  ...adminUsers,
  ...security,
} as const;
export type MessageKey = keyof typeof en;
