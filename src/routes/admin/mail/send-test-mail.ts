import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { getSettings } from "../../../db/repositories/settings.ts";
import { AppError } from "../../../errors.ts";
import { respond } from "../../../http/envelope.ts";
import { errorResponses, okResponse } from "../../../http/responses.ts";
import { envelope } from "../../../http/schemas.ts";
import type { AppEnv } from "../../../http/types.ts";
import { effectiveSmtp } from "../../../services/mail/config.ts";
import { sendMail } from "../../../services/mail/outbox.ts";
import { composeMail, mailLocale } from "../../../web/mail/compose.ts";
import { adminRoute, jsonBody } from "../common.ts";

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/mail/test",
      operationId: "adminSendTestMail",
      summary: "Send a test mail",
      description:
        "Sends a test mail to `to` through the SMTP server in use, now, in the site's default language, and answers when the server has taken it. 400 when mail is not set up; 503 with the server's or the network's error when the send fails.",
      request: {
        body: jsonBody(
          z
            .object({ to: z.email().max(254).openapi({ example: "admin@example.com" }) })
            .strict()
            .openapi("TestMailInput"),
        ),
      },
      responses: {
        ...okResponse(envelope(z.object({ sent_to: z.string().openapi({ example: "admin@example.com" }) }), "TestMailResponse"), "The server took the mail"),
        ...errorResponses(400, 401, 415, 422, 500, 503),
      },
    }),
    async (c) => {
      const deps = c.get("deps");
      const { to } = c.req.valid("json");
      const settings = await getSettings(deps.db);
      const { smtp } = effectiveSmtp(deps, settings);
      if (!smtp) throw new AppError("bad_request", "Mail is not set up: give smtp_host and mail_from (PATCH /api/admin/mail) or set SMTP_HOST and MAIL_FROM.");
      try {
        await sendMail(smtp, composeMail(deps, settings, "test", to, mailLocale(null, settings)));
      } catch (e) {
        throw new AppError("unavailable", `The mail was not sent: ${(e as Error).message}`);
      }
      return respond(c, { sent_to: to });
    },
  );
}
