/**
 * The form of an OpenID Connect provider on the Sign-in page (sign-in.tsx): the provider as the form shows it, the form
 * as the admin API's body, and the form itself. The client secret is sent, never shown.
 */
import type { Context } from "hono";
import { aria, Field, FormToken, Notice, Switch, TextInput } from "../components/index.ts";
import { type FormFields, formField } from "../form.ts";
import { t } from "../i18n/index.ts";
import type { SignedInEnv } from "../session.ts";
import type { Shown } from "./form-kit.ts";

/** The admin API's OidcProvider. */
export interface ApiProvider {
  id: number;
  slug: string;
  label: string;
  issuer: string;
  client_id: string;
  client_secret_set: boolean;
  scopes: string;
  username_claim: string;
  email_claim: string;
  groups_claim: string | null;
  admin_group: string | null;
  group_map: { value: string; group_id: number }[];
  auto_provision: boolean;
  enabled: boolean;
  redirect_uri: string;
  identities: number;
}

const TEXT_FIELDS = [
  "slug",
  "label",
  "issuer",
  "client_id",
  "client_secret",
  "scopes",
  "username_claim",
  "email_claim",
  "groups_claim",
  "admin_group",
  "group_map",
] as const;
const SWITCHES = ["auto_provision", "enabled"] as const;
export const FIELDS = [...TEXT_FIELDS, ...SWITCHES, "clear_secret"];

/** A provider as the form shows it (text; check boxes "1"). */
export const valuesOf = (p?: ApiProvider): Record<string, string> =>
  p
    ? {
        slug: p.slug,
        label: p.label,
        issuer: p.issuer,
        client_id: p.client_id,
        client_secret: "",
        scopes: p.scopes,
        username_claim: p.username_claim,
        email_claim: p.email_claim,
        groups_claim: p.groups_claim ?? "",
        admin_group: p.admin_group ?? "",
        group_map: p.group_map.map((m) => `${m.value} = ${m.group_id}`).join("\n"),
        auto_provision: p.auto_provision ? "1" : "",
        enabled: p.enabled ? "1" : "",
      }
    : { scopes: "openid profile email", username_claim: "preferred_username", email_claim: "email", enabled: "1" };

/** The form as the API's body; a group map that does not read is reported as the form's own error. */
export function bodyOf(form: FormFields, editing: boolean): { body: Record<string, unknown>; mapError?: string } {
  const text = (name: string) => formField(form, name).trim();
  const body: Record<string, unknown> = {
    slug: text("slug"),
    label: text("label"),
    issuer: text("issuer"),
    client_id: text("client_id"),
    scopes: text("scopes").replace(/\s+/g, " "),
    username_claim: text("username_claim"),
    email_claim: text("email_claim"),
    groups_claim: text("groups_claim") || null,
    admin_group: text("admin_group") || null,
    auto_provision: formField(form, "auto_provision") === "1",
    enabled: formField(form, "enabled") === "1",
  };
  // an empty secret field keeps the stored secret when editing; "remove" makes a public client
  const secret = formField(form, "client_secret");
  if (secret !== "") body.client_secret = secret;
  else if (!editing || formField(form, "clear_secret") === "1") body.client_secret = "";
  const lines = text("group_map")
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  const map: { value: string; group_id: number }[] = [];
  for (const line of lines) {
    const m = /^(.+?)\s*=\s*(\d{1,10})$/.exec(line);
    if (!m) return { body, mapError: t("oidc.field.groupMapInvalid") };
    map.push({ value: m[1]!.trim(), group_id: Number(m[2]) });
  }
  body.group_map = map;
  return { body };
}

export function ProviderForm({ c, action, shown, provider }: { c: Context<SignedInEnv>; action: string; shown: Shown; provider?: ApiProvider }) {
  const v = shown.values;
  const e = shown.errors.fields;
  const field = (name: (typeof TEXT_FIELDS)[number], label: string, hint?: string, attrs: Record<string, string | number | boolean> = {}) => (
    <TextInput id={`oidc-${name}`} name={name} label={label} value={v[name]} hint={hint} error={e[name]} attrs={attrs} />
  );
  const example = `${c.get("deps").config.baseUrl.replace(/\/+$/, "")}/user/oidc/${v.slug || "<slug>"}/callback`;
  return (
    <form class="card admin-form" method="post" action={action}>
      <FormToken signedIn={c.get("signedIn")} />
      {shown.errors.form && <Notice kind="error">{shown.errors.form}</Notice>}
      {field("label", t("oidc.field.label"), undefined, { maxlength: 60, required: true })}
      {field("slug", t("oidc.field.slug"), t("oidc.field.slugHint", { example }), { maxlength: 32, required: true, pattern: "[a-z0-9][a-z0-9\\-]{0,31}" })}
      {field("issuer", t("oidc.field.issuer"), t("oidc.field.issuerHint"), {
        maxlength: 500,
        required: true,
        placeholder: "https://auth.example.com/application/o/images/",
      })}
      {field("client_id", t("oidc.field.clientId"), undefined, { maxlength: 300, required: true })}
      <TextInput
        id="oidc-client_secret"
        name="client_secret"
        type="password"
        label={t("oidc.field.clientSecret")}
        hint={t("oidc.field.clientSecretHint", { set: provider?.client_secret_set ? "yes" : "no" })}
        error={e.client_secret}
        attrs={{ maxlength: 1000, autocomplete: "new-password" }}
      />
      {provider?.client_secret_set && (
        <Switch id="oidc-clear_secret" name="clear_secret" label={t("oidc.field.clientSecretClear")} checked={v.clear_secret === "1"} />
      )}
      {field("scopes", t("oidc.field.scopes"), undefined, { maxlength: 500 })}
      {field("username_claim", t("oidc.field.usernameClaim"), undefined, { maxlength: 100 })}
      {field("email_claim", t("oidc.field.emailClaim"), undefined, { maxlength: 100 })}
      {field("groups_claim", t("oidc.field.groupsClaim"), t("oidc.field.groupsClaimHint"), { maxlength: 100 })}
      {field("admin_group", t("oidc.field.adminGroup"), t("oidc.field.adminGroupHint"), { maxlength: 200 })}
      <Field label={t("oidc.field.groupMap")} id="oidc-group_map" hint={t("oidc.field.groupMapHint")} error={e.group_map}>
        <textarea id="oidc-group_map" name="group_map" rows={3} spellcheck={false} {...aria("oidc-group_map", true, e.group_map)}>
          {v.group_map ?? ""}
        </textarea>
      </Field>
      <Switch
        id="oidc-auto_provision"
        name="auto_provision"
        label={t("oidc.field.autoProvision")}
        checked={v.auto_provision === "1"}
        error={e.auto_provision}
      />
      <Switch id="oidc-enabled" name="enabled" label={t("oidc.field.enabled")} checked={v.enabled === "1"} error={e.enabled} />
      <div class="buttons admin-buttons">
        <button type="submit" class="primary">
          {t("oidc.admin.save")}
        </button>
      </div>
    </form>
  );
}
