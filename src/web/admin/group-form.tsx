/** The group form, in sections: access, sizes (in human units), frequency, formats, strategies, processing, review. */
import type { GroupWithStrategies } from "../../db/repositories/groups.ts";
import type { Strategy } from "../../db/repositories/strategies.ts";
import { supportedExtensions } from "../../images/formats.ts";
import { METADATA_POLICIES } from "../../images/metadata/policy.ts";
import { CONVERT_FORMATS } from "../../images/process.ts";
import {
  Checkbox,
  DURATION_PRESETS,
  DurationInput,
  FieldError,
  FormToken,
  Hint,
  MegapixelInput,
  Notice,
  Select,
  SizeInput,
  TextInput,
} from "../components/index.ts";
import { t } from "../i18n/index.ts";
import type { SignedIn } from "../session.ts";
import { Strategies } from "./group-strategies.tsx";
import { EXT, type GroupValues } from "./group-values.ts";
import { tk } from "./form-kit.ts";
import { ADMIN } from "./layout.tsx";

export const GROUPS = `${ADMIN}/groups`;

interface Props {
  values: GroupValues;
  errors: Record<string, string>;
}

const text = (v: GroupValues[string]) => (v === null || v === undefined ? "" : String(v));
/** A size or pixel value: the API's number, or the text as typed. */
const amount = (v: GroupValues[string]) => (typeof v === "number" ? v : v === null || v === undefined || v === "" ? null : /^\d+$/.test(v) ? Number(v) : v);

/** A plain number field of the form (a limit, a quality). */
function NumberField({
  name,
  label,
  hint,
  min,
  max,
  required,
  v,
}: {
  name: string;
  label: string;
  hint?: string;
  min: number;
  max?: number;
  required?: boolean;
  v: Props;
}) {
  return (
    <TextInput
      id={`group-${name.replace(/_/g, "-")}`}
      name={name}
      type="number"
      label={label}
      hint={hint}
      value={text(v.values[name])}
      error={v.errors[name]}
      attrs={{ min, max, step: 1, inputmode: "numeric", required }}
    />
  );
}

const Flag = ({ name, label, hint, v }: { name: string; label: string; hint?: string; v: Props }) => (
  <Checkbox id={`group-${name.replace(/_/g, "-")}`} name={name} label={label} hint={hint} checked={v.values[name] === "1"} />
);

function Sizes({ v }: { v: Props }) {
  const retention = typeof v.values.retention_max_seconds === "number" ? v.values.retention_max_seconds : null;
  // a stored retention that is no whole number of minutes stays a choice of its own, so that it saves back unchanged
  const presets = retention !== null && retention % 60 !== 0 ? [...DURATION_PRESETS, retention] : DURATION_PRESETS;
  return (
    <fieldset class="admin-fieldset">
      <legend>{t("admin.groups.size")}</legend>
      <SizeInput
        name="max_file_size_kb"
        label={t("admin.groups.maxFile")}
        kb={amount(v.values.max_file_size_kb)}
        hint={t("admin.groups.maxFile.hint")}
        error={v.errors.max_file_size_kb}
        required
      />
      <MegapixelInput
        name="max_pixels"
        label={t("admin.groups.maxPixels")}
        pixels={typeof v.values.max_pixels === "number" ? String(v.values.max_pixels / 1_000_000) : amount(v.values.max_pixels)}
        hint={t("admin.groups.maxPixels.hint")}
        error={v.errors.max_pixels}
      />
      <SizeInput
        name="default_capacity_kb"
        label={t("admin.groups.capacity")}
        kb={amount(v.values.default_capacity_kb)}
        hint={t("admin.groups.capacity.hint")}
        error={v.errors.default_capacity_kb}
        required
      />
      <DurationInput
        name="retention_max_seconds"
        label={t("admin.groups.retention")}
        seconds={retention}
        presets={presets}
        emptyLabel={t("admin.groups.retention.none")}
        hint={t("admin.groups.retention.hint")}
        error={v.errors.retention_max_seconds}
      />
    </fieldset>
  );
}

const RATES = [
  ["uploads_per_minute", "perMinute"],
  ["uploads_per_hour", "perHour"],
  ["uploads_per_day", "perDay"],
  ["uploads_per_week", "perWeek"],
  ["uploads_per_month", "perMonth"],
  ["concurrent_uploads", "concurrent"],
] as const;

function Processing({ v }: { v: Props }) {
  return (
    <fieldset class="admin-fieldset">
      <legend>{t("admin.groups.processing")}</legend>
      <Select
        id="group-metadata"
        name="metadata"
        label={t("admin.groups.metadata")}
        value={text(v.values.metadata)}
        error={v.errors.metadata}
        options={METADATA_POLICIES.map((m) => [m, tk(`admin.groups.metadata.${m}`)] as const)}
      />
      <Select
        id="group-convert-format"
        name="convert_format"
        label={t("admin.groups.convert")}
        value={text(v.values.convert_format)}
        error={v.errors.convert_format}
        hint={t("admin.groups.convert.hint")}
        options={[["", t("admin.groups.convert.none")], ...CONVERT_FORMATS.map((f) => [f, f.toUpperCase()] as const)]}
      />
      <div class="admin-grid">
        <NumberField name="convert_quality" label={t("admin.groups.quality")} hint={t("admin.groups.quality.hint")} min={1} max={100} required v={v} />
        <NumberField name="max_width" label={t("admin.groups.maxWidth")} hint={t("admin.groups.maxWidth.hint")} min={1} v={v} />
        <NumberField name="max_height" label={t("admin.groups.maxHeight")} hint={t("admin.groups.maxHeight.hint")} min={1} v={v} />
        <NumberField name="jpeg_max_quality" label={t("admin.groups.jpegQuality")} hint={t("admin.groups.jpegQuality.hint")} min={1} max={100} v={v} />
      </div>
    </fieldset>
  );
}

function Review({ v }: { v: Props }) {
  return (
    <fieldset class="admin-fieldset">
      <legend>{t("admin.groups.review")}</legend>
      <Select
        id="group-review-provider"
        name="review_provider"
        label={t("admin.groups.reviewProvider")}
        value={text(v.values.review_provider)}
        error={v.errors.review_provider}
        options={[
          ["none", t("admin.groups.review.none")],
          ["webhook", t("admin.groups.review.webhook")],
        ]}
      />
      <TextInput
        id="group-review-webhook-url"
        name="review_webhook_url"
        type="url"
        label={t("admin.groups.reviewUrl")}
        hint={t("admin.groups.reviewUrl.hint")}
        value={text(v.values.review_webhook_url)}
        error={v.errors.review_webhook_url}
      />
      <NumberField
        name="review_timeout_ms"
        label={t("admin.groups.reviewTimeout")}
        hint={t("admin.groups.reviewTimeout.hint")}
        min={100}
        max={60_000}
        required
        v={v}
      />
      <Flag name="review_fail_open" label={t("admin.groups.failOpen")} v={v} />
    </fieldset>
  );
}

export function GroupForm({
  signedIn,
  group,
  strategies,
  values,
  errors,
}: {
  signedIn: SignedIn;
  group: GroupWithStrategies | null;
  strategies: Strategy[];
  values: GroupValues;
  errors: { fields: Record<string, string>; form?: string };
}) {
  const v: Props = { values, errors: errors.fields };
  const extensionsError = errors.fields.allowed_extensions;
  return (
    <form class="card admin-form" method="post" action={group ? `${GROUPS}/${group.id}` : GROUPS}>
      <FormToken signedIn={signedIn} />
      {errors.form && <Notice kind="error">{errors.form}</Notice>}
      {Object.keys(errors.fields).length > 0 && <Notice kind="error">{t("admin.groups.notSaved")}</Notice>}
      <TextInput
        id="group-name"
        name="name"
        label={t("admin.groups.name")}
        hint={t("admin.groups.name.hint")}
        value={text(values.name)}
        error={errors.fields.name}
        attrs={{ required: true, maxlength: 100 }}
      />
      <fieldset class="admin-fieldset">
        <legend>{t("admin.groups.access")}</legend>
        <Flag name="enabled" label={t("admin.groups.enabled")} hint={t("admin.groups.enabled.hint")} v={v} />
        <Flag name="allow_api" label={t("admin.groups.allowApi")} hint={t("admin.groups.allowApi.hint")} v={v} />
        <Flag name="is_default" label={t("admin.groups.isDefault")} hint={t("admin.groups.isDefault.hint")} v={v} />
      </fieldset>
      <Sizes v={v} />
      <fieldset class="admin-fieldset" aria-describedby="group-rates-hint">
        <legend>{t("admin.groups.rates")}</legend>
        <Hint id="group-rates" hint={t("admin.groups.rates.hint")} />
        <div class="admin-grid">
          {RATES.map(([name, label]) => (
            <NumberField name={name} label={tk(`admin.groups.${label}`)} min={1} v={v} />
          ))}
        </div>
      </fieldset>
      <fieldset class="admin-fieldset" aria-describedby={extensionsError ? "group-extensions-error" : undefined}>
        <legend>{t("admin.groups.formats")}</legend>
        <ul class="admin-checks">
          {supportedExtensions.map((e) => (
            <li class="checkbox">
              <label for={`group-ext-${e}`}>
                <input type="checkbox" id={`group-ext-${e}`} name={`${EXT}${e}`} value="1" checked={values[`${EXT}${e}`] === "1"} /> .{e}
              </label>
            </li>
          ))}
        </ul>
        <FieldError id="group-extensions" error={extensionsError} />
      </fieldset>
      <Strategies strategies={strategies} v={v} />
      <Processing v={v} />
      <Review v={v} />
      <fieldset class="admin-fieldset">
        <legend>{t("admin.groups.webhooks")}</legend>
        <Flag name="webhook_allow_internal" label={t("admin.groups.internal")} hint={t("admin.groups.internal.hint")} v={v} />
      </fieldset>
      <div class="buttons admin-buttons">
        <button type="submit" class="primary">
          {group ? t("admin.groups.save") : t("admin.groups.create")}
        </button>
        <a class="button" href={GROUPS}>
          {t("common.cancel")}
        </a>
      </div>
    </form>
  );
}
