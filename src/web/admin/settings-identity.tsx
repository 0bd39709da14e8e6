/**
 * The site's identity on the Settings page: name, accent colour, default language, logo and favicon (images as data:
 * URLs, kept in the settings; app.js fills the text from a chosen file).
 */
import { aria, bindFields, FieldError, Hint, Select, TextInput } from "../components/index.ts";
import { DEFAULT_SITE, LOCALE_NAMES, LOCALES, t } from "../i18n/index.ts";

/** The identity fields: text as sent to PATCH /api/admin/settings. */
export const IDENTITY = ["site_name", "accent_color", "default_locale", "site_logo", "site_favicon"] as const;

function ImageField({ id, name, label, hint, value, error }: { id: string; name: string; label: string; hint: string; value?: string; error?: string }) {
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
  const field = bindFields(values, errors, (name) => `settings-${name}`);
  const image = (name: "site_logo" | "site_favicon", label: "logo" | "favicon") => (
    <ImageField {...field(name)} label={t(`admin.settings.${label}`)} hint={t(`admin.settings.${label}.hint`)} />
  );
  return (
    <fieldset class="admin-fieldset">
      <legend>{t("admin.settings.identity")}</legend>
      <TextInput
        {...field("site_name")}
        label={t("admin.settings.siteName")}
        hint={t("admin.settings.siteName.hint", { name: DEFAULT_SITE.name })}
        attrs={{ maxlength: 60 }}
      />
      <TextInput
        {...field("accent_color")}
        label={t("admin.settings.accent")}
        hint={t("admin.settings.accent.hint")}
        attrs={{ maxlength: 7, placeholder: "#1f5fbf" }}
      />
      <Select
        {...field("default_locale")}
        label={t("admin.settings.locale")}
        hint={t("admin.settings.locale.hint")}
        options={LOCALES.map((l) => [l, LOCALE_NAMES[l]] as const)}
      />
      {image("site_logo", "logo")}
      {image("site_favicon", "favicon")}
    </fieldset>
  );
}
