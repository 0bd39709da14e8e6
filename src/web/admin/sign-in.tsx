/**
 * Sign-in, /user/admin/sign-in: the OpenID Connect providers the sign-in page offers (docs/single-sign-on.md) — the
 * list with each one's redirect URI, a form to add one, a page to change one, and removal. Every read and change is
 * a call of the admin API in-process (api.ts), so its validation, messages and audit log apply; the client secret is
 * sent, never shown.
 */
import type { Context, Hono } from "hono";
import { getSettings } from "../../db/repositories/settings.ts";
import { AppError } from "../../errors.ts";
import { Card, Cell, ConfirmButton, ConfirmPage, CopyField, EmptyState, FormToken, Notice, Switch, Table, TextInput } from "../components/index.ts";
import { type FormFields, formField, readForm } from "../form.ts";
import { num, t } from "../i18n/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi } from "./api.ts";
import { errorsOf, type Shown } from "./form-kit.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";

const PAGE = `${ADMIN}/sign-in`;
const API = "/api/admin/oidc-providers";

/** The admin API's OidcProvider. */
interface ApiProvider {
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
const FIELDS = [...TEXT_FIELDS, ...SWITCHES, "clear_secret"];

/** A provider as the form shows it (text; check boxes "1"). */
const valuesOf = (p?: ApiProvider): Record<string, string> =>
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
function bodyOf(form: FormFields, editing: boolean): { body: Record<string, unknown>; mapError?: string } {
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

function ProviderForm({ c, action, shown, provider }: { c: Context<SignedInEnv>; action: string; shown: Shown; provider?: ApiProvider }) {
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
      <div class="field">
        <label for="oidc-group_map">{t("oidc.field.groupMap")}</label>
        <textarea
          id="oidc-group_map"
          name="group_map"
          rows={3}
          spellcheck={false}
          aria-describedby={`oidc-group_map-hint${e.group_map ? " oidc-group_map-error" : ""}`}
          aria-invalid={e.group_map ? "true" : undefined}
        >
          {v.group_map ?? ""}
        </textarea>
        <small id="oidc-group_map-hint" class="hint">
          {t("oidc.field.groupMapHint")}
        </small>
        {e.group_map && (
          <small id="oidc-group_map-error" class="field-error">
            {e.group_map}
          </small>
        )}
      </div>
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

async function listPage(c: Context<SignedInEnv>, options: { shown?: Shown; notice?: string } = {}, status: 200 | 400 | 415 | 422 = 200) {
  const signedIn = c.get("signedIn");
  const [answer, settings] = await Promise.all([adminApi<{ providers: ApiProvider[] }>(c, "GET", API), getSettings(c.get("deps").db)]);
  if (!answer.ok) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
  const providers = answer.data.providers;
  return c.html(
    <AdminLayout title={t("oidc.admin.title")} signedIn={signedIn} section="signIn">
      {options.notice && <Notice kind="success">{options.notice}</Notice>}
      <p>{t("oidc.admin.intro")}</p>
      <Notice kind="info">{settings.passwordSignIn ? t("oidc.admin.passwordOn") : t("oidc.admin.passwordOff")}</Notice>
      {providers.length === 0 ? (
        <EmptyState>{t("oidc.admin.empty")}</EmptyState>
      ) : (
        <Table
          label={t("oidc.admin.title")}
          columns={[
            t("oidc.admin.col.label"),
            t("oidc.admin.col.issuer"),
            t("oidc.admin.col.redirect"),
            t("oidc.admin.col.state"),
            t("oidc.admin.col.identities"),
            t("oidc.admin.col.actions"),
          ]}
        >
          {providers.map((p) => (
            <tr>
              <Cell label={t("oidc.admin.col.label")}>{p.label}</Cell>
              <Cell label={t("oidc.admin.col.issuer")}>
                <code>{p.issuer}</code>
              </Cell>
              <Cell label={t("oidc.admin.col.redirect")}>
                <CopyField id={`redirect-${p.id}`} label={t("oidc.admin.col.redirect")} text={p.redirect_uri} />
              </Cell>
              <Cell label={t("oidc.admin.col.state")}>
                {[p.enabled ? t("admin.enabled") : t("admin.disabled"), p.auto_provision && t("oidc.admin.autoProvision")].filter(Boolean).join(", ")}
              </Cell>
              <Cell label={t("oidc.admin.col.identities")}>{num(p.identities)}</Cell>
              <Cell label={t("oidc.admin.col.actions")}>
                <div class="buttons">
                  <a class="button small" href={`${PAGE}/${p.id}`}>
                    {t("oidc.admin.edit")}
                  </a>
                  <ConfirmButton
                    action={`${PAGE}/${p.id}/delete`}
                    question={t("oidc.admin.deleteConfirm", { label: p.label, n: p.identities })}
                    signedIn={signedIn}
                    label={t("oidc.admin.delete")}
                    small
                  />
                </div>
              </Cell>
            </tr>
          ))}
        </Table>
      )}
      <Card id="oidc-add" title={t("oidc.admin.add")}>
        <ProviderForm c={c} action={PAGE} shown={options.shown ?? { values: valuesOf(), errors: { fields: {} } }} />
      </Card>
    </AdminLayout>,
    status,
  );
}

async function editPage(c: Context<SignedInEnv>, provider: ApiProvider, shown?: Shown, status: 200 | 400 | 415 | 422 = 200, notice?: string) {
  return c.html(
    <AdminLayout title={t("oidc.admin.editTitle", { label: provider.label })} signedIn={c.get("signedIn")} section="signIn">
      {notice && <Notice kind="success">{notice}</Notice>}
      <p>
        <a href={PAGE}>{t("oidc.admin.title")}</a>
      </p>
      <CopyField id="redirect" label={t("oidc.admin.col.redirect")} text={provider.redirect_uri} />
      <ProviderForm c={c} action={`${PAGE}/${provider.id}`} shown={shown ?? { values: valuesOf(provider), errors: { fields: {} } }} provider={provider} />
    </AdminLayout>,
    status,
  );
}

/** The provider of the path, through the API (its 404 is the page's). */
async function providerOf(c: Context<SignedInEnv>): Promise<ApiProvider> {
  const id = c.req.param("id") ?? "";
  const answer = /^\d{1,10}$/.test(id) ? await adminApi<ApiProvider>(c, "GET", `${API}/${id}`) : null;
  if (!answer?.ok) throw new AppError("not_found", t("oidc.unknownProvider"));
  return answer.data;
}

const statusOf = (status: number): 400 | 415 | 422 => (status === 400 || status === 415 ? status : 422);

export function register(web: Hono<WebEnv>) {
  web.get("/admin/sign-in", requireAdminSession, (c) => listPage(c, { notice: c.req.query("done") === "removed" ? t("oidc.admin.removed") : undefined }));

  web.post("/admin/sign-in", requireAdminSession, async (c) => {
    const form = await readForm(c);
    const values = Object.fromEntries(FIELDS.map((n) => [n, n === "client_secret" ? "" : formField(form, n)]));
    const { body, mapError } = bodyOf(form, false);
    if (mapError) return listPage(c, { shown: { values, errors: { fields: { group_map: mapError } } } }, 422);
    const answer = await adminApi<ApiProvider>(c, "POST", API, body);
    if (!answer.ok) {
      if (answer.status >= 500) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
      return listPage(c, { shown: { values, errors: errorsOf(answer, FIELDS) } }, statusOf(answer.status));
    }
    return c.redirect(`${PAGE}/${answer.data.id}?done=saved`, 303);
  });

  web.get("/admin/sign-in/:id", requireAdminSession, async (c) => {
    const provider = await providerOf(c);
    return editPage(c, provider, undefined, 200, c.req.query("done") === "saved" ? t("oidc.admin.saved") : undefined);
  });

  web.post("/admin/sign-in/:id", requireAdminSession, async (c) => {
    const provider = await providerOf(c);
    const form = await readForm(c);
    const values = Object.fromEntries(FIELDS.map((n) => [n, n === "client_secret" ? "" : formField(form, n)]));
    const { body, mapError } = bodyOf(form, true);
    if (mapError) return editPage(c, provider, { values, errors: { fields: { group_map: mapError } } }, 422);
    const answer = await adminApi<ApiProvider>(c, "PATCH", `${API}/${provider.id}`, body);
    if (!answer.ok) {
      if (answer.status >= 500) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
      return editPage(c, provider, { values, errors: errorsOf(answer, FIELDS) }, statusOf(answer.status));
    }
    return c.redirect(`${PAGE}/${provider.id}?done=saved`, 303);
  });

  web.post("/admin/sign-in/:id/delete", requireAdminSession, async (c) => {
    const provider = await providerOf(c);
    const signedIn = c.get("signedIn");
    if (formField(await readForm(c), "confirmed") !== "1") {
      return c.html(
        <ConfirmPage
          title={t("oidc.admin.delete")}
          signedIn={signedIn}
          action={`${PAGE}/${provider.id}/delete`}
          confirmLabel={t("oidc.admin.delete")}
          cancel={PAGE}
          frame={({ title, children }) => (
            <AdminLayout title={title} signedIn={signedIn} section="signIn">
              {children}
            </AdminLayout>
          )}
        >
          <p>{t("oidc.admin.deleteConfirm", { label: provider.label, n: provider.identities })}</p>
        </ConfirmPage>,
      );
    }
    const answer = await adminApi(c, "DELETE", `${API}/${provider.id}`);
    if (!answer.ok) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
    return c.redirect(`${PAGE}?done=removed`, 303);
  });
}
