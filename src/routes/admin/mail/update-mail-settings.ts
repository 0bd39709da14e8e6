import type { OpenAPIHono } from "@hono/zod-openapi";
import { getSettings, updateSettings } from "../../../db/repositories/settings.ts";
import { validationError } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import type { AppEnv } from "../../../http/types.ts";
import { effectiveSmtp, sealPassword } from "../../../services/mail/config.ts";
import { adminRoute, jsonBody } from "../common.ts";
import { MailSettingsInput, MailSettingsResponse, toOutput } from "./shared.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "patch",
      path: "/api/admin/mail",
      operationId: "adminUpdateMailSettings",
      summary: "Change the mail settings",
      description:
        "Changes the named fields; omitted ones stay as they are. `smtp_password` is write-only: stored sealed with the site's secret key, never returned; null or empty removes it. " +
        "While SMTP_HOST is set in the environment, the stored SMTP fields are kept but not used. `email_verification` can be turned on only while mail is set up (422 otherwise).",
      request: { body: jsonBody(MailSettingsInput) },
      responses: { ...okResponse(MailSettingsResponse, "The mail settings"), ...errorResponses(400, 401, 415, 422, 500) },
    }),
    async (c) => {
      const deps = c.get("deps");
      const body = c.req.valid("json");
      const next = await deps.db.transaction(async (tx) => {
        const saved = await updateSettings(tx, {
          smtpHost: body.smtp_host,
          smtpPort: body.smtp_port,
          smtpSecurity: body.smtp_security,
          smtpUsername: body.smtp_username,
          smtpPasswordSealed: body.smtp_password === undefined ? undefined : body.smtp_password ? sealPassword(deps, body.smtp_password) : null,
          mailFrom: body.mail_from,
          emailVerification: body.email_verification,
        });
        if (saved.emailVerification && body.email_verification && effectiveSmtp(deps, saved).smtp === null) {
          throw validationError({ email_verification: ["Set up mail first (smtp_host and mail_from): the verification link could not be sent."] });
        }
        return saved;
      });
      return respond(c, toOutput(deps, next ?? (await getSettings(deps.db))));
    },
  );
}
