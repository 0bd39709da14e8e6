/**
 * Groups: the user groups with their key figures, and a form for every field of the admin API's GroupInput
 * (flags, limits, formats, ordered strategies, metadata policy, processing on upload, content review). The page
 * reads through the repositories; saving is POST/PATCH /api/admin/groups through adminApi, so that the API's
 * validation and messages apply (shown next to the fields) and the audit log names the administrator.
 */
import { count } from "drizzle-orm";
import type { Context, Hono } from "hono";
import type { Child } from "hono/jsx";
import { getGroupWithStrategies, type GroupWithStrategies, listGroups } from "../../db/repositories/groups.ts";
import { GROUP_STRATEGIES_MAX, listStrategies, type Strategy } from "../../db/repositories/strategies.ts";
import { users } from "../../db/schema.ts";
import { notFound } from "../../errors.ts";
import { supportedExtensions } from "../../images/formats.ts";
import { METADATA_POLICIES } from "../../images/metadata/policy.ts";
import { CONVERT_FORMATS } from "../../images/process.ts";
import { type FormFields, formField, readForm } from "../form.ts";
import { FieldError, FormToken, formatBytes, Notice } from "../components/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { type ApiAnswer, adminApi } from "./api.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";

const GROUPS = `${ADMIN}/groups`;
const PER_PAGE = 100;

/** A record id of a path: digits only, in PostgreSQL's integer range; anything else is no such record. */
export function recordIdOf(value: string, what: string): number {
  const id = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  if (!(id >= 1 && id <= 2_147_483_647)) throw notFound(`There is no such ${what}.`);
  return id;
}

/** A page number of a query: 1 for anything that is not one. */
export const pageOf = (value: string | undefined) => (value && /^\d{1,6}$/.test(value) && Number(value) >= 1 ? Number(value) : 1);

/**
 * A number field of a form, for the API: a whole number as a number, an empty field as `empty` (null for a nullable
 * limit), anything else as sent, so that the API refuses it with its own message.
 */
export function numberOf(raw: string, empty: null | undefined): number | string | null | undefined {
  const value = raw.trim();
  if (value === "") return empty;
  return /^-?\d{1,16}$/.test(value) ? Number(value) : value;
}

/**
 * The API's field errors by form field: `config.bucket` → `bucket` (with `prefix`), `allowed_extensions.0` →
 * `allowed_extensions`; errors of no field of the form, and the message of any other refusal, for the whole form.
 */
export function errorsOf(answer: ApiAnswer, known: readonly string[], prefix = ""): Shown["errors"] {
  const fields: Record<string, string> = {};
  const others: string[] = [];
  for (const [key, messages] of Object.entries(answer.errors)) {
    const path = prefix && key.startsWith(prefix) ? key.slice(prefix.length) : key;
    const field = path.split(".")[0]!;
    const message = messages[0] ?? "Invalid.";
    if (known.includes(field)) fields[field] ??= message;
    else others.push(message);
  }
  const form = others.length ? others.join(" ") : Object.keys(fields).length ? undefined : answer.message;
  return { fields, form };
}

export interface Shown {
  /** The form's values as text, by field name (check boxes: "1" when checked). */
  values: Record<string, string>;
  errors: { fields: Record<string, string>; form?: string };
}

/** `aria-describedby` of a control: its hint and its error, when there are. */
const describedBy = (id: string, hint: boolean, error: boolean) => [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;

/** A labelled input of a form (name = field name), with its hint and the API's error. */
export function Input(props: {
  name: string;
  label: string;
  shown: Shown;
  hint?: Child;
  type?: "text" | "number" | "url" | "password";
  min?: number;
  max?: number;
  required?: boolean;
  maxlength?: number;
  autocomplete?: string;
  /** The id's prefix, so that two forms on a page never share one. */
  idPrefix: string;
  /** Never put the value in the page (secrets). */
  writeOnly?: boolean;
}) {
  const id = `${props.idPrefix}-${props.name.replace(/_/g, "-")}`;
  const error = props.shown.errors.fields[props.name];
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        name={props.name}
        type={props.type ?? "text"}
        value={props.writeOnly ? "" : (props.shown.values[props.name] ?? "")}
        min={props.min}
        max={props.max}
        step={props.type === "number" ? 1 : undefined}
        inputmode={props.type === "number" ? "numeric" : undefined}
        required={props.required}
        maxlength={props.maxlength}
        autocomplete={props.autocomplete}
        aria-invalid={error ? "true" : undefined}
        aria-describedby={describedBy(id, !!props.hint, !!error)}
      />
      {props.hint && (
        <small id={`${id}-hint`} class="hint">
          {props.hint}
        </small>
      )}
      <FieldError id={id} error={error} />
    </div>
  );
}

/** A labelled check box (value "1"); an unchecked box sends nothing, which the page reads as false. */
export function Checkbox({ name, label, shown, idPrefix, hint }: { name: string; label: string; shown: Shown; idPrefix: string; hint?: Child }) {
  const id = `${idPrefix}-${name.replace(/_/g, "-")}`;
  const error = shown.errors.fields[name];
  return (
    <div class="field checkbox">
      <label for={id}>
        <input
          type="checkbox"
          id={id}
          name={name}
          value="1"
          checked={shown.values[name] === "1"}
          aria-invalid={error ? "true" : undefined}
          aria-describedby={describedBy(id, !!hint, !!error)}
        />{" "}
        {label}
      </label>
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
      <FieldError id={id} error={error} />
    </div>
  );
}

/** A labelled select of fixed choices. */
function Select({ name, label, shown, options, hint }: { name: string; label: string; shown: Shown; options: [string, string][]; hint?: Child }) {
  const id = `group-${name.replace(/_/g, "-")}`;
  const error = shown.errors.fields[name];
  const current = shown.values[name] ?? "";
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} name={name} aria-invalid={error ? "true" : undefined} aria-describedby={describedBy(id, !!hint, !!error)}>
        {options.map(([value, text]) => (
          <option value={value} selected={value === current}>
            {text}
          </option>
        ))}
      </select>
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
      <FieldError id={id} error={error} />
    </div>
  );
}

/** The nullable limits of GroupInput: an empty field is no limit (null). */
const NULLABLE = [
  "uploads_per_minute",
  "uploads_per_hour",
  "uploads_per_day",
  "uploads_per_week",
  "uploads_per_month",
  "concurrent_uploads",
  "retention_max_seconds",
  "max_width",
  "max_height",
  "jpeg_max_quality",
] as const;
/** The numbers every group has. */
const NUMBERS = ["max_file_size_kb", "max_pixels", "default_capacity_kb", "convert_quality", "review_timeout_ms"] as const;
const FLAGS = ["enabled", "allow_api", "is_default", "review_fail_open", "webhook_allow_internal"] as const;
/** Every field the form shows an error for. */
const FIELDS = [
  "name",
  ...FLAGS,
  ...NUMBERS,
  ...NULLABLE,
  "allowed_extensions",
  "strategy_ids",
  "metadata",
  "convert_format",
  "review_provider",
  "review_webhook_url",
] as const;

const EXT = "ext_";
const POSITION = "position_";

const METADATA_LABELS: Record<(typeof METADATA_POLICIES)[number], string> = {
  keep: "Keep: store the bytes exactly as sent",
  strip_location: "Strip location: remove GPS, XMP, IPTC and the like; keep the rest of the EXIF",
  strip_all: "Strip all: also the rest of the EXIF, comments and text chunks",
};

/** A new group's form, as the API's defaults would make it. */
const NEW_GROUP: Record<string, string> = {
  enabled: "1",
  allow_api: "1",
  max_file_size_kb: "10240",
  max_pixels: "100000000",
  default_capacity_kb: "1048576",
  convert_quality: "80",
  review_provider: "none",
  review_timeout_ms: "5000",
  metadata: "strip_location",
  convert_format: "",
  ...Object.fromEntries(["jpg", "jpeg", "png", "gif", "webp", "avif"].map((e) => [`${EXT}${e}`, "1"])),
};

/** The form's values of a stored group. */
function valuesOf(g: GroupWithStrategies): Record<string, string> {
  const text = (v: number | string | null) => (v === null ? "" : String(v));
  const values: Record<string, string> = {
    name: g.name,
    enabled: g.enabled ? "1" : "",
    allow_api: g.allowApi ? "1" : "",
    is_default: g.isDefault ? "1" : "",
    review_fail_open: g.reviewFailOpen ? "1" : "",
    webhook_allow_internal: g.webhookAllowInternal ? "1" : "",
    max_file_size_kb: text(g.maxFileSizeKb),
    max_pixels: text(g.maxPixels),
    default_capacity_kb: text(g.defaultCapacityKb),
    convert_quality: text(g.convertQuality),
    review_timeout_ms: text(g.reviewTimeoutMs),
    uploads_per_minute: text(g.uploadsPerMinute),
    uploads_per_hour: text(g.uploadsPerHour),
    uploads_per_day: text(g.uploadsPerDay),
    uploads_per_week: text(g.uploadsPerWeek),
    uploads_per_month: text(g.uploadsPerMonth),
    concurrent_uploads: text(g.concurrentUploads),
    retention_max_seconds: text(g.retentionMaxSeconds),
    max_width: text(g.maxWidth),
    max_height: text(g.maxHeight),
    jpeg_max_quality: text(g.jpegMaxQuality),
    metadata: g.metadata,
    convert_format: g.convertFormat ?? "",
    review_provider: g.reviewProvider,
    review_webhook_url: g.reviewWebhookUrl ?? "",
  };
  for (const e of g.allowedExtensions) values[`${EXT}${e}`] = "1";
  g.strategyIds.forEach((id, i) => {
    values[`${POSITION}${id}`] = String(i + 1);
  });
  return values;
}

/** The form as sent, kept for a re-render (bounded: the form is at most 64 KB). */
function sentValues(form: FormFields): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [k, v] of Object.entries(form)) if (k !== "_csrf") values[k] = v.slice(0, 2048);
  return values;
}

/**
 * The API's GroupInput of the form: every field (an unchecked box is false, an empty limit null). The strategies'
 * positions become the ordered `strategy_ids`; a position that is no whole number, or one two strategies share, is
 * refused here (the API sees only the order).
 */
function inputOf(form: FormFields, strategies: Strategy[]): { input: Record<string, unknown> } | { error: string } {
  const input: Record<string, unknown> = { name: formField(form, "name").trim() };
  for (const f of FLAGS) input[f] = formField(form, f) === "1";
  for (const f of NUMBERS) input[f] = numberOf(formField(form, f), null);
  for (const f of NULLABLE) input[f] = numberOf(formField(form, f), null);
  input.allowed_extensions = supportedExtensions.filter((e) => formField(form, `${EXT}${e}`) === "1");
  input.metadata = formField(form, "metadata");
  input.convert_format = formField(form, "convert_format") || null;
  input.review_provider = formField(form, "review_provider");
  input.review_webhook_url = formField(form, "review_webhook_url").trim() || null;
  const placed: { id: number; position: number }[] = [];
  for (const s of strategies) {
    const raw = formField(form, `${POSITION}${s.id}`).trim();
    if (raw === "") continue;
    const position = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
    if (!(position >= 1 && position <= GROUP_STRATEGIES_MAX)) {
      return { error: `The position of ${s.name} must be a whole number from 1 to ${GROUP_STRATEGIES_MAX}, or empty.` };
    }
    const twin = placed.find((p) => p.position === position);
    if (twin) return { error: `${strategies.find((t) => t.id === twin.id)!.name} and ${s.name} share position ${position}: give each its own.` };
    placed.push({ id: s.id, position });
  }
  input.strategy_ids = placed.sort((a, b) => a.position - b.position).map((p) => p.id);
  return { input };
}

function GroupForm({ c, group, strategies, shown }: { c: Context<SignedInEnv>; group: GroupWithStrategies | null; strategies: Strategy[]; shown: Shown }) {
  const signedIn = c.get("signedIn");
  const p = "group";
  const strategiesError = shown.errors.fields.strategy_ids;
  const extensionsError = shown.errors.fields.allowed_extensions;
  const ordered = [...strategies].sort((a, b) => {
    const pa = Number(shown.values[`${POSITION}${a.id}`]) || Infinity;
    const pb = Number(shown.values[`${POSITION}${b.id}`]) || Infinity;
    return pa - pb || a.id - b.id;
  });
  return (
    <form class="card admin-form" method="post" action={group ? `${GROUPS}/${group.id}` : GROUPS}>
      <FormToken signedIn={signedIn} />
      {shown.errors.form && <Notice kind="error">{shown.errors.form}</Notice>}
      {Object.keys(shown.errors.fields).length > 0 && <Notice kind="error">The group was not saved: see the fields marked below.</Notice>}
      <Input name="name" label="Name" shown={shown} idPrefix={p} required maxlength={100} hint="1 to 100 characters." />

      <fieldset class="admin-fieldset">
        <legend>Access</legend>
        <Checkbox
          name="enabled"
          label="Enabled"
          shown={shown}
          idPrefix={p}
          hint="A disabled group's members cannot sign in, use the API or upload; their sessions end."
        />
        <Checkbox
          name="allow_api"
          label="API access"
          shown={shown}
          idPrefix={p}
          hint="Without it, members' tokens and sessions are refused; their sessions end."
        />
        <Checkbox name="is_default" label="Default group" shown={shown} idPrefix={p} hint="New users (sign-up, the admin API without a group) join it." />
      </fieldset>

      <fieldset class="admin-fieldset">
        <legend>Size and capacity</legend>
        <Input
          name="max_file_size_kb"
          required
          label="Largest file (KB)"
          type="number"
          min={1}
          max={1_048_576}
          shown={shown}
          idPrefix={p}
          hint="1 to 1048576 KB (1 GB)."
        />
        <Input
          name="max_pixels"
          required
          label="Most pixels per image"
          type="number"
          min={1}
          max={1_000_000_000}
          shown={shown}
          idPrefix={p}
          hint="Width × height, 1 to 1,000,000,000."
        />
        <Input
          name="default_capacity_kb"
          required
          label="Default capacity per user (KB)"
          type="number"
          min={0}
          shown={shown}
          idPrefix={p}
          hint="A user's own capacity, when set, replaces it."
        />
        <Input
          name="retention_max_seconds"
          label="Longest retention (seconds)"
          type="number"
          min={1}
          shown={shown}
          idPrefix={p}
          hint="The furthest expiry an upload may ask for. Empty: no ceiling."
        />
      </fieldset>

      <fieldset class="admin-fieldset">
        <legend>Upload frequency</legend>
        <p class="hint">Uploads per user in each period; empty: no limit.</p>
        <div class="admin-grid">
          <Input name="uploads_per_minute" label="Per minute" type="number" min={1} shown={shown} idPrefix={p} />
          <Input name="uploads_per_hour" label="Per hour" type="number" min={1} shown={shown} idPrefix={p} />
          <Input name="uploads_per_day" label="Per day" type="number" min={1} shown={shown} idPrefix={p} />
          <Input name="uploads_per_week" label="Per week" type="number" min={1} shown={shown} idPrefix={p} />
          <Input name="uploads_per_month" label="Per month" type="number" min={1} shown={shown} idPrefix={p} />
          <Input name="concurrent_uploads" label="At the same time" type="number" min={1} shown={shown} idPrefix={p} />
        </div>
      </fieldset>

      <fieldset class="admin-fieldset" aria-describedby={extensionsError ? "group-extensions-error" : undefined}>
        <legend>Allowed formats</legend>
        <ul class="admin-checks">
          {supportedExtensions.map((e) => (
            <li class="checkbox">
              <label for={`group-ext-${e}`}>
                <input type="checkbox" id={`group-ext-${e}`} name={`${EXT}${e}`} value="1" checked={shown.values[`${EXT}${e}`] === "1"} /> .{e}
              </label>
            </li>
          ))}
        </ul>
        <FieldError id="group-extensions" error={extensionsError} />
      </fieldset>

      <fieldset class="admin-fieldset" aria-describedby={`group-strategies-hint${strategiesError ? " group-strategies-error" : ""}`}>
        <legend>Storage strategies, in order</legend>
        <small id="group-strategies-hint" class="hint">
          Give the strategies this group uses a position (1 first): automatic uploads try them in this order. Leave the others empty. At most{" "}
          {GROUP_STRATEGIES_MAX}.
        </small>
        <FieldError id="group-strategies" error={strategiesError} />
        {strategies.length === 0 ? (
          <p>
            There are no strategies yet: <a href={`${ADMIN}/strategies`}>create one</a>.
          </p>
        ) : (
          <div class="table-wrap">
            <table class="list stack admin-positions">
              <thead>
                <tr>
                  <th scope="col">Position</th>
                  <th scope="col">Strategy</th>
                  <th scope="col">Driver</th>
                  <th scope="col">State</th>
                </tr>
              </thead>
              <tbody>
                {ordered.map((s) => (
                  <tr>
                    <td data-label="Position">
                      <label for={`group-position-${s.id}`} class="visually-hidden">{`Position of ${s.name} (#${s.id})`}</label>
                      <input
                        type="number"
                        id={`group-position-${s.id}`}
                        name={`${POSITION}${s.id}`}
                        min={1}
                        max={GROUP_STRATEGIES_MAX}
                        step={1}
                        inputmode="numeric"
                        class="position"
                        value={shown.values[`${POSITION}${s.id}`] ?? ""}
                        aria-invalid={strategiesError ? "true" : undefined}
                        aria-describedby={strategiesError ? "group-strategies-error" : undefined}
                      />
                    </td>
                    <td data-label="Strategy">
                      {s.name} <span class="hint">#{s.id}</span>
                    </td>
                    <td data-label="Driver">{s.driver}</td>
                    <td data-label="State">{s.enabled ? "enabled" : "disabled"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </fieldset>

      <fieldset class="admin-fieldset">
        <legend>Metadata and processing on upload</legend>
        <Select name="metadata" label="Metadata policy" shown={shown} options={METADATA_POLICIES.map((m) => [m, METADATA_LABELS[m]])} />
        <Select
          name="convert_format"
          label="Convert to"
          shown={shown}
          options={[["", "No conversion"], ...CONVERT_FORMATS.map((f): [string, string] => [f, f.toUpperCase()])]}
          hint="An animation converts only to WebP; an upload already in this format is not re-encoded."
        />
        <div class="admin-grid">
          <Input name="convert_quality" required label="Conversion quality" type="number" min={1} max={100} shown={shown} idPrefix={p} hint="1 to 100." />
          <Input
            name="max_width"
            label="Largest width (px)"
            type="number"
            min={1}
            shown={shown}
            idPrefix={p}
            hint="Wider uploads are downscaled. Empty: no bound."
          />
          <Input
            name="max_height"
            label="Largest height (px)"
            type="number"
            min={1}
            shown={shown}
            idPrefix={p}
            hint="Taller uploads are downscaled. Empty: no bound."
          />
          <Input
            name="jpeg_max_quality"
            label="Highest JPEG quality"
            type="number"
            min={1}
            max={100}
            shown={shown}
            idPrefix={p}
            hint="1 to 100; better JPEGs are re-encoded. Empty: no cap."
          />
        </div>
      </fieldset>

      <fieldset class="admin-fieldset">
        <legend>Content review</legend>
        <Select
          name="review_provider"
          label="Review"
          shown={shown}
          options={[
            ["none", "None"],
            ["webhook", "Webhook"],
          ]}
        />
        <Input name="review_webhook_url" label="Webhook address" type="url" shown={shown} idPrefix={p} hint="Needed for a webhook review. Empty: none." />
        <Input
          name="review_timeout_ms"
          required
          label="Webhook timeout (ms)"
          type="number"
          min={100}
          max={60_000}
          shown={shown}
          idPrefix={p}
          hint="100 to 60000."
        />
        <Checkbox name="review_fail_open" label="Accept the image when the webhook fails or times out" shown={shown} idPrefix={p} />
      </fieldset>

      <fieldset class="admin-fieldset">
        <legend>Webhooks</legend>
        <Checkbox
          name="webhook_allow_internal"
          label="Members' webhooks may reach the internal hosts of WEBHOOK_ALLOW"
          shown={shown}
          idPrefix={p}
          hint="Off: a member's own endpoint must be at a public address, whatever WEBHOOK_ALLOW lists (it opens to site-wide endpoints). On: only for members you trust with your internal network; checked again at every delivery."
        />
      </fieldset>

      <div class="buttons admin-buttons">
        <button type="submit" class="primary">
          {group ? "Save the group" : "Create the group"}
        </button>
        <a class="button" href={GROUPS}>
          Cancel
        </a>
      </div>
    </form>
  );
}

async function renderForm(
  c: Context<SignedInEnv>,
  group: GroupWithStrategies | null,
  shown: Shown,
  status: 200 | 400 | 404 | 415 | 422 = 200,
  notice?: string,
) {
  const strategies = await listStrategies(c.get("deps").db);
  const title = group ? `Group: ${group.name}` : "New group";
  return c.html(
    <AdminLayout title={title} signedIn={c.get("signedIn")} section="groups">
      <p>
        <a href={GROUPS}>← All groups</a>
      </p>
      {notice && <Notice kind="success">{notice}</Notice>}
      {group?.isGuest && (
        <Notice kind="info">
          This is the <strong>guest group</strong>: its limits, formats and strategies apply to uploads without a token, when guest upload is on (Settings).
        </Notice>
      )}
      <GroupForm c={c} group={group} strategies={strategies} shown={shown} />
    </AdminLayout>,
    status,
  );
}

const limitText = (n: number | null) => (n === null ? "—" : String(n));

async function renderList(c: Context<SignedInEnv>) {
  const { db } = c.get("deps");
  const page = pageOf(c.req.query("page"));
  const [{ rows, total }, strategies, members] = await Promise.all([
    listGroups(db, PER_PAGE, (page - 1) * PER_PAGE),
    listStrategies(db),
    db.select({ groupId: users.groupId, n: count() }).from(users).groupBy(users.groupId),
  ]);
  const names = new Map(strategies.map((s) => [s.id, s.name]));
  const memberCount = new Map(members.map((m) => [m.groupId, m.n]));
  const last = Math.max(1, Math.ceil(total / PER_PAGE));
  const done = c.req.query("done");
  return c.html(
    <AdminLayout title="Groups" signedIn={c.get("signedIn")} section="groups">
      {done === "created" && <Notice kind="success">Group created.</Notice>}
      <p>
        <a class="button primary" href={`${GROUPS}/new`}>
          New group
        </a>
      </p>
      <div class="table-wrap">
        <table class="list stack admin-table" aria-label="User groups">
          <thead>
            <tr>
              <th scope="col">Group</th>
              <th scope="col">Users</th>
              <th scope="col">Largest file</th>
              <th scope="col">Capacity per user</th>
              <th scope="col">Uploads per min / hour / day</th>
              <th scope="col">Formats</th>
              <th scope="col">Strategies, in order</th>
              <th scope="col">Metadata</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((g) => (
              <tr>
                <td data-label="Group">
                  <a href={`${GROUPS}/${g.id}`} aria-label={`Edit the group ${g.name}`}>
                    {g.name}
                  </a>
                  {g.isGuest && <span class="badge">guest</span>}
                  {g.isDefault && <span class="badge">default</span>}
                  {!g.enabled && <span class="badge">disabled</span>}
                  {g.enabled && !g.allowApi && <span class="badge">no API</span>}
                  {g.webhookAllowInternal && <span class="badge">internal webhooks</span>}
                </td>
                <td data-label="Users">{g.isGuest ? "—" : (memberCount.get(g.id) ?? 0)}</td>
                <td data-label="Largest file">{formatBytes(g.maxFileSizeKb * 1024)}</td>
                <td data-label="Capacity per user">{formatBytes(g.defaultCapacityKb * 1024)}</td>
                <td data-label="Uploads per min / hour / day">{`${limitText(g.uploadsPerMinute)} / ${limitText(g.uploadsPerHour)} / ${limitText(g.uploadsPerDay)}`}</td>
                <td data-label="Formats">{g.allowedExtensions.join(", ")}</td>
                <td data-label="Strategies, in order">{g.strategyIds.length ? g.strategyIds.map((id) => names.get(id) ?? `#${id}`).join(" → ") : "none"}</td>
                <td data-label="Metadata">{g.metadata.replace("_", " ")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {last > 1 && (
        <nav class="pages" aria-label="Pages of groups">
          {page > 1 ? <a href={`${GROUPS}?page=${page - 1}`}>Previous</a> : <span></span>}
          <span>{`Page ${page} of ${last}`}</span>
          {page < last ? <a href={`${GROUPS}?page=${page + 1}`}>Next</a> : <span></span>}
        </nav>
      )}
    </AdminLayout>,
  );
}

const statusOf = (answer: ApiAnswer) => ([400, 404, 415, 422].includes(answer.status) ? (answer.status as 400 | 404 | 415 | 422) : 422);

async function groupOf(c: Context<SignedInEnv>) {
  const group = await getGroupWithStrategies(c.get("deps").db, recordIdOf(c.req.param("id") ?? "", "group"));
  if (!group) throw notFound("There is no such group.");
  return group;
}

/** Saves the form through the admin API; a refusal re-renders it with the API's messages. */
async function save(c: Context<SignedInEnv>, group: GroupWithStrategies | null) {
  const form = await readForm(c);
  const values = sentValues(form);
  const strategies = await listStrategies(c.get("deps").db);
  const made = inputOf(form, strategies);
  if ("error" in made) return renderForm(c, group, { values, errors: { fields: { strategy_ids: made.error } } }, 422);
  const answer = group ? await adminApi(c, "PATCH", `/api/admin/groups/${group.id}`, made.input) : await adminApi(c, "POST", "/api/admin/groups", made.input);
  if (!answer.ok) {
    if (answer.status >= 500) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
    return renderForm(c, group, { values, errors: errorsOf(answer, FIELDS) }, statusOf(answer));
  }
  return c.redirect(group ? `${GROUPS}/${group.id}?done=saved` : `${GROUPS}?done=created`, 303);
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/groups", requireAdminSession, (c) => renderList(c));
  web.get("/admin/groups/new", requireAdminSession, (c) => renderForm(c, null, { values: { ...NEW_GROUP }, errors: { fields: {} } }));
  web.post("/admin/groups", requireAdminSession, (c) => save(c, null));
  web.get("/admin/groups/:id", requireAdminSession, async (c) => {
    const group = await groupOf(c);
    return renderForm(c, group, { values: valuesOf(group), errors: { fields: {} } }, 200, c.req.query("done") === "saved" ? "Group saved." : undefined);
  });
  web.post("/admin/groups/:id", requireAdminSession, async (c) => save(c, await groupOf(c)));
}
