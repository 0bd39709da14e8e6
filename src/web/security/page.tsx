/**
 * Sign-in security, the signed-in account's own page: its authenticator app (set up with a QR code, turned off with
 * a current code), its recovery codes (made anew with a current code), its passkeys (added, renamed, removed). Every
 * change is written to the audit log by the services (services/second-factors/).
 */
import type { RegistrationResponseJSON } from "@simplewebauthn/server";
import type { Context, Hono } from "hono";
import type { Passkey } from "../../db/repositories/second-factors.ts";
import { notFound } from "../../errors.ts";
import { clientIp } from "../../http/auth.ts";
import { INT4_MAX } from "../../http/validation.ts";
import { auditAccount, selfActor } from "../../services/second-factors/audit.ts";
import { passkeysOf, registerPasskey, registrationOptions, removePasskey, renamePasskey } from "../../services/second-factors/passkeys.ts";
import { issueRecoveryCodes } from "../../services/second-factors/recovery.ts";
import { beginTotpEnrolment, confirmTotpEnrolment, pendingTotpEnrolment, removeTotp, verifyTotp } from "../../services/second-factors/totp.ts";
import { secondFactorsOf } from "../../services/sign-in.ts";
import { Card, Cell, FormToken, Layout, Notice, Table, TextInput, UtcTime } from "../components/index.ts";
import { formField, readForm } from "../form.ts";
import { t } from "../i18n/index.ts";
import { BASE, requireSession, type SignedIn, type SignedInEnv, type WebEnv } from "../session.ts";
import { boxOf, issuerOf, PasskeyButton, passkeyScripts, relyingParty, reserveCodeTry } from "./shared.tsx";
import { CODE_MAX, RecoveryCodes, TotpSetup } from "./step-pages.tsx";

const PATH = `${BASE}/security`;

interface Shown {
  notice?: string;
  error?: string;
  recoveryCodes?: string[];
}

function PasskeyRow({ passkey, signedIn }: { passkey: Passkey; signedIn: SignedIn }) {
  return (
    <tr data-passkey-id={String(passkey.id)}>
      <Cell label={t("security.passkeys.name")}>
        <form method="post" action={`${PATH}/passkeys/${passkey.id}/rename`} class="inline">
          <FormToken signedIn={signedIn} />
          <input name="name" value={passkey.name} maxlength={60} required aria-label={t("security.passkeys.name")} />
          <button type="submit" class="small">
            {t("security.passkeys.rename")}
          </button>
        </form>
      </Cell>
      <Cell label={t("security.passkeys.created")}>
        <UtcTime at={passkey.createdAt} />
      </Cell>
      <Cell label={t("security.passkeys.lastUsed")}>{passkey.lastUsedAt ? <UtcTime at={passkey.lastUsedAt} /> : t("security.passkeys.never")}</Cell>
      <Cell>
        <form method="post" action={`${PATH}/passkeys/${passkey.id}/remove`}>
          <FormToken signedIn={signedIn} />
          <button type="submit" class="danger small" aria-label={t("security.passkeys.removeLabel", { name: passkey.name })}>
            {t("security.passkeys.remove")}
          </button>
        </form>
      </Cell>
    </tr>
  );
}

function SecurityPage({
  signedIn,
  shown,
  factors,
  passkeys,
}: {
  signedIn: SignedIn;
  shown: Shown;
  factors: { totp: boolean; recoveryCodes: number };
  passkeys: Passkey[];
}) {
  return (
    <Layout title={t("security.title")} signedIn={signedIn} active="account" scripts={passkeyScripts}>
      {shown.notice && <Notice kind="success">{shown.notice}</Notice>}
      {shown.error && <Notice kind="error">{shown.error}</Notice>}
      <p>{t("security.intro")}</p>
      {shown.recoveryCodes && <RecoveryCodes codes={shown.recoveryCodes} />}
      <Card id="totp" title={t("security.totp.title")}>
        {factors.totp ? (
          <>
            <p>{t("security.totp.on", { count: factors.recoveryCodes })}</p>
            <form method="post" action={`${PATH}/totp/remove`}>
              <FormToken signedIn={signedIn} />
              <TextInput
                id="remove-code"
                name="code"
                label={t("security.step.code")}
                hint={t("security.totp.removeHint")}
                attrs={{ inputmode: "numeric", autocomplete: "one-time-code", required: true, maxlength: CODE_MAX }}
              />
              <button type="submit" class="danger" name="action" value="remove">
                {t("security.totp.remove")}
              </button>{" "}
              <button type="submit" formaction={`${PATH}/recovery-codes`}>
                {t("security.recovery.regenerate")}
              </button>
            </form>
          </>
        ) : (
          <>
            <p>{t("security.totp.off")}</p>
            <form method="post" action={`${PATH}/totp/start`}>
              <FormToken signedIn={signedIn} />
              <button type="submit" class="primary">
                {t("security.totp.start")}
              </button>
            </form>
          </>
        )}
      </Card>
      <Card id="passkeys" title={t("security.passkeys.title")}>
        <p>{t("security.passkeys.intro")}</p>
        {passkeys.length === 0 ? (
          <p class="muted">{t("security.passkeys.none")}</p>
        ) : (
          <Table
            columns={[t("security.passkeys.name"), t("security.passkeys.created"), t("security.passkeys.lastUsed"), { hidden: t("security.passkeys.remove") }]}
            class="passkeys"
          >
            {passkeys.map((passkey) => (
              <PasskeyRow passkey={passkey} signedIn={signedIn} />
            ))}
          </Table>
        )}
        <TextInput name="passkey_name" label={t("security.passkeys.name")} hint={t("security.passkeys.nameHint")} attrs={{ maxlength: 60 }} />
        <PasskeyButton
          mode="register"
          options={`${PATH}/passkeys/options`}
          verify={`${PATH}/passkeys`}
          label={t("security.passkeys.add")}
          nameField="passkey_name"
        />
      </Card>
    </Layout>
  );
}

function TotpSetupPage({ signedIn, enrolment, error }: { signedIn: SignedIn; enrolment: { secret: string; qrSvg: string }; error?: string }) {
  return (
    <Layout title={t("security.totp.start")} signedIn={signedIn} active="account">
      <Card id="setup" title={t("security.totp.title")}>
        <TotpSetup enrolment={enrolment} action={`${PATH}/totp/confirm`} error={error} token={<FormToken signedIn={signedIn} />} />
      </Card>
    </Layout>
  );
}

const idOf = (value: string) => (/^\d{1,10}$/.test(value) && Number(value) >= 1 && Number(value) <= INT4_MAX ? Number(value) : 0);

export function register(web: Hono<WebEnv>) {
  const page = async (c: Context<SignedInEnv>, shown: Shown = {}, status: 200 | 401 | 404 | 429 = 200) => {
    const deps = c.get("deps");
    const signedIn = c.get("signedIn");
    const [factors, passkeys] = await Promise.all([secondFactorsOf(deps.db, signedIn.user.id), passkeysOf(deps.db, signedIn.user.id)]);
    return c.html(<SecurityPage signedIn={signedIn} shown={shown} factors={factors} passkeys={passkeys} />, status);
  };
  const actorOf = (c: Context<SignedInEnv>) => selfActor(c.get("signedIn").user, clientIp(c));

  web.get("/security", requireSession, (c) => {
    const q = (name: string) => c.req.query(name) !== undefined;
    const notice = q("totp_removed")
      ? t("security.totp.removed")
      : q("passkey_renamed")
        ? t("security.passkeys.renamed")
        : q("removed")
          ? t("security.passkeys.removed", { name: c.req.query("removed") ?? "" })
          : q("added")
            ? t("security.passkeys.added", { name: c.req.query("added") ?? "" })
            : undefined;
    return page(c, { notice });
  });

  const setupPage = async (c: Context<SignedInEnv>, error?: string, status: 200 | 401 | 429 = 200) => {
    const deps = c.get("deps");
    const signedIn = c.get("signedIn");
    const issuer = await issuerOf(c);
    const enrolment =
      (await pendingTotpEnrolment(deps.db, boxOf(deps), signedIn.user, issuer)) ??
      (await beginTotpEnrolment(deps.db, boxOf(deps), signedIn.user, issuer, deps.clock()));
    if (!enrolment) return page(c, { error: t("security.totp.already") });
    return c.html(<TotpSetupPage signedIn={signedIn} enrolment={enrolment} error={error} />, status);
  };

  web.post("/security/totp/start", requireSession, async (c) => {
    const deps = c.get("deps");
    const signedIn = c.get("signedIn");
    // a new secret each time this is asked (never one shown before), unless one is confirmed already
    const enrolment = await beginTotpEnrolment(deps.db, boxOf(deps), signedIn.user, await issuerOf(c), deps.clock());
    if (!enrolment) return page(c, { error: t("security.totp.already") });
    return c.html(<TotpSetupPage signedIn={signedIn} enrolment={enrolment} />);
  });

  web.post("/security/totp/confirm", requireSession, async (c) => {
    const deps = c.get("deps");
    const { user } = c.get("signedIn");
    const reserved = reserveCodeTry(c, user.id);
    if ("seconds" in reserved) {
      c.header("Retry-After", reserved.seconds);
      return setupPage(c, t("security.step.tooMany", { seconds: reserved.seconds }), 429);
    }
    const code = formField(await readForm(c), "code").slice(0, CODE_MAX);
    const confirmed = await confirmTotpEnrolment(deps.db, boxOf(deps), actorOf(c), code, deps.clock());
    if (confirmed.result === "none") return page(c, { error: t("security.totp.already") });
    if (confirmed.result !== "ok") return setupPage(c, confirmed.result === "replayed" ? t("security.step.replayed") : t("security.step.wrong"), 401);
    for (const unit of reserved.units) unit.refund();
    return page(c, { notice: t("security.totp.enabled"), recoveryCodes: confirmed.recoveryCodes });
  });

  /** A current code, checked (and used) before turning the app off or making new recovery codes. */
  const withCode = (path: string, then: (c: Context<SignedInEnv>) => Promise<Response>) =>
    web.post(path, requireSession, async (c) => {
      const deps = c.get("deps");
      const { user } = c.get("signedIn");
      const reserved = reserveCodeTry(c, user.id);
      if ("seconds" in reserved) {
        c.header("Retry-After", reserved.seconds);
        return page(c, { error: t("security.step.tooMany", { seconds: reserved.seconds }) }, 429);
      }
      const code = formField(await readForm(c), "code").slice(0, CODE_MAX);
      const outcome = await verifyTotp(deps.db, boxOf(deps), user.id, code, deps.clock());
      if (outcome !== "ok") return page(c, { error: outcome === "replayed" ? t("security.step.replayed") : t("security.step.wrong") }, 401);
      for (const unit of reserved.units) unit.refund();
      return then(c);
    });

  withCode("/security/totp/remove", async (c) => {
    await removeTotp(c.get("deps").db, actorOf(c), c.get("deps").clock());
    return c.redirect(`${PATH}?totp_removed`, 303);
  });

  withCode("/security/recovery-codes", async (c) => {
    const deps = c.get("deps");
    const actor = actorOf(c);
    const codes = await issueRecoveryCodes(deps.db, actor.userId, deps.clock());
    await auditAccount(deps.db, actor, "account.recovery_codes.regenerate", { recovery_codes: codes.length }, deps.clock());
    return page(c, { notice: t("security.recovery.regenerated"), recoveryCodes: codes });
  });

  web.post("/security/passkeys/options", requireSession, async (c) => {
    const deps = c.get("deps");
    const { user, session } = c.get("signedIn");
    return c.json(await registrationOptions(deps.db, await relyingParty(c), user, { sessionId: session.id }, deps.clock()));
  });

  web.post("/security/passkeys", requireSession, async (c) => {
    const deps = c.get("deps");
    const { session } = c.get("signedIn");
    const form = await readForm(c);
    let answer: RegistrationResponseJSON;
    try {
      answer = JSON.parse(formField(form, "response")) as RegistrationResponseJSON;
    } catch {
      answer = {} as RegistrationResponseJSON;
    }
    const passkey = await registerPasskey(deps.db, await relyingParty(c), actorOf(c), { sessionId: session.id }, answer, formField(form, "name"), deps.clock());
    return c.json({ location: `${PATH}?added=${encodeURIComponent(passkey.name)}` });
  });

  web.post("/security/passkeys/:id/rename", requireSession, async (c) => {
    const deps = c.get("deps");
    const row = await renamePasskey(deps.db, actorOf(c), idOf(c.req.param("id")), formField(await readForm(c), "name"), deps.clock());
    if (!row) throw notFound("There is no such passkey: it may have been removed already.");
    return c.redirect(`${PATH}?passkey_renamed`, 303);
  });

  web.post("/security/passkeys/:id/remove", requireSession, async (c) => {
    const deps = c.get("deps");
    const row = await removePasskey(deps.db, actorOf(c), idOf(c.req.param("id")), deps.clock());
    if (!row) throw notFound("There is no such passkey: it may have been removed already.");
    return c.redirect(`${PATH}?removed=${encodeURIComponent(row.name)}`, 303);
  });
}
