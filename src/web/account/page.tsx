/** The account page: email, password, language and theme, and where the account is signed in. */
import type { Session } from "../../db/repositories/sessions.ts";
import { describeUserAgent } from "../../services/sessions.ts";
import { Card, Cell, Checkbox, FormToken, Layout, Notice, PasswordInput, PostForm, PreferenceFields, Table, TextInput, UtcTime } from "../components/index.ts";
import { LOCALE_NAMES, type MessageKey, negotiate, rich, t, view } from "../i18n/index.ts";
import { BASE, type SignedIn } from "../session.ts";

/** The longest email, as on sign-up. */
export const EMAIL_MAX = 254;

export type FieldName = "current_password" | "new_password" | "new_password_again" | "email" | "email_password";

export interface Shown {
  notice?: string;
  refusal?: string;
  errors?: Partial<Record<FieldName, string>>;
  revokeTokens?: boolean;
  /** The email as typed, shown again after a refusal. */
  email?: string;
}

/** The device in the page's words: describeUserAgent's "Chrome on Linux" or "Unknown browser", translated. */
function deviceOf(userAgent: string): string {
  const said = describeUserAgent(userAgent);
  if (said === "Unknown browser") return t("account.sessions.unknownDevice");
  const [browser, system] = said.split(" on ");
  return system ? t("account.sessions.on", { browser, system }) : said;
}

/** How a session signed in (sessions.method): password, password+totp, passkey, oidc:<provider>… */
function methodOf(method: string): string {
  if (method.startsWith("oidc:")) {
    // an identity provider, then the account's second factor: oidc:<provider>+totp|passkey|recovery
    const [first = "", factor] = method.split("+");
    const provider = t("account.method.oidc", { provider: first.slice(5) });
    const second: Record<string, MessageKey> = {
      totp: "security.method.andTotp",
      passkey: "security.method.andPasskey",
      recovery: "security.method.andRecovery",
    };
    return factor && second[factor] ? t(second[factor], { first: provider }) : provider;
  }
  const known: Record<string, MessageKey> = {
    password: "account.method.password",
    "password+totp": "account.method.passwordTotp",
    "password+passkey": "account.method.passwordPasskey",
    "password+recovery": "account.method.passwordRecovery",
    passkey: "account.method.passkey",
  };
  return known[method] ? t(known[method]) : method;
}

function SessionRow({ s, signedIn }: { s: Session; signedIn: SignedIn }) {
  const current = s.id === signedIn.session.id;
  const device = deviceOf(s.userAgent);
  const address = s.ip || t("account.sessions.unknownAddress");
  return (
    <tr data-session={String(s.id)} class={current ? "current" : undefined}>
      <Cell label={t("account.sessions.device")}>
        <strong>{device}</strong>
        {current && <span class="badge this-session">{t("account.sessions.this")}</span>}
        {s.userAgent && <small class="muted ua">{s.userAgent}</small>}
      </Cell>
      <Cell label={t("account.sessions.address")}>{address}</Cell>
      <Cell label={t("account.sessions.method")}>{methodOf(s.method)}</Cell>
      <Cell label={t("account.sessions.lastSeen")}>
        <UtcTime at={s.lastSeenAt} />
      </Cell>
      <Cell label={t("account.sessions.signedIn")}>
        <UtcTime at={s.createdAt} />
      </Cell>
      <Cell>
        {current ? (
          <form method="post" action={`${BASE}/logout`}>
            <FormToken signedIn={signedIn} />
            <button type="submit" class="small" aria-label={t("account.sessions.signOutLabel")}>
              {t("account.sessions.signOut")}
            </button>
          </form>
        ) : (
          <form method="post" action={`${BASE}/account/sessions/${s.id}/end`}>
            <FormToken signedIn={signedIn} />
            <button type="submit" class="danger small">
              {t("account.sessions.end")} <span class="visually-hidden">{t("account.sessions.endOf", { device, address })}</span>
            </button>
          </form>
        )}
      </Cell>
    </tr>
  );
}

function Sessions({ signedIn, sessions }: { signedIn: SignedIn; sessions: Session[] }) {
  const others = sessions.filter((s) => s.id !== signedIn.session.id).length;
  return (
    <Card id="sessions" title={t("account.sessions.title")}>
      <p class="muted">{t("account.sessions.intro")}</p>
      <Table
        class="sessions"
        label={t("account.sessions.label")}
        columns={[
          t("account.sessions.device"),
          t("account.sessions.address"),
          t("account.sessions.method"),
          t("account.sessions.lastSeen"),
          t("account.sessions.signedIn"),
          { hidden: t("account.sessions.actions") },
        ]}
      >
        {sessions.map((s) => (
          <SessionRow s={s} signedIn={signedIn} />
        ))}
      </Table>
      {others > 0 ? (
        <form method="post" action={`${BASE}/account/sessions/end-others`} class="end-others">
          <FormToken signedIn={signedIn} />
          <button type="submit" class="danger">
            {t("account.sessions.endOthers", { count: others })}
          </button>
        </form>
      ) : (
        <p class="muted small">{t("account.sessions.nowhereElse")}</p>
      )}
    </Card>
  );
}

/** The account menu's preferences (POST /user/preferences), here with room to say what each one does. */
function Preferences({ signedIn }: { signedIn: SignedIn }) {
  const v = view();
  const browsers = negotiate(null, v.acceptLanguage, v.site.defaultLocale);
  return (
    <Card id="prefs" title={t("account.prefs.title")} narrow>
      <p class="muted">{t("account.prefs.intro")}</p>
      <form method="post" action={`${BASE}/preferences`}>
        <FormToken signedIn={signedIn} />
        <input type="hidden" name="back" value={`${BASE}/account?preferences`} />
        <PreferenceFields signedIn={signedIn} prefix="account" autoLabel={t("account.prefs.languageAuto", { current: LOCALE_NAMES[browsers] })} />
        <button type="submit" class="primary">
          {t("account.prefs.submit")}
        </button>
      </form>
    </Card>
  );
}

export function AccountPage({ signedIn, shown, sessions }: { signedIn: SignedIn; shown: Shown; sessions: Session[] }) {
  const { notice, refusal, errors = {}, revokeTokens = false } = shown;
  return (
    <Layout title={t("account.title")} signedIn={signedIn} active="account">
      {notice && <Notice kind="success">{notice}</Notice>}
      {refusal && <Notice kind="error">{refusal}</Notice>}
      <Card id="email" title={t("account.email.title")} narrow>
        <p>{rich("account.email.now", { email: <strong data-testid="current-email">{signedIn.user.email}</strong> })}</p>
        <PostForm action={`${BASE}/account/email`} signedIn={signedIn} novalidate>
          <TextInput
            name="email"
            type="email"
            label={t("account.email.new")}
            value={shown.email ?? ""}
            error={errors.email}
            attrs={{ autocomplete: "email", required: true, maxlength: EMAIL_MAX }}
          />
          <PasswordInput
            id="email_password"
            name="current_password"
            label={t("account.email.password")}
            hint={t("account.email.passwordHint")}
            error={errors.email_password}
            purpose="current"
          />
          <button type="submit" class="primary">
            {t("account.email.submit")}
          </button>
        </PostForm>
      </Card>
      <Card id="password" title={t("account.password.title")} narrow>
        <p class="muted">{t("account.password.intro")}</p>
        <PostForm action={`${BASE}/account/password`} signedIn={signedIn} novalidate>
          <PasswordInput name="current_password" label={t("account.password.current")} error={errors.current_password} purpose="current" />
          <PasswordInput name="new_password" label={t("account.password.new")} error={errors.new_password} purpose="new" />
          <PasswordInput name="new_password_again" label={t("account.password.again")} error={errors.new_password_again} purpose="again" />
          <Checkbox name="revoke_tokens" label={t("account.password.revokeTokens")} checked={revokeTokens} />
          <button type="submit" class="primary">
            {t("account.password.submit")}
          </button>
        </PostForm>
      </Card>
      <Card id="security" title={t("security.title")} narrow>
        <p class="muted">{t("security.intro")}</p>
        <p>
          <a href={`${BASE}/security`}>{t("security.manage")}</a>
        </p>
      </Card>
      <Preferences signedIn={signedIn} />
      <Sessions signedIn={signedIn} sessions={sessions} />
    </Layout>
  );
}
