/** The pages of a provider sign-in: a refusal, and the confirmation that links a new identity to an account. */
import { Field, Layout, Notice } from "../components/index.ts";
import { rich, t } from "../i18n/index.ts";
import { BASE, FORM_TOKEN_FIELD } from "../session.ts";

export function RefusedPage({ message }: { message: string }) {
  return (
    <Layout title={t("auth.signIn")}>
      <Notice kind="error">{message}</Notice>
      <p class="narrow">
        <a href={`${BASE}/login`}>{t("auth.signIn")}</a>
      </p>
    </Layout>
  );
}

export function LinkPage({
  provider,
  email,
  username,
  error,
  formToken,
}: {
  provider: string;
  email: string;
  username: string;
  error?: string;
  /** The form token of a session of that account begun since the request: the page offers to link with it. */
  formToken?: string;
}) {
  if (formToken) {
    return (
      <Layout title={t("oidc.link.title")}>
        <form class="card narrow" method="post" action={`${BASE}/oidc/link/session`}>
          <input type="hidden" name={FORM_TOKEN_FIELD} value={formToken} />
          <p>{rich("oidc.link.signedIn", { provider, email, username, b: (chunks) => <b>{chunks}</b> })}</p>
          <div class="buttons">
            <button type="submit" class="primary">
              {t("oidc.link.confirm")}
            </button>
            <a href={`${BASE}/dashboard`}>{t("oidc.link.cancel")}</a>
          </div>
        </form>
      </Layout>
    );
  }
  return (
    <Layout title={t("oidc.link.title")}>
      {error && <Notice kind="error">{error}</Notice>}
      <form class="card narrow" method="post" action={`${BASE}/oidc/link`}>
        <p>{rich("oidc.link.intro", { provider, email, username, b: (chunks) => <b>{chunks}</b> })}</p>
        <p class="muted">{t("oidc.link.after", { provider })}</p>
        <Field label={t("auth.password")} id="password">
          <input id="password" name="password" type="password" autocomplete="current-password" required maxlength={200} autofocus />
        </Field>
        <div class="buttons">
          <button type="submit" class="primary">
            {t("oidc.link.submit")}
          </button>
          <a href={`${BASE}/login`}>{t("oidc.link.cancel")}</a>
        </div>
      </form>
      <p class="narrow muted">{rich("oidc.link.otherWay", { a: (chunks) => <a href={`${BASE}/login/passkey`}>{chunks}</a> })}</p>
    </Layout>
  );
}
