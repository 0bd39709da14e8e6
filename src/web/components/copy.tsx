/** Copy buttons (app.js copies, or selects the text where the browser does not allow copying) and copy fields. */
import { t } from "../i18n/index.ts";

/** A button that copies `text`; `name` is what the announcement calls it. */
export const CopyButton = ({ text, label, name }: { text: string; label: string; name?: string }) => (
  <button type="button" class="copy" data-copy={text} data-copy-name={name ?? label}>
    {label}
  </button>
);

/** A labelled read-only field holding `text`, with its copy button beside it. */
export function CopyField({ id, label, text, multiline, copyLabel }: { id: string; label: string; text: string; multiline?: boolean; copyLabel?: string }) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <div class="copy-row">
        {multiline ? (
          <textarea id={id} readonly rows={6} spellcheck={false}>
            {text}
          </textarea>
        ) : (
          <input type="text" id={id} readonly value={text} spellcheck={false} />
        )}
        <CopyButton text={text} label={copyLabel ?? t("common.copy")} name={label} />
      </div>
    </div>
  );
}

/** A secret shown once: read-only, labelled for screen readers, with its copy button. */
export const SecretValue = ({ id, label, value, name }: { id: string; label: string; value: string; name: string }) => (
  <div class="secret-value">
    <label for={id} class="visually-hidden">
      {label}
    </label>
    <input id={id} type="text" readonly value={value} data-testid={id} />
    <CopyButton text={value} label={t("common.copy")} name={name} />
  </div>
);
