/**
 * Sign-in, /user/admin/sign-in: the OpenID Connect providers the sign-in page offers (docs/single-sign-on.md) — the
 * list with each one's redirect URI, a form to add one, a page to change one, and removal. Every read and change is
 * a call of the admin API in-process (api.ts), so its validation, messages and audit log apply; the client secret is
 * sent, never shown.
 */
import type { Context, Hono } from "hono";
import { getSettings } from "../../db/repositories/settings.ts";
import { AppError } from "../../errors.ts";
import { Card, Cell, ConfirmButton, ConfirmPage, CopyField, EmptyState, Notice, Table } from "../components/index.ts";
import { formField, readForm } from "../form.ts";
import { num, t } from "../i18n/index.ts";
import { requireAdminSession, type SignedInEnv, type WebEnv } from "../session.ts";
import { adminApi } from "./api.ts";
import { errorsOf, type Shown } from "./form-kit.ts";
import { ADMIN, AdminLayout } from "./layout.tsx";
import { type ApiProvider, bodyOf, FIELDS, ProviderForm, valuesOf } from "./sign-in-form.tsx";

const PAGE = `${ADMIN}/sign-in`;
const API = "/api/admin/oidc-providers";

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

/**
 * Sends the form to the API (a new provider, or a change of `provider`); on a refusal, `again` shows the form again
 * with what was sent (never the secret) and the errors. Returns the saved provider's page.
 */
async function save(c: Context<SignedInEnv>, provider: ApiProvider | null, again: (shown: Shown, status: 400 | 415 | 422) => Promise<Response>) {
  const form = await readForm(c);
  const values = Object.fromEntries(FIELDS.map((n) => [n, n === "client_secret" ? "" : formField(form, n)]));
  const { body, mapError } = bodyOf(form, provider !== null);
  if (mapError) return again({ values, errors: { fields: { group_map: mapError } } }, 422);
  const answer = provider ? await adminApi<ApiProvider>(c, "PATCH", `${API}/${provider.id}`, body) : await adminApi<ApiProvider>(c, "POST", API, body);
  if (!answer.ok) {
    if (answer.status >= 500) throw new Error(`the admin API answered ${answer.status}: ${answer.message}`);
    return again({ values, errors: errorsOf(answer, FIELDS) }, statusOf(answer.status));
  }
  return c.redirect(`${PAGE}/${answer.data.id}?done=saved`, 303);
}

export function register(web: Hono<WebEnv>) {
  web.get("/admin/sign-in", requireAdminSession, (c) => listPage(c, { notice: c.req.query("done") === "removed" ? t("oidc.admin.removed") : undefined }));

  web.post("/admin/sign-in", requireAdminSession, (c) => save(c, null, (shown, status) => listPage(c, { shown }, status)));

  web.get("/admin/sign-in/:id", requireAdminSession, async (c) => {
    const provider = await providerOf(c);
    return editPage(c, provider, undefined, 200, c.req.query("done") === "saved" ? t("oidc.admin.saved") : undefined);
  });

  web.post("/admin/sign-in/:id", requireAdminSession, async (c) => {
    const provider = await providerOf(c);
    return save(c, provider, (shown, status) => editPage(c, provider, shown, status));
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
