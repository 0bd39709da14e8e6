/** The API tokens page: the secrets just made (shown once), the forms, the list of live tokens. */
import { formatUtc } from "../../http/time.ts";
import type { listActiveTokensForOwner } from "../../db/repositories/tokens.ts";
import {
  Card,
  Cell,
  ConfirmButton,
  CopyButton,
  DurationInput,
  EmptyState,
  FormToken,
  Layout,
  Notice,
  Pager,
  PostForm,
  SecretValue,
  Table,
  TextInput,
  UtcTime,
} from "../components/index.ts";
import { rich, t } from "../i18n/index.ts";
import { BASE, type SignedIn } from "../session.ts";

export const MAX_LABEL = 100;
export const NUM_MIN = 1;
export const NUM_MAX = 100;
/** The API's longest lifetime of a temporary token (2626560 s), in whole days for the words. */
export const LIFETIME_DAYS = 30;
/** Lifetimes offered: an hour, a day, 30 days, or custom. */
const LIFETIMES = [3600, 86_400, 30 * 86_400] as const;

export type Listed = Awaited<ReturnType<typeof listActiveTokensForOwner>>["rows"][number];

export interface Listing {
  tokens: Listed[];
  page: number;
  lastPage: number;
  total: number;
}

export interface Shown {
  /** A permanent token just created: its full value, this once. */
  created?: { id: number; token: string; label: string | null };
  /** Temporary tokens just issued, this once. */
  temporary?: { token: string; expiredAt: Date }[];
  notice?: string;
  /** A refusal of the whole form (a bound reached). */
  refusal?: string;
  errors?: Partial<Record<"label" | "num" | "seconds", string>>;
  values?: { label?: string; num?: string; seconds?: number | null };
}

/**
 * How a token is named on the page and in the revoke confirmations: its label and id, or, without a label,
 * "Token #<id>, created <date>" (UTC) so that tokens without one can be told apart.
 */
export function tokenName(token: { id: number; label: string | null; createdAt: Date }): string {
  const id = String(token.id);
  return token.label ? t("tokens.named", { label: token.label, id }) : t("tokens.unlabelled", { id, created: formatUtc(token.createdAt) });
}

function TokenRow({ token, signedIn }: { token: Listed; signedIn: SignedIn }) {
  const name = tokenName(token);
  return (
    <tr>
      <Cell label={t("tokens.col.label")}>
        {token.label ? (
          <>
            {token.label} <span class="muted">#{token.id}</span>
          </>
        ) : (
          <span class="unlabelled">{rich("tokens.unlabelled", { id: String(token.id), created: <UtcTime at={token.createdAt} /> })}</span>
        )}
      </Cell>
      <Cell label={t("tokens.col.kind")}>
        {token.kind === "permanent" ? t("tokens.kind.permanent") : rich("tokens.kind.upload", { time: <UtcTime at={token.expiredAt!} /> })}
      </Cell>
      <Cell label={t("tokens.col.created")}>
        <UtcTime at={token.createdAt} />
      </Cell>
      <Cell label={t("tokens.col.lastUsed")}>{token.lastUsedAt ? <UtcTime at={token.lastUsedAt} /> : t("common.never")}</Cell>
      <Cell>
        <ConfirmButton
          action={`${BASE}/tokens/${token.id}/revoke`}
          question={t("tokens.revoke.question", { name })}
          signedIn={signedIn}
          label={t("tokens.revoke.button")}
          ariaLabel={t("tokens.revoke.aria", { name })}
          small
        />
      </Cell>
    </tr>
  );
}

function Created({ created }: { created: NonNullable<Shown["created"]> }) {
  return (
    <Card id="created" class="secret" title={created.label ? t("tokens.created.titleLabelled", { label: created.label }) : t("tokens.created.title")}>
      <Notice kind="info">{t("tokens.created.notice")}</Notice>
      <SecretValue id="new-token" label={t("tokens.created.field")} value={created.token} name={t("tokens.created.copyName")} />
      <p class="muted small">{rich("tokens.created.use", { header: <code>Authorization: Bearer &lt;token&gt;</code>, form: <code>id|token</code> })}</p>
    </Card>
  );
}

function Temporary({ temporary }: { temporary: NonNullable<Shown["temporary"]> }) {
  return (
    <Card id="temporary" class="secret" title={t("tokens.temporary.title")}>
      <Notice kind="info">{t("tokens.temporary.notice")}</Notice>
      <ul class="plain" data-testid="temporary-tokens">
        {temporary.map((x) => (
          <li class="secret-value">
            <code>{x.token}</code> <span class="muted small">{rich("tokens.temporary.until", { time: <UtcTime at={x.expiredAt} /> })}</span>
            <CopyButton text={x.token} label={t("common.copy")} name={t("tokens.temporary.copyName")} />
          </li>
        ))}
      </ul>
      {temporary.length > 1 && (
        <CopyButton text={temporary.map((x) => x.token).join("\n")} label={t("tokens.temporary.copyAll")} name={t("tokens.temporary.copyAllName")} />
      )}
    </Card>
  );
}

function TokenList({ signedIn, listing }: { signedIn: SignedIn; listing: Listing }) {
  const { tokens, page, lastPage, total } = listing;
  return (
    <Card id="list" title={t("tokens.list.title")}>
      {total > 0 && <p class="muted small">{t("tokens.list.count", { count: total })}</p>}
      {tokens.length === 0 ? (
        <EmptyState>
          {total === 0 ? t("tokens.list.none") : rich("tokens.list.emptyPage", { a: (chunks) => <a href={`${BASE}/tokens`}>{chunks}</a> })}
        </EmptyState>
      ) : (
        <Table
          label={t("tokens.list.label")}
          columns={[t("tokens.col.label"), t("tokens.col.kind"), t("tokens.col.created"), t("tokens.col.lastUsed"), { hidden: t("tokens.col.actions") }]}
        >
          {tokens.map((token) => (
            <TokenRow token={token} signedIn={signedIn} />
          ))}
        </Table>
      )}
      {lastPage > 1 && (
        <Pager
          page={page}
          lastPage={lastPage}
          href={(p) => `${BASE}/tokens?page=${p}`}
          label={t("tokens.pager.label")}
          prev={t("tokens.pager.newer")}
          next={t("tokens.pager.older")}
          summary={t("tokens.pager.summary", { page, last: lastPage, count: total })}
        />
      )}
      <p class="muted small">{t("tokens.list.revokeNote")}</p>
    </Card>
  );
}

export function TokensPage({ signedIn, listing, shown }: { signedIn: SignedIn; listing: Listing; shown: Shown }) {
  const { created, temporary, notice, refusal, errors = {}, values = {} } = shown;
  return (
    <Layout title={t("tokens.title")} signedIn={signedIn} active="tokens">
      {notice && <Notice kind="success">{notice}</Notice>}
      {refusal && <Notice kind="error">{refusal}</Notice>}
      {created && <Created created={created} />}
      {temporary && <Temporary temporary={temporary} />}
      <Card id="create" title={t("tokens.create.title")}>
        <p class="muted">{t("tokens.create.intro")}</p>
        <form method="post" action={`${BASE}/tokens`} class="row">
          <FormToken signedIn={signedIn} />
          <TextInput
            name="label"
            label={t("tokens.create.label")}
            value={values.label}
            hint={t("tokens.create.labelHint")}
            error={errors.label}
            attrs={{ maxlength: MAX_LABEL }}
          />
          <button type="submit" class="primary">
            {t("tokens.create.submit")}
          </button>
        </form>
      </Card>
      <TokenList signedIn={signedIn} listing={listing} />
      <Card id="temporary-form" title={t("tokens.temporaryForm.title")}>
        <p class="muted">{t("tokens.temporaryForm.intro")}</p>
        <PostForm action={`${BASE}/tokens/temporary`} signedIn={signedIn} class="row">
          <TextInput
            name="num"
            type="number"
            label={t("tokens.temporaryForm.num")}
            value={values.num ?? "1"}
            hint={t("tokens.temporaryForm.numHint", { min: NUM_MIN, max: NUM_MAX })}
            error={errors.num}
            attrs={{ min: NUM_MIN, max: NUM_MAX, required: true }}
          />
          <DurationInput
            name="seconds"
            label={t("tokens.temporaryForm.lifetime")}
            seconds={values.seconds === undefined ? 3600 : values.seconds}
            presets={LIFETIMES}
            hint={t("tokens.temporaryForm.lifetimeHint", { days: LIFETIME_DAYS })}
            error={errors.seconds}
          />
          <button type="submit">{t("tokens.temporaryForm.submit")}</button>
        </PostForm>
      </Card>
    </Layout>
  );
}
