/**
 * The strategy form: name, quota (a size with a unit), enabled, and the driver's configuration. Secrets (the S3
 * access key id and secret access key) are write-only: the form says whether they are set, never what they are; an
 * empty field on edit keeps the stored one, a check box clears it.
 */
import type { Strategy } from "../../db/repositories/strategies.ts";
import { Checkbox, FormToken, Notice, SizeInput, TextInput } from "../components/index.ts";
import { rich, t } from "../i18n/index.ts";
import type { SignedIn } from "../session.ts";
import { type Shown, tk } from "./form-kit.ts";
import { ADMIN } from "./layout.tsx";

export const STRATEGIES = `${ADMIN}/strategies`;
export type Driver = "local" | "s3";
export const isDriver = (d: string | undefined): d is Driver => d === "local" || d === "s3";
export const driverName = (d: Driver) => tk(`admin.strategies.driver.${d}`);

/** The configuration fields of each driver, secrets last. */
export const CONFIG: Record<Driver, readonly string[]> = {
  local: ["root", "url"],
  s3: ["bucket", "url", "endpoint", "region", "prefix", "access_key_id", "secret_access_key"],
};
/** Configuration fields that are written, never shown. */
export const SECRETS = ["access_key_id", "secret_access_key"] as const;
export const isSecret = (f: string) => (SECRETS as readonly string[]).includes(f);
export const CLEAR = "clear_";

function Text({ name, label, hint, type, required, shown }: { name: string; label: string; hint?: string; type?: "url"; required?: boolean; shown: Shown }) {
  return (
    <TextInput
      id={`strategy-${name.replace(/_/g, "-")}`}
      name={name}
      label={label}
      hint={hint}
      type={type}
      value={shown.values[name]}
      error={shown.errors.fields[name]}
      attrs={{ required }}
    />
  );
}

function Secrets({ strategy, shown }: { strategy: Strategy | null; shown: Shown }) {
  return (
    <>
      {SECRETS.map((f) => {
        const set = typeof strategy?.config[f] === "string" && strategy.config[f] !== "";
        const hint = strategy ? t(set ? "admin.strategies.secret.set" : "admin.strategies.secret.unset") : t("admin.strategies.secret.new");
        return (
          <div class="admin-secret">
            <TextInput
              id={`strategy-${f.replace(/_/g, "-")}`}
              name={f}
              type="password"
              label={tk(`admin.strategies.${f}`)}
              hint={hint}
              error={shown.errors.fields[f]}
              attrs={{ autocomplete: "new-password" }}
            />
            {strategy && set && (
              <Checkbox
                id={`strategy-clear-${f.replace(/_/g, "-")}`}
                name={`${CLEAR}${f}`}
                label={t("admin.strategies.secret.clear", { what: f })}
                checked={false}
              />
            )}
          </div>
        );
      })}
    </>
  );
}

export function StrategyForm({ signedIn, driver, strategy, shown }: { signedIn: SignedIn; driver: Driver; strategy: Strategy | null; shown: Shown }) {
  const fieldCount = Object.keys(shown.errors.fields).length;
  const quota = shown.values.quota_kb ?? "";
  return (
    <form class="card admin-form" method="post" action={strategy ? `${STRATEGIES}/${strategy.id}` : STRATEGIES} autocomplete="off">
      <FormToken signedIn={signedIn} />
      {!strategy && <input type="hidden" name="driver" value={driver} />}
      {shown.errors.form && <Notice kind="error">{shown.errors.form}</Notice>}
      {fieldCount > 0 && <Notice kind="error">{t("admin.strategies.notSaved")}</Notice>}
      <p>
        {rich("admin.strategies.driver", { driver: driverName(driver), strong: (chunks) => <strong>{chunks}</strong> })}
        {strategy && <span class="hint"> {t("admin.strategies.driver.fixed")}</span>}
      </p>
      <TextInput
        id="strategy-name"
        name="name"
        label={t("admin.strategies.name")}
        hint={t("admin.strategies.name.hint")}
        value={shown.values.name}
        error={shown.errors.fields.name}
        attrs={{ required: true, maxlength: 100 }}
      />
      <SizeInput
        name="quota_kb"
        label={t("admin.strategies.quota")}
        kb={quota === "" ? null : /^\d+$/.test(quota) ? Number(quota) : quota}
        hint={t("admin.strategies.quota.hint")}
        error={shown.errors.fields.quota_kb}
      />
      <Checkbox
        id="strategy-enabled"
        name="enabled"
        label={t("admin.strategies.enabled")}
        hint={t("admin.strategies.enabled.hint")}
        checked={shown.values.enabled === "1"}
      />
      {driver === "local" ? (
        <fieldset class="admin-fieldset">
          <legend>{t("admin.strategies.local")}</legend>
          <Text name="root" label={t("admin.strategies.root")} hint={t("admin.strategies.root.hint")} shown={shown} />
          <Text name="url" type="url" label={t("admin.strategies.url")} hint={t("admin.strategies.url.localHint")} shown={shown} />
        </fieldset>
      ) : (
        <fieldset class="admin-fieldset">
          <legend>{t("admin.strategies.s3")}</legend>
          <Text name="bucket" label={t("admin.strategies.bucket")} required shown={shown} />
          <Text name="url" type="url" label={t("admin.strategies.url")} hint={t("admin.strategies.url.s3Hint")} required shown={shown} />
          <Text name="endpoint" type="url" label={t("admin.strategies.endpoint")} hint={t("admin.strategies.endpoint.hint")} shown={shown} />
          <Text name="region" label={t("admin.strategies.region")} shown={shown} />
          <Text name="prefix" label={t("admin.strategies.prefix")} hint={t("admin.strategies.prefix.hint")} shown={shown} />
          <Secrets strategy={strategy} shown={shown} />
          {Object.keys(shown.values).length > 0 && !strategy && fieldCount > 0 && <p class="hint">{t("admin.strategies.secret.again")}</p>}
        </fieldset>
      )}
      <div class="buttons admin-buttons">
        <button type="submit" class="primary">
          {strategy ? t("admin.strategies.save") : t("admin.strategies.create")}
        </button>
        <a class="button" href={STRATEGIES}>
          {t("common.cancel")}
        </a>
      </div>
    </form>
  );
}
