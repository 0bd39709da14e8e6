/** The Integrations page: which token the settings hold, the options, and the uploaders' tabs. */
import type { Child } from "hono/jsx";
import { formatDateTime } from "../../http/time.ts";
import { Card, FormToken, Layout, Notice, SecretValue, Select } from "../components/index.ts";
import { rich, t } from "../i18n/index.ts";
import { BASE, type SignedIn } from "../session.ts";
import { type Settings, TOKEN_PLACEHOLDER, uploadUrl } from "./configs.ts";
import { OptionFields, query, Uploaders } from "./uploaders.tsx";

export interface Choices {
  strategies: { id: number; name: string }[];
  albums: { id: number; name: string }[];
  tokens: { id: number; label: string | null; createdAt: Date }[];
}

export interface Shown {
  created?: { token: string; label: string };
  refusal?: string;
}

const tokensLink = (chunks: Child[]) => <a href={`${BASE}/tokens`}>{chunks}</a>;

function Created({ created, settings }: { created: NonNullable<Shown["created"]>; settings: Settings }) {
  return (
    <Card id="created" class="secret" title={t("integrations.created.title", { label: created.label })}>
      <Notice kind="info">{t("integrations.created.notice")}</Notice>
      <SecretValue id="new-token" label={t("integrations.created.field")} value={created.token} name={t("integrations.created.copyName")} />
      <p class="muted small">
        {rich("integrations.created.listed", {
          tokens: tokensLink,
          plain: (chunks) => <a href={`${BASE}/integrations?${query(settings.options)}`}>{chunks}</a>,
        })}
      </p>
    </Card>
  );
}

function WhichToken({ signedIn, settings, tokens }: { signedIn: SignedIn; settings: Settings; tokens: Choices["tokens"] }) {
  return (
    <Card id="token" title={t("integrations.token.title")}>
      <p>{rich("integrations.token.intro", { placeholder: <code>{TOKEN_PLACEHOLDER}</code> })}</p>
      <form method="post" action={`${BASE}/integrations`}>
        <FormToken signedIn={signedIn} />
        <OptionFields options={settings.options} />
        <button type="submit" class="primary">
          {t("integrations.token.make")}
        </button>
      </form>
      <p class="muted small">{rich("integrations.token.makeNote", { tokens: tokensLink })}</p>
      {tokens.length > 0 && (
        <>
          <h3 id="yours-title">{t("integrations.token.yours")}</h3>
          <ul class="plain" aria-labelledby="yours-title" data-testid="your-tokens">
            {tokens.map((x) => (
              <li>
                {x.label || t("integrations.token.unlabelled", { id: String(x.id) })}{" "}
                <span class="muted small">{t("integrations.token.made", { date: formatDateTime(x.createdAt) })}</span>
              </li>
            ))}
          </ul>
        </>
      )}
    </Card>
  );
}

function OptionsForm({ settings, choices, withToken }: { settings: Settings; choices: Choices; withToken: boolean }) {
  const o = settings.options;
  const withId = (x: { id: number; name: string }) => [String(x.id), t("integrations.options.withId", { name: x.name, id: String(x.id) })] as const;
  return (
    <Card id="options" title={t("integrations.options.title")}>
      <form method="get" action={`${BASE}/integrations`} class="row">
        <Select
          name="strategy_id"
          label={t("integrations.options.storage")}
          hint={t("integrations.options.storageHint")}
          options={[["", t("integrations.options.automatic")], ...choices.strategies.map(withId)]}
          value={o.strategyId === null ? "" : String(o.strategyId)}
        />
        <Select
          name="album_id"
          label={t("integrations.options.album")}
          options={[["", t("integrations.options.noAlbum")], ...choices.albums.map(withId)]}
          value={o.albumId === null ? "" : String(o.albumId)}
        />
        <Select
          name="permission"
          label={t("integrations.options.permission")}
          options={[
            ["1", t("integrations.options.public")],
            ["0", t("integrations.options.private")],
          ]}
          value={String(o.permission)}
        />
        <button type="submit">{t("integrations.options.apply")}</button>
      </form>
      {withToken && <p class="muted small">{t("integrations.options.applyNote")}</p>}
    </Card>
  );
}

export function IntegrationsPage({ signedIn, settings, choices, shown }: { signedIn: SignedIn; settings: Settings; choices: Choices; shown: Shown }) {
  const { created, refusal } = shown;
  const o = settings.options;
  const withToken = created !== undefined;
  const strategyName =
    o.strategyId === null ? t("integrations.footer.automatic") : (choices.strategies.find((x) => x.id === o.strategyId)?.name ?? String(o.strategyId));
  return (
    <Layout title={t("integrations.title")} signedIn={signedIn} active="integrations">
      <p>
        {rich("integrations.intro", {
          request: <code>POST {uploadUrl(settings)}</code>,
          header: <code>Authorization: Bearer &lt;token&gt;</code>,
          field: <code>file</code>,
        })}
      </p>
      {refusal && <Notice kind="error">{refusal}</Notice>}
      {created ? <Created created={created} settings={settings} /> : <WhichToken signedIn={signedIn} settings={settings} tokens={choices.tokens} />}
      <OptionsForm settings={settings} choices={choices} withToken={withToken} />
      <Uploaders settings={settings} signedIn={signedIn} withToken={withToken} />
      <p class="muted small">
        {rich("integrations.footer", {
          token: withToken ? t("integrations.footer.newToken") : <code>{TOKEN_PLACEHOLDER}</code>,
          storage: strategyName,
        })}
      </p>
    </Layout>
  );
}
