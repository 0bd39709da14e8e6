/**
 * The form kit: fields with their hint and error, selects, radio groups, switches (the inputs in human units are in
 * units.tsx). Every control is labelled, and its hint and error are tied to it.
 */
import type { Child, PropsWithChildren } from "hono/jsx";
import { PASSWORD_MAX, PASSWORD_MIN } from "../../services/passwords.ts";
import { num, t } from "../i18n/index.ts";
import { FORM_TOKEN_FIELD, type SignedIn } from "../session.ts";

export const FormToken = ({ signedIn }: { signedIn: SignedIn }) => <input type="hidden" name={FORM_TOKEN_FIELD} value={signedIn.formToken} />;

/** A form that posts to `action` with the session's form token. */
export const PostForm = ({
  action,
  signedIn,
  class: cls,
  novalidate,
  children,
}: PropsWithChildren<{ action: string; signedIn: SignedIn; class?: string; novalidate?: boolean }>) => (
  <form method="post" action={action} class={cls} novalidate={novalidate}>
    <FormToken signedIn={signedIn} />
    {children}
  </form>
);

/** `aria-describedby` of a control: its hint and its error, when there are. */
export const describedBy = (id: string, hint: unknown, error: unknown) => [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;

/** `aria-invalid` and `aria-describedby` of a control. */
export const aria = (id: string, hint: unknown, error: unknown) => ({
  "aria-invalid": error ? ("true" as const) : undefined,
  "aria-describedby": describedBy(id, hint, error),
});

/**
 * A form's fields by name: `field(name)` is the id (`id(name)`), name, value (as text; "" for none) and error to spread
 * on a TextInput or a Select, so that a field is named once.
 */
export const bindFields =
  (values: Record<string, unknown>, errors: Record<string, string | undefined>, id: (name: string) => string = (name) => name) =>
  (name: string) => ({ id: id(name), name, value: values[name] === null || values[name] === undefined ? "" : String(values[name]), error: errors[name] });

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

/**
 * A password field: required, never shown again, at most the longest password the service takes. `purpose` "new"
 * asks for one of at least PASSWORD_MIN and says so (unless `hint` says more); "again" repeats a new one.
 */
export function PasswordInput({
  id,
  name,
  label,
  hint,
  error,
  purpose,
}: {
  id?: string;
  name: string;
  label: Child;
  hint?: Child;
  error?: string;
  purpose: "current" | "new" | "again";
}) {
  const isNew = purpose === "new";
  const attrs = {
    autocomplete: purpose === "current" ? "current-password" : "new-password",
    required: true,
    minlength: isNew ? PASSWORD_MIN : undefined,
    maxlength: PASSWORD_MAX,
  };
  const shownHint = hint ?? (isNew ? t("auth.passwordHint", { n: PASSWORD_MIN }) : undefined);
  return <TextInput id={id} name={name} type="password" label={label} hint={shownHint} error={error} attrs={attrs} />;
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
      {options.map(([v, text]) => (
        <label>
          <input type="radio" name={name} value={v} checked={v === value} />
          {text}
        </label>
      ))}
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
        <input type="checkbox" id={fid} name={name} value="1" checked={checked} {...aria(fid, hint, error)} />
        {label}
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
        <input type="checkbox" id={fid} name={name} value="1" checked={checked} aria-describedby={hint ? `${fid}-hint` : undefined} />
        {label}
      </label>
      <Hint id={fid} hint={hint} />
    </div>
  );
}

/** A list's "Per page" choice: the usual `choices`, and the current `perPage` when it is another (set in the address). */
export function PerPageField({ choices, perPage }: { choices: readonly number[]; perPage: number }) {
  const all = [...new Set([...choices, perPage])].sort((a, b) => a - b);
  return <Select name="per_page" label={t("common.perPage")} options={all.map((n) => [String(n), num(n)] as const)} value={String(perPage)} />;
}
