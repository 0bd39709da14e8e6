/**
 * Settings: the site-wide switches (the API and user center, guest upload, registration) as one form,
 * saved with PATCH /api/admin/settings through adminApi. The admin pages stay open with the API switch off, so that
 * an administrator can always turn it back on.
 */
import type { Context, Hono } from "hono";
import { getSettings } from "../../db/repositories/settings.ts";
import { formField, readForm } from "../form.ts";
import { t } from "../i18n/index.ts";
import { aria, FieldError, FormToken, Hint, Notice, Select, TextInput } from "../components/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi } from "./api.ts";
import { errorsOf, type Shown } from "./form-kit.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";
import { MailSettingsLink } from "./mail.tsx";

const SETTINGS = `${ADMIN}/settings`;

const SWITCHES = [
  {
    name: "api_enabled",
    label: "API and user center",
    hint: "Off: every /api/v1 call and every page of the user center answers 403, for everyone but administrators on these admin pages.",
  },
  { name: "guest_upload_enabled", label: "Guest upload", hint: "Uploads (and the strategy list) without a token, under the guest group's limits." },
  { name: "registration_enabled", label: "Registration", hint: "Visitors may create their own account on the sign-up page; it joins the default group." },
] as const;

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

/** The identity fields: text as sent to PATCH /api/admin/settings (images as data: URLs; app.js fills them from a file). */
const IDENTITY = ["site_name", "accent_color", "default_locale", "site_logo", "site_favicon"] as const;

function Identity({ values, errors }: { values: Record<string, string>; errors: Record<string, string> }) {
  const image = (name: "site_logo" | "site_favicon", label: string, hint: string) => (
    <div class="field">
      <label for={`settings-${name}`}>{label}</label>
      <input
        type="file"
        id={`settings-${name}-file`}
        accept="image/png,image/jpeg,image/gif,image/webp,image/x-icon"
        data-data-url={`settings-${name}`}
        aria-label={`${label}: choose a file`}
      />
      <textarea id={`settings-${name}`} name={name} rows={2} spellcheck={false} {...aria(`settings-${name}`, hint, errors[name])}>
        {values[name] ?? ""}
      </textarea>
      <Hint id={`settings-${name}`} hint={hint} />
      <FieldError id={`settings-${name}`} error={errors[name]} />
    </div>
  );
  return (
    <fieldset class="admin-fieldset">
      <legend>The site's identity</legend>
      <TextInput
        id="settings-site_name"
        name="site_name"
        label="Site name"
        value={values.site_name}
        error={errors.site_name}
        hint="In the header, the page titles, the sign-in page and the API reference; empty: Picshelf."
        attrs={{ maxlength: 60 }}
      />
      <TextInput
        id="settings-accent_color"
        name="accent_color"
        label="Accent colour"
        value={values.accent_color}
        error={errors.accent_color}
        hint="#rrggbb, adjusted for contrast in light and dark; empty: the default blue."
        attrs={{ maxlength: 7, placeholder: "#1f5fbf" }}
      />
      <Select
        id="settings-default_locale"
        name="default_locale"
        label="Default language of the pages"
        value={values.default_locale}
        error={errors.default_locale}
        options={[
          ["en", "English"],
          ["zh-CN", "简体中文"],
        ]}
        hint="For visitors whose account and browser choose none of the site's languages."
      />
      {image(
        "site_logo",
        "Logo",
        "A PNG, JPEG, GIF, WebP or ICO image of at most 24 KB, kept in the settings (choose a file, or paste a data: URL); empty: the default mark.",
      )}
      {image("site_favicon", "Favicon", "The same, at most 8 KB; empty: the default icon.")}
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
  const values: Record<string, boolean> = {
    api_enabled: settings.apiEnabled,
    guest_upload_enabled: settings.guestUploadEnabled,
    registration_enabled: settings.registrationEnabled,
  };
  const checked = (name: string) => (shown ? shown.values[name] === "1" : values[name]);
  return c.html(
    <AdminLayout title="Settings" signedIn={c.get("signedIn")} section="settings">
      {c.req.query("done") === "saved" && !shown && <Notice kind="success">Settings saved.</Notice>}
      {shown?.errors.form && <Notice kind="error">{shown.errors.form}</Notice>}
      {!settings.apiEnabled && (
        <Notice kind="info">The API and the user center are switched off: only administrators, on these pages, can use the site.</Notice>
      )}
      <form class="card admin-form" method="post" action={SETTINGS}>
        <FormToken signedIn={c.get("signedIn")} />
        <fieldset class="admin-fieldset">
          <legend>Site switches</legend>
          {SWITCHES.map((s) => {
            const id = `settings-${s.name.replace(/_/g, "-")}`;
            const error = shown?.errors.fields[s.name];
            return (
              <div class="field checkbox">
                <label for={id}>
                  <input
                    type="checkbox"
                    id={id}
                    name={s.name}
                    value="1"
                    checked={checked(s.name)}
                    aria-invalid={error ? "true" : undefined}
                    aria-describedby={`${id}-hint${error ? ` ${id}-error` : ""}`}
                  />{" "}
                  {s.label}
                </label>
                <small id={`${id}-hint`} class="hint">
                  {s.hint}
                </small>
                {error && (
                  <small id={`${id}-error`} class="field-error">
                    {error}
                  </small>
                )}
              </div>
            );
          })}
        </fieldset>
        <SecondFactor value={shown?.values[SECOND_FACTOR] ?? settings.requireSecondFactor} error={shown?.errors.fields[SECOND_FACTOR]} />
        <Identity values={identity} errors={shown?.errors.fields ?? {}} />
        <div class="buttons admin-buttons">
          <button type="submit" class="primary">
            Save the settings
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
      return render(
        c,
        {
          values,
          errors: errorsOf(answer, [...SWITCHES.map((s) => s.name), ...IDENTITY, SECOND_FACTOR]),
        },
        [400, 415].includes(answer.status) ? (answer.status as 400 | 415) : 422,
      );
    }
    return c.redirect(`${SETTINGS}?done=saved`, 303);
  });
}
