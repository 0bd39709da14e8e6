/**
 * The Mail section of the admin Settings, /user/admin/settings/mail: the SMTP server (read-only while the environment
 * sets it), the sender, email verification, and a test mail. Changes and the test go through the admin API
 * in-process (routes/admin/mail/), so its validation and audit log apply; the password is never shown.
 */
import type { Context, Hono } from "hono";
import { Card, Checkbox, FormToken, Notice, Select, TextInput } from "../components/index.ts";
import { formField, readForm } from "../form.ts";
import { type MessageKey, rich, t } from "../i18n/index.ts";
import { requireAdminSession, type SignedIn, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi, formErrors } from "./api.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";

export const MAIL_PAGE = `${ADMIN}/settings/mail`;
const API = "/api/admin/mail";

interface ApiMail {
  source: "environment" | "settings" | "none";
  smtp_host: string;
  smtp_port: number;
  smtp_security: "starttls" | "tls" | "none";
  smtp_username: string;
  smtp_password_set: boolean;
  mail_from: string;
  email_verification: boolean;
}

/** The line of the Settings page that leads here. */
export const MailSettingsLink = () => (
  <Card id="mail" title={t("mail.admin.mail.title")}>
    <p>{rich("mail.admin.mail.open", { a: (chunks) => <a href={MAIL_PAGE}>{chunks}</a> })}</p>
  </Card>
);

interface State {
  notice?: string;
  form?: string;
  errors?: Record<string, string>;
  testTo?: string;
}

function MailForms({ mail, signedIn, state }: { mail: ApiMail; signedIn: SignedIn; state: State }) {
  const fromEnv = mail.source === "environment";
  const errors = state.errors ?? {};
  const locked = fromEnv ? { disabled: true } : {};
  return (
    <>
      {state.notice && <Notice kind="success">{state.notice}</Notice>}
      {state.form && <Notice kind="error">{state.form}</Notice>}
      {fromEnv && <Notice kind="info">{t("mail.admin.mail.fromEnvironment")}</Notice>}
      {mail.source === "none" && <Notice kind="info">{t("mail.admin.mail.none")}</Notice>}
      <Card id="smtp" title={t("mail.admin.mail.title")}>
        <p>{t("mail.admin.mail.intro")}</p>
        <form method="post" action={MAIL_PAGE} novalidate>
          <FormToken signedIn={signedIn} />
          <TextInput name="smtp_host" label={t("mail.admin.mail.host")} value={mail.smtp_host} error={errors.smtp_host} attrs={{ maxlength: 253, ...locked }} />
          <TextInput
            name="smtp_port"
            type="number"
            label={t("mail.admin.mail.port")}
            value={String(mail.smtp_port)}
            error={errors.smtp_port}
            attrs={{ min: 1, max: 65535, inputmode: "numeric", ...locked }}
          />
          <Select
            name="smtp_security"
            label={t("mail.admin.mail.security")}
            options={(["starttls", "tls", "none"] as const).map((s) => [s, t(`mail.admin.mail.security.${s}` as MessageKey)] as const)}
            value={mail.smtp_security}
            error={errors.smtp_security}
          />
          <TextInput
            name="smtp_username"
            label={t("mail.admin.mail.username")}
            value={mail.smtp_username}
            error={errors.smtp_username}
            attrs={{ maxlength: 254, autocomplete: "off", ...locked }}
          />
          <TextInput
            name="smtp_password"
            type="password"
            label={t("mail.admin.mail.password")}
            hint={mail.smtp_password_set ? t("mail.admin.mail.passwordSet") : undefined}
            error={errors.smtp_password}
            attrs={{ maxlength: 512, autocomplete: "new-password", ...locked }}
          />
          {mail.smtp_password_set && !fromEnv && <Checkbox name="smtp_password_clear" label={t("mail.admin.mail.passwordClear")} checked={false} />}
          <TextInput
            name="mail_from"
            type="email"
            label={t("mail.admin.mail.from")}
            value={mail.mail_from}
            error={errors.mail_from}
            attrs={{ maxlength: 254, ...locked }}
          />
          <Checkbox name="email_verification" label={t("mail.admin.mail.verification")} checked={mail.email_verification} />
          {errors.email_verification && <p class="field-error">{errors.email_verification}</p>}
          <button type="submit" class="primary">
            {t("mail.admin.mail.save")}
          </button>
        </form>
      </Card>
      <Card id="test" title={t("mail.admin.mail.test")}>
        <form method="post" action={`${MAIL_PAGE}/test`} novalidate>
          <FormToken signedIn={signedIn} />
          <TextInput
            name="to"
            type="email"
            label={t("mail.admin.mail.testTo")}
            value={state.testTo ?? signedIn.user.email}
            error={errors.to}
            attrs={{ maxlength: 254, required: true }}
          />
          <button type="submit">{t("mail.admin.mail.test")}</button>
        </form>
      </Card>
    </>
  );
}

async function render(c: Context<SignedInEnv>, state: State = {}, status: 200 | 400 | 422 | 503 = 200) {
  const signedIn = c.get("signedIn");
  const answer = await adminApi<ApiMail>(c, "GET", API);
  if (!answer.ok) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
  return c.html(
    <AdminLayout title={t("mail.admin.mail.title")} signedIn={signedIn} section="settings">
      <MailForms mail={answer.data} signedIn={signedIn} state={state} />
    </AdminLayout>,
    status,
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/settings/mail", requireAdminSession, (c) => render(c));

  web.post("/admin/settings/mail", requireAdminSession, async (c) => {
    const form = await readForm(c);
    const current = await adminApi<ApiMail>(c, "GET", API);
    const body: Record<string, unknown> = {
      smtp_security: formField(form, "smtp_security"),
      email_verification: formField(form, "email_verification") !== "",
    };
    if (current.data?.source !== "environment") {
      const port = formField(form, "smtp_port").trim();
      Object.assign(body, {
        smtp_host: formField(form, "smtp_host").trim(),
        smtp_port: /^\d{1,5}$/.test(port) ? Number(port) : port,
        smtp_username: formField(form, "smtp_username").trim(),
        mail_from: formField(form, "mail_from").trim(),
      });
      const password = formField(form, "smtp_password");
      if (formField(form, "smtp_password_clear") !== "") body.smtp_password = null;
      else if (password !== "") body.smtp_password = password;
    } else {
      delete body.smtp_security;
    }
    const answer = await adminApi(c, "PATCH", API, body);
    if (!answer.ok) {
      const { fields, form: whole } = formErrors(answer);
      return render(c, { errors: fields, form: whole }, answer.status === 422 ? 422 : 400);
    }
    return render(c, { notice: t("mail.admin.mail.saved") });
  });

  web.post("/admin/settings/mail/test", requireAdminSession, async (c) => {
    const to = formField(await readForm(c), "to").trim();
    const answer = await adminApi(c, "POST", `${API}/test`, { to });
    if (!answer.ok) {
      const { fields, form: whole } = formErrors(answer);
      const status = answer.status === 422 ? 422 : answer.status === 503 ? 503 : 400;
      return render(c, { errors: fields, form: whole, testTo: to }, status);
    }
    return render(c, { notice: t("mail.admin.mail.testSent", { to }), testTo: to });
  });
}
