/**
 * The form kit: fields with their hint and error, selects, radio groups, switches, and inputs in human units
 * (sizes with a unit choice, durations with presets, pixel limits in megapixels) with the readers that turn what
 * they send back into the units of the API. Every control is labelled, and its hint and error are tied to it.
 */
import type { Child, PropsWithChildren } from "hono/jsx";
import type { FormFields } from "../form.ts";
import { type MessageKey, num, t } from "../i18n/index.ts";
import { FORM_TOKEN_FIELD, type SignedIn } from "../session.ts";

export const FormToken = ({ signedIn }: { signedIn: SignedIn }) => <input type="hidden" name={FORM_TOKEN_FIELD} value={signedIn.formToken} />;

/** `aria-describedby` of a control: its hint and its error, when there are. */
export const describedBy = (id: string, hint: unknown, error: unknown) => [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;

/** `aria-invalid` and `aria-describedby` of a control. */
export const aria = (id: string, hint: unknown, error: unknown) => ({
  "aria-invalid": error ? ("true" as const) : undefined,
  "aria-describedby": describedBy(id, hint, error),
});

/** A form field's error, referenced by the control's `aria-describedby` as `<id>-error`. */
export const FieldError = ({ id, error }: { id: string; error?: string }) =>
  error ? (
    <small id={`${id}-error`} class="field-error">
      {error}
    </small>
  ) : null;

export const Hint = ({ id, hint }: { id: string; hint?: Child }) =>
  hint ? (
    <small id={`${id}-hint`} class="hint">
      {hint}
    </small>
  ) : null;

/** A labelled field around its control (the control carries `aria` itself). */
export function Field({ label, id, hint, error, children }: PropsWithChildren<{ label: Child; id: string; hint?: Child; error?: string }>) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
      <Hint id={id} hint={hint} />
      <FieldError id={id} error={error} />
    </div>
  );
}

type InputAttrs = Record<string, string | number | boolean | undefined>;

/** A labelled text-like input. */
export function TextInput({
  id,
  name,
  label,
  value,
  hint,
  error,
  type = "text",
  attrs = {},
}: {
  id?: string;
  name: string;
  label: Child;
  value?: string;
  hint?: Child;
  error?: string;
  type?: "text" | "email" | "password" | "url" | "number" | "search" | "datetime-local" | "date";
  attrs?: InputAttrs;
}) {
  const fid = id ?? name;
  return (
    <Field label={label} id={fid} hint={hint} error={error}>
      <input id={fid} name={name} type={type} value={type === "password" ? undefined : (value ?? "")} {...attrs} {...aria(fid, hint, error)} />
    </Field>
  );
}

export type Options = readonly (readonly [value: string, label: string])[];

/** A labelled select of fixed choices. */
export function Select({
  id,
  name,
  label,
  options,
  value,
  hint,
  error,
}: {
  id?: string;
  name: string;
  label: Child;
  options: Options;
  value?: string;
  hint?: Child;
  error?: string;
}) {
  const fid = id ?? name;
  return (
    <Field label={label} id={fid} hint={hint} error={error}>
      <select id={fid} name={name} {...aria(fid, hint, error)}>
        {options.map(([v, text]) => (
          <option value={v} selected={v === value}>
            {text}
          </option>
        ))}
      </select>
    </Field>
  );
}

/** Radio buttons in a fieldset, each on its own target, never run together. */
export function RadioGroup({ name, legend, options, value, hint }: { name: string; legend: Child; options: Options; value?: string; hint?: Child }) {
  return (
    <fieldset class="field radios" aria-describedby={hint ? `${name}-hint` : undefined}>
      <legend>{legend}</legend>
      <div class="choices">
        {options.map(([v, text]) => (
          <label class="choice">
            <input type="radio" name={name} value={v} checked={v === value} /> <span>{text}</span>
          </label>
        ))}
      </div>
      <Hint id={name} hint={hint} />
    </fieldset>
  );
}

/** An on/off switch: a check box (value "1"; unchecked sends nothing) drawn as a switch. */
export function Switch({ id, name, label, checked, hint, error }: { id?: string; name: string; label: Child; checked: boolean; hint?: Child; error?: string }) {
  const fid = id ?? name;
  return (
    <div class="field checkbox switch">
      <label for={fid}>
        <input type="checkbox" id={fid} name={name} value="1" checked={checked} {...aria(fid, hint, error)} /> <span>{label}</span>
      </label>
      <Hint id={fid} hint={hint} />
      <FieldError id={fid} error={error} />
    </div>
  );
}

/** A check box with its label after it. */
export function Checkbox({ id, name, label, checked, hint }: { id?: string; name: string; label: Child; checked: boolean; hint?: Child }) {
  const fid = id ?? name;
  return (
    <div class="field checkbox">
      <label for={fid}>
        <input type="checkbox" id={fid} name={name} value="1" checked={checked} aria-describedby={hint ? `${fid}-hint` : undefined} /> <span>{label}</span>
      </label>
      <Hint id={fid} hint={hint} />
    </div>
  );
}

// ---- human units --------------------------------------------------------------------------------------------------

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
        <input id={id} name={name} type="number" min={0} step="any" inputmode="decimal" value={shown} required={required} {...aria(id, hint, error)} />
        <label for={`${id}-unit`} class="visually-hidden">
          {typeof label === "string" ? t("common.units.unitOf", { field: label }) : t("common.units.unit")}
        </label>
        <select id={`${id}-unit`} name={`${name}_unit`}>
          {(Object.keys(SIZE_UNITS) as SizeUnit[]).map((u) => (
            <option value={u} selected={u === unit}>
              {u}
            </option>
          ))}
        </select>
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
        <label for={`${id}-preset`} class="visually-hidden">
          {label}
        </label>
        <select id={`${id}-preset`} name={`${name}_preset`}>
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
        <label for={`${id}-custom`} class="visually-hidden">
          {t("common.duration.customAmount")}
        </label>
        <input
          id={`${id}-custom`}
          name={`${name}_custom`}
          type="number"
          min={1}
          step={1}
          inputmode="numeric"
          value={custom}
          aria-invalid={error ? "true" : undefined}
        />
        <label for={`${id}-unit`} class="visually-hidden">
          {typeof label === "string" ? t("common.units.unitOf", { field: label }) : t("common.units.unit")}
        </label>
        <select id={`${id}-unit`} name={`${name}_unit`}>
          {(Object.keys(DURATION_UNITS) as DurationUnit[]).map((u) => (
            <option value={u} selected={u === unit}>
              {t(`common.duration.unit.${u}` as MessageKey)}
            </option>
          ))}
        </select>
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
        <input id={id} name={name} type="number" min={0} step="any" inputmode="decimal" value={shown} {...aria(id, hint, error)} />
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

/** A list's "Per page" choice: the usual `choices`, and the current `perPage` when it is another (set in the address). */
export function PerPageField({ choices, perPage }: { choices: readonly number[]; perPage: number }) {
  const all = [...new Set([...choices, perPage])].sort((a, b) => a - b);
  return <Select name="per_page" label={t("common.perPage")} options={all.map((n) => [String(n), num(n)] as const)} value={String(perPage)} />;
}
