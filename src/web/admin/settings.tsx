/**
 * Settings: the site-wide switches (the API and user center, guest upload, registration) as one form,
 * saved with PATCH /api/admin/settings through adminApi. The admin pages stay open with the API switch off, so that
 * an administrator can always turn it back on.
 */
import type { Context, Hono } from "hono";
import { getSettings } from "../../db/repositories/settings.ts";
import { formField, readForm } from "../form.ts";
import { FormToken, Notice } from "../components/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi } from "./api.ts";
import { errorsOf, type Shown } from "./groups.tsx";
import { ADMIN, AdminLayout } from "./layout.tsx";

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

async function render(c: Context<SignedInEnv>, shown?: Shown, status: 200 | 400 | 415 | 422 = 200) {
  const settings = await getSettings(c.get("deps").db);
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
        <div class="buttons admin-buttons">
          <button type="submit" class="primary">
            Save the settings
          </button>
        </div>
      </form>
    </AdminLayout>,
    status,
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/settings", requireAdminSession, (c) => render(c));
  web.post("/admin/settings", requireAdminSession, async (c) => {
    const form = await readForm(c);
    const input = Object.fromEntries(SWITCHES.map((s) => [s.name, formField(form, s.name) === "1"]));
    const answer = await adminApi(c, "PATCH", "/api/admin/settings", input);
    if (!answer.ok) {
      if (answer.status >= 500) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
      const values = Object.fromEntries(SWITCHES.map((s) => [s.name, formField(form, s.name) === "1" ? "1" : ""]));
      return render(
        c,
        {
          values,
          errors: errorsOf(
            answer,
            SWITCHES.map((s) => s.name),
          ),
        },
        [400, 415].includes(answer.status) ? (answer.status as 400 | 415) : 422,
      );
    }
    return c.redirect(`${SETTINGS}?done=saved`, 303);
  });
}
