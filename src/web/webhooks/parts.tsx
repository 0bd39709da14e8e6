/** Pieces of the webhook pages: an endpoint's state, its form's fields, the secret shown once, the list of endpoints. */
import type { Child } from "hono/jsx";
import type { EventType } from "../../db/schema.ts";
import { DESCRIPTION_MAX } from "../../services/webhooks.ts";
import { Card, Cell, FieldError, Notice, SecretValue, Table, TextInput, UtcTime } from "../components/index.ts";
import { type MessageKey, rich, t } from "../i18n/index.ts";
import type { EndpointView, FormState, Secret, WebhookArea } from "./types.ts";

const EVENT_HINTS: Record<EventType, MessageKey> = {
  "image.uploaded": "webhooks.event.imageUploaded",
  "image.deleted": "webhooks.event.imageDeleted",
  "image.expired": "webhooks.event.imageExpired",
  "token.revoked": "webhooks.event.tokenRevoked",
  "user.disabled": "webhooks.event.userDisabled",
};

/** Why an endpoint is off, in the page's words (the reasons the service and the delivery worker write). */
function reasonOf(reason: string | null): Child {
  if (reason === null) return t("webhooks.reason.off");
  if (reason === "switched off by its owner") return t("webhooks.reason.owner");
  if (reason === "answered 410 Gone") return t("webhooks.reason.gone");
  const failing = /^failing since (\d{4}-\d\d-\d\dT[\d:.]+Z)$/.exec(reason);
  if (failing) return rich("webhooks.reason.failing", { time: <UtcTime at={new Date(failing[1]!)} /> });
  return reason;
}

/** The endpoint's state, in words the owner notices: disabled with its reason, or failing since when. */
export function EndpointStatus({ e }: { e: EndpointView }) {
  if (!e.enabled) {
    return (
      <span class="webhook-status disabled" data-testid="endpoint-status">
        <strong>{rich("webhooks.status.disabled", { reason: reasonOf(e.disabledReason) })}</strong>
        {e.disabledAt && (
          <>
            {" "}
            <span class="muted small">{rich("webhooks.status.since", { time: <UtcTime at={e.disabledAt} /> })}</span>
          </>
        )}
      </span>
    );
  }
  if (e.failingSince) {
    return (
      <span class="webhook-status failing" data-testid="endpoint-status">
        <strong>{rich("webhooks.status.failing", { time: <UtcTime at={e.failingSince} /> })}</strong>{" "}
        <span class="muted small">{t("webhooks.status.failingNote")}</span>
      </span>
    );
  }
  return (
    <span class="webhook-status ok" data-testid="endpoint-status">
      {t("webhooks.status.enabled")}
    </span>
  );
}

export const eventField = (e: string) => `event_${e}`;

/** URL, description and the events, for adding and editing. */
export function EndpointFields({ area, form, prefix }: { area: WebhookArea; form: FormState; prefix: string }) {
  const { values, errors } = form;
  const id = (name: string) => `${prefix}-${name}`;
  return (
    <>
      <TextInput
        id={id("url")}
        name="url"
        type="url"
        label={t("webhooks.field.url")}
        value={values.url}
        hint={rich("webhooks.field.urlHint", { scope: area.scope, allow: <code>WEBHOOK_ALLOW</code> })}
        error={errors.url}
        attrs={{ required: true, maxlength: 2000, placeholder: "https://example.com/hooks/images" }}
      />
      <TextInput
        id={id("description")}
        name="description"
        label={t("webhooks.field.description")}
        value={values.description}
        hint={t("webhooks.field.descriptionHint", { max: DESCRIPTION_MAX })}
        error={errors.description}
        attrs={{ maxlength: DESCRIPTION_MAX }}
      />
      <fieldset class="webhook-events" aria-describedby={errors.events ? `${id("events")}-error` : undefined} aria-invalid={errors.events ? "true" : undefined}>
        <legend>{t("webhooks.field.events")}</legend>
        <ul class="admin-checks">
          {area.events.map((e) => (
            <li class="checkbox">
              <label for={id(`ev-${e}`)}>
                <input type="checkbox" id={id(`ev-${e}`)} name={eventField(e)} value="1" checked={values.events.includes(e)} />
                <span>
                  <code>{e}</code> <span class="muted small">{t(EVENT_HINTS[e])}</span>
                </span>
              </label>
            </li>
          ))}
        </ul>
        <FieldError id={id("events")} error={errors.events} />
      </fieldset>
    </>
  );
}

export function SecretShown({ shown, area }: { shown: Secret; area: WebhookArea }) {
  return (
    <Card id="secret" class="secret" title={shown.rotated ? t("webhooks.secret.rotated") : t("webhooks.secret.new")}>
      <Notice kind="info">
        {t("webhooks.secret.notice")}
        {shown.rotated && ` ${t("webhooks.secret.oldGone")}`}
      </Notice>
      <SecretValue id="webhook-secret" label={t("webhooks.secret.field")} value={shown.secret} name={t("webhooks.secret.copyName")} />
      <p class="muted small">
        {rich("webhooks.secret.how", {
          id: <code>webhook-id</code>,
          timestamp: <code>webhook-timestamp</code>,
          signature: <code>webhook-signature</code>,
          v1: <code>v1,</code>,
          payload: <code>id.timestamp.body</code>,
          prefix: <code>whsec_</code>,
        })}
      </p>
      <p class="muted small">
        <a href={`${area.base}/${shown.endpoint.id}`}>{t("webhooks.secret.goTo")}</a> · <a href={area.base}>{t("webhooks.allEndpoints")}</a>
      </p>
    </Card>
  );
}

export function EndpointTable({ area, endpoints }: { area: WebhookArea; endpoints: EndpointView[] }) {
  return (
    <Table
      class="list webhooks"
      label={t("webhooks.list.label")}
      columns={[t("webhooks.col.url"), t("webhooks.col.description"), t("webhooks.col.events"), t("webhooks.col.status"), t("webhooks.col.created")]}
    >
      {endpoints.map((e) => (
        <tr class={e.enabled ? (e.failingSince ? "failing" : undefined) : "disabled"}>
          <th scope="row" class="webhook-url">
            <a href={`${area.base}/${e.id}`}>{e.url}</a>
          </th>
          <Cell label={t("webhooks.col.description")}>{e.description || <span class="muted">{t("common.dash")}</span>}</Cell>
          <Cell label={t("webhooks.col.events")}>{e.events.join(", ")}</Cell>
          <Cell label={t("webhooks.col.status")}>
            <EndpointStatus e={e} />
          </Cell>
          <Cell label={t("webhooks.col.created")}>
            <UtcTime at={e.createdAt} />
          </Cell>
        </tr>
      ))}
    </Table>
  );
}
