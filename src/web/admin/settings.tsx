/**
 * Settings: the site-wide switches (the API and user center, guest upload, registration, password sign-in), who must
 * sign in with a second factor, and the site's identity (settings-identity.tsx) as one form, saved with
 * PATCH /api/admin/settings through adminApi. The admin pages stay open with the API switch off, so that an
 * administrator can always turn it back on.
 */
import type { Context, Hono } from "hono";
import { getSettings } from "../../db/repositories/settings.ts";
import { FormToken, Notice, Select, Switch } from "../components/index.ts";
import { formField, readForm } from "../form.ts";
import { type MessageKey, t } from "../i18n/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi } from "./api.ts";
import { errorsOf, type Shown } from "./form-kit.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";
import { MailSettingsLink } from "./mail.tsx";
import { IDENTITY, Identity } from "./settings-identity.tsx";

const SETTINGS = `${ADMIN}/settings`;

/** The switches, with their labels and hints in the catalogs. */
const SWITCHES: { name: string; label: MessageKey; hint: MessageKey }[] = [
  { name: "api_enabled", label: "admin.settings.api_enabled", hint: "admin.settings.api_enabled.hint" },
  { name: "guest_upload_enabled", label: "admin.settings.guest_upload_enabled", hint: "admin.settings.guest_upload_enabled.hint" },
  { name: "registration_enabled", label: "admin.settings.registration_enabled", hint: "admin.settings.registration_enabled.hint" },
  // off: sign-in through the identity providers only (docs/single-sign-on.md)
  { name: "password_sign_in", label: "oidc.settings.passwordSignIn", hint: "oidc.settings.passwordSignInHint" },
];

/** Who must sign in with a second factor (docs/decisions/sign-in-core.md). */
const SECOND_FACTOR = "require_second_factor";

function SecondFactor({ value, error }: { value: string; error?: string }) {
  return (
    <fieldset class="admin-fieldset">
      <legend>{t("security.title")}</legend>
      <Select
        id={`settings-${SECOND_FACTOR}`}
        name={SECOND_FACTOR}
        label={t("security.admin.required")}
        value={value}
        error={error}
        options={[
          ["off", t("security.admin.off")],
          ["admins", t("security.admin.admins")],
          ["everyone", t("security.admin.everyone")],
        ]}
        hint={t("security.admin.requiredHint")}
      />
    </fieldset>
  );
}

async function render(c: Context<SignedInEnv>, shown?: Shown, status: 200 | 400 | 415 | 422 = 200) {
  const settings = await getSettings(c.get("deps").db);
  const identity: Record<string, string> = shown?.values ?? {
    site_name: settings.siteName,
    accent_color: settings.accentColor,
    default_locale: settings.defaultLocale,
    site_logo: settings.siteLogo ?? "",
    site_favicon: settings.siteFavicon ?? "",
  };
  const stored: Record<string, boolean> = {
    api_enabled: settings.apiEnabled,
    guest_upload_enabled: settings.guestUploadEnabled,
    registration_enabled: settings.registrationEnabled,
    password_sign_in: settings.passwordSignIn,
  };
  const errors = shown?.errors.fields ?? {};
  return c.html(
    <AdminLayout title={t("admin.settings.title")} signedIn={c.get("signedIn")} section="settings">
      {c.req.query("done") === "saved" && !shown && <Notice kind="success">{t("admin.settings.saved")}</Notice>}
      {shown?.errors.form && <Notice kind="error">{shown.errors.form}</Notice>}
      {!settings.apiEnabled && <Notice kind="info">{t("admin.settings.apiOff")}</Notice>}
      <form class="card admin-form" method="post" action={SETTINGS}>
        <FormToken signedIn={c.get("signedIn")} />
        <fieldset class="admin-fieldset">
          <legend>{t("admin.settings.switches")}</legend>
          {SWITCHES.map((s) => (
            <Switch
              id={`settings-${s.name.replace(/_/g, "-")}`}
              name={s.name}
              label={t(s.label)}
              hint={t(s.hint)}
              error={errors[s.name]}
              checked={shown ? shown.values[s.name] === "1" : !!stored[s.name]}
            />
          ))}
        </fieldset>
        <SecondFactor value={shown?.values[SECOND_FACTOR] ?? settings.requireSecondFactor} error={errors[SECOND_FACTOR]} />
        <Identity values={identity} errors={errors} />
        <div class="buttons admin-buttons">
          <button type="submit" class="primary">
            {t("admin.settings.save")}
          </button>
        </div>
      </form>
      <MailSettingsLink />
    </AdminLayout>,
    status,
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/settings", requireAdminSession, (c) => render(c));
  web.post("/admin/settings", requireAdminSession, async (c) => {
    const form = await readForm(c);
    const input: Record<string, unknown> = Object.fromEntries(SWITCHES.map((s) => [s.name, formField(form, s.name) === "1"]));
    // the identity fields a form sent (the page sends all of them): an empty image is none
    for (const name of IDENTITY) if (name in form) input[name] = formField(form, name).trim();
    for (const name of ["site_logo", "site_favicon"]) if (input[name] === "") input[name] = null;
    if (SECOND_FACTOR in form) input[SECOND_FACTOR] = formField(form, SECOND_FACTOR);
    const answer = await adminApi(c, "PATCH", "/api/admin/settings", input);
    if (!answer.ok) {
      if (answer.status >= 500) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
      const values = Object.fromEntries([
        ...SWITCHES.map((s) => [s.name, formField(form, s.name) === "1" ? "1" : ""]),
        ...IDENTITY.map((name) => [name, formField(form, name)]),
        [SECOND_FACTOR, formField(form, SECOND_FACTOR)],
      ]);
      const errors = errorsOf(answer, [...SWITCHES.map((s) => s.name), ...IDENTITY, SECOND_FACTOR]);
      return render(c, { values, errors }, [400, 415].includes(answer.status) ? (answer.status as 400 | 415) : 422);
    }
    return c.redirect(`${SETTINGS}?done=saved`, 303);
  });
}
