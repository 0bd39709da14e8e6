/**
 * The group form's values and the API's GroupInput: sizes in KB, MB or GB (the API counts KB), the pixel limit in
 * megapixels (the API counts pixels), the longest retention as a preset or a custom duration (the API counts seconds).
 * A stored group shows in the form as it is, and saves back unchanged.
 */
import type { GroupWithStrategies } from "../../db/repositories/groups.ts";
import { GROUP_STRATEGIES_MAX, type Strategy } from "../../db/repositories/strategies.ts";
import { supportedExtensions } from "../../images/formats.ts";
import { durationOf, pixelsOf, sizeKbOf } from "../components/index.ts";
import { type FormFields, formField } from "../form.ts";
import { t } from "../i18n/index.ts";
import { numberOf } from "./form-kit.ts";

/** The nullable limits of GroupInput as plain numbers: an empty field is no limit (null). */
const NULLABLE = [
  "uploads_per_minute",
  "uploads_per_hour",
  "uploads_per_day",
  "uploads_per_week",
  "uploads_per_month",
  "concurrent_uploads",
  "max_width",
  "max_height",
  "jpeg_max_quality",
] as const;
/** The numbers every group has, as plain numbers. */
const NUMBERS = ["convert_quality", "review_timeout_ms"] as const;
/** Sizes (KB in the API), in the form with a unit. */
export const SIZES = ["max_file_size_kb", "default_capacity_kb"] as const;
const FLAGS = ["enabled", "allow_api", "is_default", "review_fail_open", "webhook_allow_internal"] as const;
/** Every field the form shows an error for. */
export const FIELDS = [
  "name",
  ...FLAGS,
  ...NUMBERS,
  ...NULLABLE,
  ...SIZES,
  "max_pixels",
  "retention_max_seconds",
  "allowed_extensions",
  "strategy_ids",
  "metadata",
  "convert_format",
  "review_provider",
  "review_webhook_url",
] as const;

/** The errors of the fields in other units than the API's: in the form's own words. */
export const OWN_ERRORS: Record<string, () => string> = {
  max_file_size_kb: () => t("admin.error.size", { range: "1 KB – 1 GB" }),
  default_capacity_kb: () => t("admin.error.size", { range: "≥ 0 KB" }),
  max_pixels: () => t("admin.error.megapixels", { range: "0.000001 – 1000 MP" }),
  retention_max_seconds: () => t("admin.error.duration"),
};

export const EXT = "ext_";
export const POSITION = "position_";

/** The values of the form's fields; sizes, pixels and seconds in the API's units (numbers), or as typed when they are not. */
export type GroupValues = Record<string, string | number | null>;

/** A new group's form, as the API's defaults would make it. */
export const NEW_GROUP: GroupValues = {
  enabled: "1",
  allow_api: "1",
  max_file_size_kb: 10_240,
  max_pixels: 100_000_000,
  default_capacity_kb: 1_048_576,
  retention_max_seconds: null,
  convert_quality: "80",
  review_provider: "none",
  review_timeout_ms: "5000",
  metadata: "strip_location",
  convert_format: "",
  ...Object.fromEntries(["jpg", "jpeg", "png", "gif", "webp", "avif"].map((e) => [`${EXT}${e}`, "1"])),
};

/** The form's values of a stored group. */
export function valuesOf(g: GroupWithStrategies): GroupValues {
  const text = (v: number | string | null) => (v === null ? "" : String(v));
  const values: GroupValues = {
    name: g.name,
    enabled: g.enabled ? "1" : "",
    allow_api: g.allowApi ? "1" : "",
    is_default: g.isDefault ? "1" : "",
    review_fail_open: g.reviewFailOpen ? "1" : "",
    webhook_allow_internal: g.webhookAllowInternal ? "1" : "",
    max_file_size_kb: g.maxFileSizeKb,
    max_pixels: g.maxPixels,
    default_capacity_kb: g.defaultCapacityKb,
    retention_max_seconds: g.retentionMaxSeconds,
    convert_quality: text(g.convertQuality),
    review_timeout_ms: text(g.reviewTimeoutMs),
    uploads_per_minute: text(g.uploadsPerMinute),
    uploads_per_hour: text(g.uploadsPerHour),
    uploads_per_day: text(g.uploadsPerDay),
    uploads_per_week: text(g.uploadsPerWeek),
    uploads_per_month: text(g.uploadsPerMonth),
    concurrent_uploads: text(g.concurrentUploads),
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

/**
 * The API's GroupInput of the form (every field: an unchecked box is false, an empty limit null) and the values to
 * show again. The strategies' positions become the ordered `strategy_ids`; a position that is no whole number, or one
 * two strategies share, is refused here (the API sees only the order).
 */
export function inputOf(form: FormFields, strategies: Strategy[]): { input: Record<string, unknown>; values: GroupValues; error?: string } {
  const values: GroupValues = {};
  for (const [k, v] of Object.entries(form)) if (k !== "_csrf") values[k] = v.slice(0, 2048);
  const input: Record<string, unknown> = { name: formField(form, "name").trim() };
  for (const f of FLAGS) input[f] = formField(form, f) === "1";
  for (const f of [...NUMBERS, ...NULLABLE]) input[f] = numberOf(formField(form, f), null);
  for (const f of SIZES) values[f] = input[f] = sizeKbOf(form, f);
  values.max_pixels = input.max_pixels = pixelsOf(form, "max_pixels");
  const retention = durationOf(form, "retention_max_seconds");
  input.retention_max_seconds = retention;
  values.retention_max_seconds = typeof retention === "number" ? retention : null;
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
      return { input, values, error: t("admin.groups.position.range", { name: s.name, max: GROUP_STRATEGIES_MAX }) };
    }
    const twin = placed.find((p) => p.position === position);
    if (twin)
      return { input, values, error: t("admin.groups.position.twin", { first: strategies.find((o) => o.id === twin.id)!.name, second: s.name, position }) };
    placed.push({ id: s.id, position });
  }
  input.strategy_ids = placed.sort((a, b) => a.position - b.position).map((p) => p.id);
  return { input, values };
}
