/**
 * The site's identity on the Settings page: name, accent colour, default language, logo and favicon (images as data:
 * URLs, kept in the settings; app.js fills the text from a chosen file).
 */
import { aria, FieldError, Hint, Select, TextInput } from "../components/index.ts";
import { DEFAULT_SITE, LOCALE_NAMES, LOCALES, t } from "../i18n/index.ts";

/** The identity fields: text as sent to PATCH /api/admin/settings. */
export const IDENTITY = ["site_name", "accent_color", "default_locale", "site_logo", "site_favicon"] as const;

function ImageField({ name, label, hint, value, error }: { name: string; label: string; hint: string; value?: string; error?: string }) {
  const id = `settings-${name}`;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        type="file"
        id={`${id}-file`}
        accept="image/png,image/jpeg,image/gif,image/webp,image/x-icon"
        data-data-url={id}
        aria-label={t("admin.settings.chooseFile", { label })}
      />
      <textarea id={id} name={name} rows={2} spellcheck={false} {...aria(id, hint, error)}>
        {value ?? ""}
      </textarea>
      <Hint id={id} hint={hint} />
      <FieldError id={id} error={error} />
    </div>
  );
}

export function Identity({ values, errors }: { values: Record<string, string>; errors: Record<string, string> }) {
  return (
    <fieldset class="admin-fieldset">
      <legend>{t("admin.settings.identity")}</legend>
      <TextInput
        id="settings-site_name"
        name="site_name"
        label={t("admin.settings.siteName")}
        value={values.site_name}
        error={errors.site_name}
        hint={t("admin.settings.siteName.hint", { name: DEFAULT_SITE.name })}
        attrs={{ maxlength: 60 }}
      />
      <TextInput
        id="settings-accent_color"
        name="accent_color"
        label={t("admin.settings.accent")}
        value={values.accent_color}
        error={errors.accent_color}
        hint={t("admin.settings.accent.hint")}
        attrs={{ maxlength: 7, placeholder: "#1f5fbf" }}
      />
      <Select
        id="settings-default_locale"
        name="default_locale"
        label={t("admin.settings.locale")}
        value={values.default_locale}
        error={errors.default_locale}
        options={LOCALES.map((l) => [l, LOCALE_NAMES[l]] as const)}
        hint={t("admin.settings.locale.hint")}
      />
      <ImageField name="site_logo" label={t("admin.settings.logo")} hint={t("admin.settings.logo.hint")} value={values.site_logo} error={errors.site_logo} />
      <ImageField
        name="site_favicon"
        label={t("admin.settings.favicon")}
        hint={t("admin.settings.favicon.hint")}
        value={values.site_favicon}
        error={errors.site_favicon}
      />
    </fieldset>
  );
}
