/**
 * Email verification (services/mail/verification.ts): the link mailed after sign-up leads here; a button confirms
 * (a mail scanner that fetches the link confirms nothing). Signed in, /user/verify says whether the address still
 * needs confirming and sends the link again.
 */
import type { Context, Hono } from "hono";
import { getSettings } from "../db/repositories/settings.ts";
import { notFound } from "../errors.ts";
import { useEmailVerification } from "../services/mail/verification.ts";
import { FormToken, Layout, Notice } from "./components/index.ts";
import { rich, t } from "./i18n/index.ts";
import { queueEmailVerification } from "./mail/send.ts";
import { BASE, requireSession, requireThisSite, type SignedInEnv, type WebEnv } from "./session.ts";

export function register(web: Hono<WebEnv>) {
  web.get("/verify/:token{[\\w-]{20,100}}", (c) => {
    c.header("Referrer-Policy", "no-referrer");
    return c.html(
      <Layout title={t("mail.verify.title")}>
        <form class="card narrow" method="post" action={`${BASE}/verify/${c.req.param("token")}`}>
          <p>{t("mail.verify.confirmIntro")}</p>
          <button type="submit" class="primary">
            {t("mail.verify.confirm")}
          </button>
        </form>
      </Layout>,
    );
  });

  web.post("/verify/:token{[\\w-]{20,100}}", requireThisSite, async (c) => {
    const verified = await useEmailVerification(c.get("deps"), c.req.param("token"));
    if (verified === null) throw notFound(t("mail.verify.gone"));
    return c.html(
      <Layout title={t("mail.verify.title")}>
        <Notice kind="success">{t("mail.verify.done")}</Notice>
        <p class="narrow">
          <a href={`${BASE}/upload`}>{t("common.nav.upload")}</a>
        </p>
      </Layout>,
    );
  });

  const statusPage = async (c: Context<SignedInEnv>, resent: boolean) => {
    const signedIn = c.get("signedIn");
    const settings = await getSettings(c.get("deps").db);
    const needed = !signedIn.user.emailVerified && settings.emailVerification;
    return c.html(
      <Layout title={t("mail.verify.title")} signedIn={signedIn}>
        {resent && <Notice kind="info">{t("mail.verify.resent")}</Notice>}
        {needed ? (
          <form class="card narrow" method="post" action={`${BASE}/verify`}>
            <FormToken signedIn={signedIn} />
            <p>{rich("mail.verify.needed", { b: (chunks) => <strong>{chunks}</strong>, email: signedIn.user.email })}</p>
            <button type="submit">{t("mail.verify.resend")}</button>
          </form>
        ) : (
          <p class="narrow">{t("mail.verify.notNeeded")}</p>
        )}
      </Layout>,
    );
  };
  web.get("/verify", requireSession, (c) => statusPage(c, false));
  web.post("/verify", requireSession, async (c) => {
    const { user } = c.get("signedIn");
    if (!user.emailVerified) queueEmailVerification(c.get("deps"), user.id);
    return statusPage(c, true);
  });
}
