/** The form of a list's actions on the selected items: its buttons wait for a selection (app.js). */
import type { PropsWithChildren } from "hono/jsx";
import { t } from "../i18n/index.ts";
import type { SignedIn } from "../session.ts";
import { FormToken } from "./form.tsx";

/**
 * `id` is what the items' check boxes name as their `form`. Buttons marked `data-needs-selection` stay disabled
 * while nothing is selected; without script they are enabled, and the server's answer to an empty selection is a page
 * that leads back.
 */
export function BulkForm({
  signedIn,
  action,
  back,
  max,
  id = "bulk",
  children,
}: PropsWithChildren<{ signedIn: SignedIn; action: string; back: string; max: number; id?: string }>) {
  return (
    <form id={id} class="card bulk" method="post" action={action} data-bulk>
      <FormToken signedIn={signedIn} />
      <input type="hidden" name="back" value={back} />
      <input type="hidden" name="confirmed" value="0" />
      <fieldset>
        <legend>{t("common.bulk.legend", { max })}</legend>
        <div class="bulk-actions">{children}</div>
        <p class="muted small" data-bulk-count hidden>
          {t("common.bulk.none")}
        </p>
      </fieldset>
    </form>
  );
}
