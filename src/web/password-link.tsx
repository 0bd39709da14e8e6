/**
 * The page of a one-time password link: an administrator makes the link (admin page or
 * POST /api/admin/users/{id}/password-link); its user sets a password here, once, within the hour. Before sign-in:
 * the link's secret is the credential, and the form must come from this site.
 */
import type { Hono } from "hono";
import { notFound } from "../errors.ts";
import { PASSWORD_MAX, PASSWORD_MIN } from "../services/passwords.ts";
import { findPasswordLink, usePasswordLink } from "../services/password-links.ts";
import { formField, readForm } from "./form.ts";
import { Layout, Notice, PasswordInput } from "./components/index.ts";
import { rich, t } from "./i18n/index.ts";
import { BASE, requireThisSite, type WebEnv } from "./session.ts";

const gone = () => notFound(t("auth.linkGone"));

function PasswordPage({ token, username, error }: { token: string; username: string; error?: string }) {
  return (
    <Layout title={t("auth.setPassword")}>
      <form class="card narrow" method="post" action={`${BASE}/password/${token}`} novalidate>
        <p>{rich("auth.setPasswordOf", { b: (chunks) => <strong>{chunks}</strong>, username })}</p>
        <PasswordInput name="password" label={t("auth.newPassword")} error={error} purpose="new" />
        <PasswordInput id="again" name="again" label={t("auth.newPasswordAgain")} purpose="again" />
        <button type="submit" class="primary">
          {t("auth.setPasswordButton")}
        </button>
      </form>
    </Layout>
  );
}

export function register(web: Hono<WebEnv>) {
  web.get("/password/:token", async (c) => {
    const token = c.req.param("token");
    const link = await findPasswordLink(c.get("deps"), token);
    if (!link) throw gone();
    c.header("Referrer-Policy", "no-referrer");
    return c.html(<PasswordPage token={token} username={link.username} />);
  });

  web.post("/password/:token", requireThisSite, async (c) => {
    const deps = c.get("deps");
    const token = c.req.param("token");
    const link = await findPasswordLink(deps, token);
    if (!link) throw gone();
    const form = await readForm(c);
    const password = formField(form, "password");
    const problem =
      password.length < PASSWORD_MIN
        ? t("auth.atLeast", { n: PASSWORD_MIN })
        : password.length > PASSWORD_MAX
          ? t("auth.atMost", { n: PASSWORD_MAX })
          : password !== formField(form, "again")
            ? t("auth.differ")
            : null;
    if (problem) return c.html(<PasswordPage token={token} username={link.username} error={problem} />, 422);
    if (!(await usePasswordLink(deps, token, password))) throw gone();
    return c.html(
      <Layout title={t("auth.passwordSet")}>
        <Notice kind="success">{t("auth.passwordIsSet")}</Notice>
        <p class="narrow">{rich("auth.signInWithIt", { a: (chunks) => <a href={`${BASE}/login`}>{chunks}</a> })}</p>
      </Layout>,
    );
  });
}
