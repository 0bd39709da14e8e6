/** An endpoint's delivery log, and the ways to send again what failed or was missed while it was off. */
import { DELIVERIES_PAGE, RESEND_MAX } from "../../services/webhooks.ts";
import { Card, Cell, Checkbox, EmptyState, FormToken, Notice, Pager, Table, TextInput, UtcTime } from "../components/index.ts";
import { rich, t } from "../i18n/index.ts";
import type { SignedIn } from "../session.ts";
import type { DeliveryView, EndpointView } from "./types.ts";

/** Delivered and failed deliveries are kept this long (the sweeper). */
const KEPT_DAYS = 30;

const truncate = (text: string, n: number) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

function DeliveryRow({ d, here, signedIn }: { d: DeliveryView; here: string; signedIn: SignedIn }) {
  const dash = t("common.dash");
  return (
    <tr data-delivery={String(d.id)}>
      <th scope="row">
        <code>{d.eventType}</code> <span class="muted small">#{d.id}</span>
      </th>
      <Cell label={t("webhooks.log.status")}>
        <span class={`delivery-${d.status}`}>{t("webhooks.log.state", { status: d.status })}</span>
        {d.status === "pending" && d.nextAttemptAt && <span class="muted small"> {rich("webhooks.log.next", { time: <UtcTime at={d.nextAttemptAt} /> })}</span>}
      </Cell>
      <Cell label={t("webhooks.log.attempts")}>{d.attempts}</Cell>
      <Cell label={t("webhooks.log.answer")}>{d.lastStatusCode ?? dash}</Cell>
      <Cell label={t("webhooks.log.latency")}>{d.lastLatencyMs ?? dash}</Cell>
      <Cell label={t("webhooks.log.lastError")} class="delivery-error">
        {d.lastError ? <span title={d.lastError}>{truncate(d.lastError, 120)}</span> : dash}
      </Cell>
      <Cell label={t("webhooks.log.time")}>
        <UtcTime at={d.lastAttemptAt ?? d.createdAt} />
      </Cell>
      <Cell>
        {d.status !== "pending" && (
          <form method="post" action={`${here}/deliveries/${d.id}/resend`} class="inline">
            <FormToken signedIn={signedIn} />
            <button type="submit" class="small" aria-label={t("webhooks.log.sendAgainLabel", { id: String(d.id) })}>
              {t("webhooks.log.sendAgain")}
            </button>
          </form>
        )}
      </Cell>
    </tr>
  );
}

export function DeliveryLog({
  here,
  deliveries,
  before,
  older,
  signedIn,
}: {
  here: string;
  deliveries: DeliveryView[];
  before?: number;
  older: string | null;
  signedIn: SignedIn;
}) {
  // a log pages by its oldest delivery, not by number: page 2 is anything older than the newest page
  const page = before === undefined ? 1 : 2;
  return (
    <Card id="log" title={t("webhooks.log.title")}>
      <p class="muted small">{t("webhooks.log.intro", { size: DELIVERIES_PAGE, before: before === undefined ? "none" : String(before), days: KEPT_DAYS })}</p>
      {deliveries.length === 0 ? (
        <EmptyState>{before === undefined ? t("webhooks.log.none") : rich("webhooks.log.noOlder", { a: (chunks) => <a href={here}>{chunks}</a> })}</EmptyState>
      ) : (
        <Table
          class="list deliveries"
          label={t("webhooks.log.label")}
          columns={[
            t("webhooks.log.event"),
            t("webhooks.log.status"),
            t("webhooks.log.attempts"),
            t("webhooks.log.answer"),
            t("webhooks.log.latency"),
            t("webhooks.log.lastError"),
            t("webhooks.log.time"),
            { hidden: t("webhooks.log.actions") },
          ]}
        >
          {deliveries.map((d) => (
            <DeliveryRow d={d} here={here} signedIn={signedIn} />
          ))}
        </Table>
      )}
      {(before !== undefined || older) && (
        <Pager
          page={page}
          lastPage={older ? undefined : page}
          href={(p) => (p < page ? here : (older ?? here))}
          label={t("webhooks.log.pages")}
          prev={t("webhooks.log.newest")}
          next={t("webhooks.log.older")}
          summary=""
        />
      )}
    </Card>
  );
}

/** A time as a datetime-local field holds it, in UTC: `YYYY-MM-DDTHH:MM`. */
const utcField = (d: Date) => d.toISOString().slice(0, 16);

/** Where "what it missed" begins: the failure streak that led to the switch-off, else the switch-off itself. */
const missedSince = (e: EndpointView, now: Date) => e.failingSince ?? e.disabledAt ?? new Date(now.getTime() - 86_400_000);

/** The notice after sending failed deliveries again (`done=enabled-resent` or `resent-failed`, `n` of them). */
export function ResentNotice({ done, n }: { done: string; n: string | undefined }) {
  const count = /^\d{1,6}$/.test(n ?? "") ? Number(n) : null;
  if (count === null || (done !== "enabled-resent" && done !== "resent-failed")) return null;
  const parts = [
    done === "enabled-resent" && t("webhooks.notice.enabled"),
    t("webhooks.notice.resentFailed", { count }),
    count >= RESEND_MAX && t("webhooks.notice.resentMost"),
  ];
  return <Notice kind="success">{parts.filter(Boolean).join(" ")}</Notice>;
}

/** Switching on, with what it missed (checked by default): the deliveries that failed or were not sent since the streak or the switch-off. */
export function SwitchOn({ here, endpoint, signedIn }: { here: string; endpoint: EndpointView; signedIn: SignedIn }) {
  return (
    <form method="post" action={`${here}/enable`} class="admin-form webhook-switch-on">
      <FormToken signedIn={signedIn} />
      <Checkbox id="resend-missed" name="resend" label={t("webhooks.switchOn.resend")} hint={t("webhooks.switchOn.resendHint")} checked />
      <TextInput
        id="resend-missed-since"
        name="since"
        type="datetime-local"
        label={t("webhooks.switchOn.since")}
        value={utcField(missedSince(endpoint, new Date()))}
        attrs={{ step: 60 }}
      />
      <div class="admin-buttons">
        <button type="submit" class="primary">
          {t("webhooks.switchOn.submit")}
        </button>
      </div>
    </form>
  );
}

/** The delivery log's recovery: every failed delivery of events since a time, sent again. */
export function ResendFailed({ here, endpoint, signedIn }: { here: string; endpoint: EndpointView; signedIn: SignedIn }) {
  return (
    <Card id="resend-failed" title={t("webhooks.resendFailed.title")}>
      <form method="post" action={`${here}/resend-failed`} class="admin-form">
        <FormToken signedIn={signedIn} />
        <TextInput
          id="resend-failed-since"
          name="since"
          type="datetime-local"
          label={t("webhooks.resendFailed.since")}
          value={utcField(endpoint.failingSince ?? new Date(Date.now() - 86_400_000))}
          hint={t("webhooks.resendFailed.hint", { max: RESEND_MAX })}
          attrs={{ step: 60, required: true }}
        />
        <div class="admin-buttons">
          <button type="submit">{t("webhooks.resendFailed.submit")}</button>
        </div>
      </form>
    </Card>
  );
}
