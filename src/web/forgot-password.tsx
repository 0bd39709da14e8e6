/**
 * Self-service password reset (docs/decisions/mail.md): a visitor gives an email address; the account with that
 * address, if any, is mailed a one-time password link (the page of web/password-link.tsx sets the password). The
 * answer is the same, and as fast, whether an account has the address or not: the lookup and the mail run after the
 * answer. Requests are throttled per client address and per address typed, known or not, so a 429 tells nothing
 * either; the mails one account receives are bounded again in the database (services/mail/password-reset.ts).
 */
import { z } from "@hono/zod-openapi";
import type { Context, Hono } from "hono";
import { AppError, notFound } from "../errors.ts";
import { addressBucket, clientIp, currentSettings } from "../http/auth.ts";
import { FailedAuthThrottle, type Reservation } from "../http/throttle.ts";
import { Layout, Notice, TextInput } from "./components/index.ts";
import { formField, readForm } from "./form.ts";
import { rich, t } from "./i18n/index.ts";
import { mailConfigured, queuePasswordReset } from "./mail/send.ts";
import { BASE, requireThisSite, type WebEnv } from "./session.ts";

/** Reset requests per client address: 10 at once, then 10 an hour. */
const RESETS_PER_ADDRESS = { burst: 10, perMinute: 10 / 60 };
/** Reset requests per email address typed, whether an account has it or not: 3 at once, then 3 an hour. */
const RESETS_PER_EMAIL = { burst: 3, perMinute: 3 / 60 };

function ForgotPage({ email = "", error, sent, unavailable }: { email?: string; error?: string; sent?: boolean; unavailable?: boolean }) {
  return (
    <Layout title={t("mail.forgot.title")}>
      {sent && <Notice kind="success">{t("mail.forgot.sent")}</Notice>}
      {unavailable && <Notice kind="error">{t("mail.forgot.unavailable")}</Notice>}
      {!sent && !unavailable && (
        <form class="card narrow" method="post" action={`${BASE}/forgot`} novalidate>
          <p>{t("mail.forgot.intro")}</p>
          <TextInput
            name="email"
            type="email"
            label={t("mail.forgot.email")}
            value={email}
            error={error}
            attrs={{ autocomplete: "email", required: true, maxlength: 254, autofocus: true }}
          />
          <button type="submit" class="primary">
            {t("mail.forgot.send")}
          </button>
        </form>
      )}
      <p class="narrow muted">{rich("mail.forgot.back", { a: (chunks) => <a href={`${BASE}/login`}>{chunks}</a> })}</p>
    </Layout>
  );
}

export function register(web: Hono<WebEnv>) {
  const perAddress = new FailedAuthThrottle(RESETS_PER_ADDRESS);
  const perEmail = new FailedAuthThrottle(RESETS_PER_EMAIL);

  /** With password sign-in switched off (provider-only), there is no password to reset: the page does not exist. */
  async function passwordsInUse(c: Context<WebEnv>) {
    if (!(await currentSettings(c.get("deps"))).passwordSignIn) throw notFound(t("mail.forgot.passwordOff"));
  }

  web.get("/forgot", async (c) => {
    await passwordsInUse(c);
    c.header("Referrer-Policy", "no-referrer");
    return c.html(<ForgotPage unavailable={!(await mailConfigured(c.get("deps")))} />);
  });

  web.post("/forgot", requireThisSite, async (c) => {
    await passwordsInUse(c);
    const deps = c.get("deps");
    const form = await readForm(c);
    const email = formField(form, "email").trim().toLowerCase().slice(0, 254);
    if (!z.email().max(254).safeParse(email).success) return c.html(<ForgotPage email={email} error={t("auth.emailInvalid")} />, 422);
    if (!(await mailConfigured(deps))) return c.html(<ForgotPage unavailable />, 503);
    // both units are kept whatever happens next: a request costs the same for a known and an unknown address
    const refused = (e: unknown, whose: "address" | "email") => {
      if (!(e instanceof AppError && e.status === 429)) throw e;
      const seconds = e.headers?.["retry-after"] ?? "600";
      c.header("Retry-After", seconds);
      return c.html(<ForgotPage email={email} error={t("mail.forgot.tooMany", { whose, seconds })} />, 429);
    };
    let fromAddress: Reservation;
    try {
      fromAddress = perAddress.reserve(addressBucket(clientIp(c)));
    } catch (e) {
      return refused(e, "address");
    }
    try {
      perEmail.reserve(`email:${email}`);
    } catch (e) {
      fromAddress.refund(); // nothing was done for this request
      return refused(e, "email");
    }
    queuePasswordReset(deps, email);
    return c.html(<ForgotPage sent />);
  });
}
