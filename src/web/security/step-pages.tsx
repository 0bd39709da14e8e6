/**
 * The pages of the sign-in steps (sign-in-steps.tsx): the second factor, passwordless passkey sign-in, enrolment when
 * the site requires a second factor, and the recovery codes shown once; the authenticator set-up and the codes are
 * the Security page's too.
 */
import type { Child } from "hono/jsx";
import { Card, CopyField, Layout, Notice, TextInput } from "../components/index.ts";
import { t } from "../i18n/index.ts";
import { BASE } from "../session.ts";
import { ENROL_PATH, SECOND_FACTOR_PATH } from "../sign-in.ts";
import { PasskeyButton, passkeyScripts } from "./shared.tsx";

/** The longest code read from a form (an authenticator code with spaces, a recovery code). */
export const CODE_MAX = 40;

/** The button of a passkey sign-in: the second factor, or passwordless. */
const PasskeySignIn = ({ label }: { label: string }) => (
  <PasskeyButton mode="authenticate" options={`${BASE}/login/passkey/options`} verify={`${BASE}/login/passkey/verify`} label={label} />
);

export function Expired() {
  return (
    <Layout title={t("security.step.title")}>
      <Notice kind="error">{t("security.step.expired")}</Notice>
      <p class="narrow">
        <a href={`${BASE}/login`}>{t("auth.signIn")}</a>
      </p>
    </Layout>
  );
}

function CancelForm() {
  return (
    <form method="post" action={`${BASE}/login/cancel`} class="narrow">
      <button type="submit" class="link">
        {t("security.step.cancel")}
      </button>
    </form>
  );
}

/** Passwordless sign-in: the browser offers this site's passkeys. */
export function PasskeySignInPage() {
  return (
    <Layout title={t("security.passkeys.signIn")} scripts={passkeyScripts}>
      <Card narrow>
        <p>{t("security.passkeys.intro")}</p>
        <PasskeySignIn label={t("security.passkeys.signIn")} />
      </Card>
      <p class="narrow">
        <a href={`${BASE}/login`}>{t("auth.signIn")}</a>
      </p>
    </Layout>
  );
}

export function SecondFactorPage({ factors, error }: { factors: { totp: boolean; passkeys: number; recoveryCodes: number }; error?: string }) {
  return (
    <Layout title={t("security.step.title")} scripts={factors.passkeys > 0 ? passkeyScripts : []}>
      {error && <Notice kind="error">{error}</Notice>}
      <p class="narrow">{t("security.step.intro")}</p>
      {factors.totp && (
        <form class="card narrow" method="post" action={`${SECOND_FACTOR_PATH}/totp`}>
          <TextInput
            name="code"
            label={t("security.step.code")}
            hint={t("security.step.codeHint")}
            attrs={{ inputmode: "numeric", autocomplete: "one-time-code", required: true, maxlength: CODE_MAX, autofocus: true, pattern: "[0-9 ]*" }}
          />
          <button type="submit" class="primary">
            {t("security.step.verify")}
          </button>
        </form>
      )}
      {factors.passkeys > 0 && (
        <Card narrow>
          <PasskeySignIn label={t("security.step.usePasskey")} />
        </Card>
      )}
      {factors.recoveryCodes > 0 && (
        <details class="card narrow">
          <summary>{t("security.step.recovery")}</summary>
          <form method="post" action={`${SECOND_FACTOR_PATH}/recovery`}>
            <TextInput
              name="recovery_code"
              label={t("security.step.recoveryCode")}
              hint={t("security.step.recoveryHint")}
              attrs={{ autocomplete: "off", required: true, maxlength: CODE_MAX }}
            />
            <button type="submit">{t("security.step.verify")}</button>
          </form>
        </details>
      )}
      <CancelForm />
    </Layout>
  );
}

export interface Enrolment {
  secret: string;
  qrSvg: string;
}

/** The authenticator app's QR code, its key, and the code that turns it on. */
export function TotpSetup({ enrolment, action, error, token }: { enrolment: Enrolment; action: string; error?: string; token?: Child }) {
  return (
    <form method="post" action={action}>
      {token}
      <p>{t("security.totp.scan")}</p>
      <figure class="qr">
        <img src={`data:image/svg+xml;base64,${Buffer.from(enrolment.qrSvg).toString("base64")}`} alt={t("security.totp.qr")} width="200" height="200" />
      </figure>
      <CopyField id="totp-secret" label={t("security.totp.key")} text={enrolment.secret} />
      <TextInput
        name="code"
        label={t("security.step.code")}
        error={error}
        attrs={{ inputmode: "numeric", autocomplete: "one-time-code", required: true, maxlength: CODE_MAX, pattern: "[0-9 ]*" }}
      />
      <button type="submit" class="primary">
        {t("security.totp.confirm")}
      </button>
    </form>
  );
}

/** The ten recovery codes, shown once, and where to go on. */
export function RecoveryCodes({ codes }: { codes: string[] }) {
  return (
    <Card id="recovery" title={t("security.recovery.title")}>
      <Notice kind="info">{t("security.recovery.notice")}</Notice>
      <CopyField id="recovery-codes" label={t("security.recovery.title")} text={codes.join("\n")} multiline copyLabel={t("security.recovery.copy")} />
    </Card>
  );
}

export function EnrolPage({ enrolment, error }: { enrolment: Enrolment; error?: string }) {
  return (
    <Layout title={t("security.enrol.title")} scripts={passkeyScripts}>
      <Notice kind="info">{t("security.required")}</Notice>
      <p>{t("security.enrol.choose")}</p>
      <Card id="enrol-totp" title={t("security.totp.title")}>
        <TotpSetup enrolment={enrolment} action={`${ENROL_PATH}/totp`} error={error} />
      </Card>
      <Card id="enrol-passkey" title={t("security.passkeys.title")}>
        <p>{t("security.passkeys.intro")}</p>
        <TextInput name="passkey_name" label={t("security.passkeys.name")} hint={t("security.passkeys.nameHint")} attrs={{ maxlength: 60 }} />
        <PasskeyButton
          mode="register"
          options={`${ENROL_PATH}/passkey/options`}
          verify={`${ENROL_PATH}/passkey/verify`}
          label={t("security.passkeys.add")}
          nameField="passkey_name"
        />
      </Card>
      <CancelForm />
    </Layout>
  );
}

export function RecoveryShownPage({ codes, next }: { codes: string[]; next: string }) {
  return (
    <Layout title={t("security.totp.enabled")}>
      <RecoveryCodes codes={codes} />
      <p>
        <a class="button primary" href={next}>
          {t("security.continue")}
        </a>
      </p>
    </Layout>
  );
}
