/**
 * Inputs in human units, with the readers that turn what they send back into the units of the API: sizes with a unit
 * choice (KB, MB, GB → KB), durations with presets or a custom amount (→ seconds), pixel limits in megapixels.
 */
import type { Child } from "hono/jsx";
import type { FormFields } from "../form.ts";
import { type MessageKey, t } from "../i18n/index.ts";
import { aria, describedBy, FieldError, Hint, type Options } from "./form.tsx";

/** The unit choice beside a number: sends `<name>_unit`, named for screen readers after the field it belongs to. */
function UnitSelect({ name, label, units, value }: { name: string; label: Child; units: Options; value: string }) {
  return (
    <select name={`${name}_unit`} aria-label={typeof label === "string" ? t("common.units.unitOf", { field: label }) : t("common.units.unit")}>
      {units.map(([u, text]) => (
        <option value={u} selected={u === value}>
          {text}
        </option>
      ))}
    </select>
  );
}

const SIZE_UNITS = { KB: 1, MB: 1024, GB: 1024 * 1024 } as const;
type SizeUnit = keyof typeof SIZE_UNITS;

/** The largest unit that shows `kb` whole. */
const sizeUnitOf = (kb: number): SizeUnit => (kb > 0 && kb % SIZE_UNITS.GB === 0 ? "GB" : kb > 0 && kb % SIZE_UNITS.MB === 0 ? "MB" : "KB");

/**
 * A size in KB (the API's unit) as a number and a unit (KB, MB, GB). Sends `<name>` and `<name>_unit`; read it with
 * `sizeKbOf`. `kb` may be the text the user typed (shown again after an error), or null for an empty field.
 */
export function SizeInput({
  name,
  label,
  kb,
  hint,
  error,
  required,
}: {
  name: string;
  label: Child;
  kb: number | string | null;
  hint?: Child;
  error?: string;
  required?: boolean;
}) {
  const id = name.replace(/_/g, "-");
  const unit = typeof kb === "number" ? sizeUnitOf(kb) : "KB";
  const shown = typeof kb === "number" ? String(kb / SIZE_UNITS[unit]) : (kb ?? "");
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <div class="with-unit">
        <input id={id} name={name} type="number" min={0} step="any" value={shown} required={required} {...aria(id, hint, error)} />
        <UnitSelect name={name} label={label} units={(Object.keys(SIZE_UNITS) as SizeUnit[]).map((u) => [u, u] as const)} value={unit} />
      </div>
      <Hint id={id} hint={hint} />
      <FieldError id={id} error={error} />
    </div>
  );
}

/** What SizeInput sent, in KB: a whole number, null when empty, or the text as typed when it is not a size (the API refuses it). */
export function sizeKbOf(form: FormFields, name: string): number | null | string {
  const raw = (form[name] ?? "").trim();
  if (raw === "") return null;
  const unit = (form[`${name}_unit`] ?? "KB") as SizeUnit;
  const n = Number(raw);
  if (!/^\d{1,12}(\.\d{1,6})?$/.test(raw) || !(unit in SIZE_UNITS)) return raw;
  return Math.round(n * SIZE_UNITS[unit]);
}

const DURATION_UNITS = { minutes: 60, hours: 3600, days: 86_400 } as const;
type DurationUnit = keyof typeof DURATION_UNITS;
/** The usual presets: an hour, a day, 30 days. */
export const DURATION_PRESETS = [3600, 86_400, 30 * 86_400] as const;

/** Seconds in words: "1 hour", "30 days", "90 minutes" (plural-aware, in the page's language). */
export function durationText(seconds: number): string {
  if (seconds % 86_400 === 0) return t("common.duration.days", { count: seconds / 86_400 });
  if (seconds % 3600 === 0) return t("common.duration.hours", { count: seconds / 3600 });
  if (seconds % 60 === 0) return t("common.duration.minutes", { count: seconds / 60 });
  return t("common.duration.seconds", { count: seconds });
}

/**
 * A duration in seconds (the API's unit) as presets plus "custom" (a number and minutes, hours or days). Sends
 * `<name>_preset`, `<name>_custom`, `<name>_unit`; read it with `durationOf`. `emptyLabel` adds a choice for none.
 */
export function DurationInput({
  name,
  label,
  seconds,
  presets = DURATION_PRESETS,
  hint,
  error,
  emptyLabel,
}: {
  name: string;
  label: Child;
  seconds: number | null;
  presets?: readonly number[];
  hint?: Child;
  error?: string;
  emptyLabel?: string;
}) {
  const id = name.replace(/_/g, "-");
  const preset = seconds === null ? "" : presets.includes(seconds) ? String(seconds) : "custom";
  const unit: DurationUnit = seconds !== null && seconds % 86_400 === 0 ? "days" : seconds !== null && seconds % 3600 === 0 ? "hours" : "minutes";
  const custom = preset === "custom" && seconds !== null ? String(seconds / DURATION_UNITS[unit]) : "";
  return (
    <fieldset class="field duration" aria-describedby={describedBy(id, hint, error)}>
      <legend>{label}</legend>
      <div class="with-unit">
        <select name={`${name}_preset`} aria-label={typeof label === "string" ? label : undefined}>
          {emptyLabel !== undefined && (
            <option value="" selected={preset === ""}>
              {emptyLabel}
            </option>
          )}
          {presets.map((p) => (
            <option value={String(p)} selected={preset === String(p)}>
              {durationText(p)}
            </option>
          ))}
          <option value="custom" selected={preset === "custom"}>
            {t("common.duration.custom")}
          </option>
        </select>
        {/* shown only with "custom" chosen (the stylesheet) */}
        <input
          name={`${name}_custom`}
          type="number"
          min={1}
          value={custom || undefined}
          aria-label={t("common.duration.customAmount")}
          aria-invalid={error ? "true" : undefined}
        />
        <UnitSelect
          name={name}
          label={label}
          units={(Object.keys(DURATION_UNITS) as DurationUnit[]).map((u) => [u, t(`common.duration.unit.${u}` as MessageKey)] as const)}
          value={unit}
        />
      </div>
      <Hint id={id} hint={hint} />
      <FieldError id={id} error={error} />
    </fieldset>
  );
}

/** What DurationInput sent, in seconds: null for none, or the text as typed when it is not a duration. */
export function durationOf(form: FormFields, name: string): number | null | string {
  const preset = (form[`${name}_preset`] ?? "").trim();
  if (preset === "") return null;
  if (preset !== "custom") return /^\d{1,10}$/.test(preset) ? Number(preset) : preset;
  const raw = (form[`${name}_custom`] ?? "").trim();
  const unit = (form[`${name}_unit`] ?? "minutes") as DurationUnit;
  if (!/^\d{1,10}$/.test(raw) || !(unit in DURATION_UNITS)) return raw;
  return Number(raw) * DURATION_UNITS[unit];
}

/** A pixel limit in megapixels (the API counts pixels). Read it with `pixelsOf`. */
export function MegapixelInput({
  name,
  label,
  pixels,
  hint,
  error,
}: {
  name: string;
  label: Child;
  pixels: number | string | null;
  hint?: Child;
  error?: string;
}) {
  const id = name.replace(/_/g, "-");
  const shown = typeof pixels === "number" ? String(Math.round(pixels / 10_000) / 100) : (pixels ?? "");
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <div class="with-unit">
        <input id={id} name={name} type="number" min={0} step="any" value={shown} {...aria(id, hint, error)} />
        <span class="unit" aria-hidden="true">
          MP
        </span>
      </div>
      <Hint id={id} hint={hint} />
      <FieldError id={id} error={error} />
    </div>
  );
}

/** What MegapixelInput sent, in pixels: null when empty, or the text as typed when it is not a number. */
export function pixelsOf(form: FormFields, name: string): number | null | string {
  const raw = (form[name] ?? "").trim();
  if (raw === "") return null;
  if (!/^\d{1,6}(\.\d{1,6})?$/.test(raw)) return raw;
  return Math.round(Number(raw) * 1_000_000);
}
