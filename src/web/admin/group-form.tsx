/** The group form, in sections: access, sizes (in human units), frequency, formats, strategies, processing, review. */
import type { GroupWithStrategies } from "../../db/repositories/groups.ts";
import type { Strategy } from "../../db/repositories/strategies.ts";
import { supportedExtensions } from "../../images/formats.ts";
import { METADATA_POLICIES } from "../../images/metadata/policy.ts";
import { CONVERT_FORMATS } from "../../images/process.ts";
import {
  bindFields,
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

/** The form's fields by name: id `group-<name with dashes>`, value and error. */
const fieldOf = (v: Props) => bindFields(v.values, v.errors, (name) => `group-${name.replace(/_/g, "-")}`);
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
  return <TextInput {...fieldOf(v)(name)} type="number" label={label} hint={hint} attrs={{ min, max, step: 1, inputmode: "numeric", required }} />;
}

const Flag = ({ name, label, hint, v }: { name: string; label: string; hint?: string; v: Props }) => (
  <Checkbox id={`group-${name.replace(/_/g, "-")}`} name={name} label={label} hint={hint} checked={v.values[name] === "1"} />
);

/** A size in KB, entered in KB, MB or GB; its label and hint are `admin.groups.<label>` and `….hint`. */
const Size = ({ name, label, v }: { name: string; label: string; v: Props }) => (
  <SizeInput
    name={name}
    label={tk(`admin.groups.${label}`)}
    kb={amount(v.values[name])}
    hint={tk(`admin.groups.${label}.hint`)}
    error={v.errors[name]}
    required
  />
);

function Sizes({ v }: { v: Props }) {
  const retention = typeof v.values.retention_max_seconds === "number" ? v.values.retention_max_seconds : null;
  // a stored retention that is no whole number of minutes stays a choice of its own, so that it saves back unchanged
  const presets = retention !== null && retention % 60 !== 0 ? [...DURATION_PRESETS, retention] : DURATION_PRESETS;
  return (
    <fieldset class="admin-fieldset">
      <legend>{t("admin.groups.size")}</legend>
      <Size name="max_file_size_kb" label="maxFile" v={v} />
      <MegapixelInput
        name="max_pixels"
        label={t("admin.groups.maxPixels")}
        pixels={typeof v.values.max_pixels === "number" ? String(v.values.max_pixels / 1_000_000) : amount(v.values.max_pixels)}
        hint={t("admin.groups.maxPixels.hint")}
        error={v.errors.max_pixels}
      />
      <Size name="default_capacity_kb" label="capacity" v={v} />
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
  const field = fieldOf(v);
  return (
    <fieldset class="admin-fieldset">
      <legend>{t("admin.groups.processing")}</legend>
      <Select
        {...field("metadata")}
        label={t("admin.groups.metadata")}
        hint={t("admin.groups.metadata.hint")}
        options={METADATA_POLICIES.map((m) => [m, tk(`admin.groups.metadata.${m}`)] as const)}
      />
      <Select
        {...field("convert_format")}
        label={t("admin.groups.convert")}
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
  const field = fieldOf(v);
  const providers = [
    ["none", t("admin.groups.review.none")],
    ["webhook", t("admin.groups.review.webhook")],
  ] as const;
  return (
    <fieldset class="admin-fieldset">
      <legend>{t("admin.groups.review")}</legend>
      <Select {...field("review_provider")} label={t("admin.groups.reviewProvider")} options={providers} />
      <TextInput {...field("review_webhook_url")} type="url" label={t("admin.groups.reviewUrl")} hint={t("admin.groups.reviewUrl.hint")} />
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
      <TextInput {...fieldOf(v)("name")} label={t("admin.groups.name")} hint={t("admin.groups.name.hint")} attrs={{ required: true, maxlength: 100 }} />
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
