/** The theme and language choices that POST /user/preferences saves: in the account menu and on the account page. */
import { LOCALE_NAMES, LOCALES, type MessageKey, t, THEMES, view } from "../i18n/index.ts";
import type { SignedIn } from "../session.ts";

/**
 * The two selects, ids `<prefix>-theme` and `<prefix>-locale`. The theme shown is this browser's; the language the
 * account's own choice, or none ("as the browser says": `autoLabel` may name what that gives).
 */
export function PreferenceFields({ signedIn, prefix, autoLabel }: { signedIn: SignedIn; prefix: string; autoLabel?: string }) {
  const v = view();
  const chosen = signedIn.user.locale ?? "";
  return (
    <>
      <div class="field">
        <label for={`${prefix}-theme`}>{t("common.menu.theme")}</label>
        <select id={`${prefix}-theme`} name="theme">
          {THEMES.map((th) => (
            <option value={th} selected={th === v.theme}>
              {t(`common.theme.${th}` as MessageKey)}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for={`${prefix}-locale`}>{t("common.menu.language")}</label>
        <select id={`${prefix}-locale`} name="locale">
          <option value="" selected={chosen === ""}>
            {autoLabel ?? t("common.menu.languageAuto")}
          </option>
          {LOCALES.map((l) => (
            <option value={l} selected={l === chosen} lang={l}>
              {LOCALE_NAMES[l]}
            </option>
          ))}
        </select>
      </div>
    </>
  );
}
