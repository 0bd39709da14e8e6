/** The webhook pages: the list with the form to add one, one endpoint with its log, and the no-script delete question. */
import type { Context } from "hono";
import { Card, ConfirmButton, ConfirmFooter, EmptyState, FormToken, Notice, UtcTime } from "../components/index.ts";
import { type MessageKey, rich, t } from "../i18n/index.ts";
import type { SignedInEnv } from "../session.ts";
import { DeliveryLog, ResendFailed, ResentNotice, SwitchOn } from "./log.tsx";
import { EndpointFields, EndpointStatus, EndpointTable, SecretShown } from "./parts.tsx";
import type { EndpointView, FormState, Secret, WebhookArea } from "./types.ts";

/** The notices of the redirects after a form (`?done=saved`, …). */
const NOTICES: Record<string, MessageKey> = {
  saved: "webhooks.notice.saved",
  enabled: "webhooks.notice.enabled",
  disabled: "webhooks.notice.disabled",
  test: "webhooks.notice.test",
  resent: "webhooks.notice.resent",
  deleted: "webhooks.notice.deleted",
};

const DoneNotice = ({ done }: { done: string | undefined }) => (done && NOTICES[done] ? <Notice kind="success">{t(NOTICES[done])}</Notice> : null);

/** An id of a path or query: digits only, 1..max; anything else is none. */
export function idOf(value: string | undefined, max = 2_147_483_647): number | null {
  if (value === undefined || !/^\d{1,16}$/.test(value)) return null;
  const n = Number(value);
  return n >= 1 && n <= max ? n : null;
}

const emptyForm = (area: WebhookArea): FormState => ({
  values: { url: "", description: "", events: area.events.filter((e) => e.startsWith("image.")) },
  errors: {},
});

export async function renderList(c: Context<SignedInEnv>, area: WebhookArea, shown: { form?: FormState; secret?: Secret } = {}, status: 200 | 400 | 422 = 200) {
  const signedIn = c.get("signedIn");
  const endpoints = await area.backend.list(c);
  const form = shown.form ?? emptyForm(area);
  const full = endpoints.length >= area.max;
  c.header("Cache-Control", "no-store");
  return c.html(
    area.frame({
      title: area.scope === "site" ? t("webhooks.titleSite") : t("webhooks.title"),
      signedIn,
      children: (
        <>
          <DoneNotice done={c.req.query("done")} />
          {shown.secret && <SecretShown shown={shown.secret} area={area} />}
          <p>{rich("webhooks.intro", { scope: area.scope, gone: <code>410 Gone</code> })}</p>
          <Card id="endpoints" title={t("webhooks.list.title")}>
            {endpoints.length === 0 ? <EmptyState>{t("webhooks.list.none")}</EmptyState> : <EndpointTable area={area} endpoints={endpoints} />}
            <p class="muted small">{t("webhooks.list.count", { count: endpoints.length, max: area.max })}</p>
          </Card>
          <Card id="add" title={t("webhooks.add.title")}>
            {form.refusal && <Notice kind="error">{form.refusal}</Notice>}
            {full && !form.refusal ? (
              <p class="muted">{t("webhooks.add.full", { max: area.max })}</p>
            ) : (
              <form method="post" action={area.base} class="admin-form">
                <FormToken signedIn={signedIn} />
                <EndpointFields area={area} form={form} prefix="new" />
                <div class="admin-buttons">
                  <button type="submit" class="primary">
                    {t("webhooks.add.submit")}
                  </button>
                </div>
              </form>
            )}
          </Card>
        </>
      ),
    }),
    status,
  );
}

function StateCard({ area, endpoint, c }: { area: WebhookArea; endpoint: EndpointView; c: Context<SignedInEnv> }) {
  const signedIn = c.get("signedIn");
  const here = `${area.base}/${endpoint.id}`;
  const state = endpoint.enabled ? (endpoint.failingSince ? " failing" : "") : " disabled";
  return (
    <section class={`card webhook-state${state}`} aria-labelledby="state-title">
      <h2 id="state-title">{t("webhooks.state.title")}</h2>
      <p class="webhook-url">
        <code>{endpoint.url}</code>
      </p>
      <p>
        <EndpointStatus e={endpoint} />
      </p>
      <p class="muted small">{rich("webhooks.state.created", { time: <UtcTime at={endpoint.createdAt} /> })}</p>
      {!endpoint.enabled && <SwitchOn here={here} endpoint={endpoint} signedIn={signedIn} />}
      <div class="buttons webhook-actions">
        {endpoint.enabled && (
          <form method="post" action={`${here}/disable`} class="inline">
            <FormToken signedIn={signedIn} />
            <button type="submit">{t("webhooks.state.switchOff")}</button>
          </form>
        )}
        <form method="post" action={`${here}/test`} class="inline">
          <FormToken signedIn={signedIn} />
          <button type="submit" disabled={!endpoint.enabled} aria-describedby={endpoint.enabled ? undefined : "test-hint"}>
            {t("webhooks.state.test")}
          </button>
        </form>
        <ConfirmButton
          action={`${here}/rotate`}
          class="inline"
          question={t("webhooks.state.rotateQuestion")}
          signedIn={signedIn}
          label={t("webhooks.state.rotate")}
          danger={false}
        />
        <ConfirmButton
          action={`${here}/delete`}
          class="inline"
          question={t("webhooks.state.deleteQuestion", { url: endpoint.url })}
          signedIn={signedIn}
          label={t("webhooks.state.delete")}
        />
      </div>
      {!endpoint.enabled && (
        <p id="test-hint" class="muted small">
          {t("webhooks.state.testHint")}
        </p>
      )}
    </section>
  );
}

export async function renderEndpoint(
  c: Context<SignedInEnv>,
  area: WebhookArea,
  endpoint: EndpointView,
  shown: { form?: FormState; secret?: Secret } = {},
  status: 200 | 422 = 200,
) {
  const signedIn = c.get("signedIn");
  const before = idOf(c.req.query("before"), Number.MAX_SAFE_INTEGER) ?? undefined;
  const log = await area.backend.deliveries(c, endpoint.id, before);
  const here = `${area.base}/${endpoint.id}`;
  const older = log.older === null ? null : `${here}?before=${log.older}`;
  const form = shown.form ?? { values: { url: endpoint.url, description: endpoint.description, events: endpoint.events }, errors: {} };
  const done = c.req.query("done");
  c.header("Cache-Control", "no-store");
  return c.html(
    area.frame({
      title: t("webhooks.endpointTitle", { id: String(endpoint.id) }),
      signedIn,
      children: (
        <>
          <p>
            <a href={area.base}>{t("webhooks.backToAll")}</a>
          </p>
          <DoneNotice done={done} />
          {done && <ResentNotice done={done} n={c.req.query("n")} />}
          {shown.secret && <SecretShown shown={shown.secret} area={area} />}
          <StateCard area={area} endpoint={endpoint} c={c} />
          <Card id="edit" title={t("webhooks.settings.title")}>
            {form.refusal && <Notice kind="error">{form.refusal}</Notice>}
            <form method="post" action={here} class="admin-form">
              <FormToken signedIn={signedIn} />
              <EndpointFields area={area} form={form} prefix="edit" />
              <div class="admin-buttons">
                <button type="submit" class="primary">
                  {t("webhooks.settings.save")}
                </button>
              </div>
            </form>
          </Card>
          <DeliveryLog here={here} deliveries={log.deliveries} before={before} older={older} signedIn={signedIn} />
          {endpoint.enabled && <ResendFailed here={here} endpoint={endpoint} signedIn={signedIn} />}
        </>
      ),
    }),
    status,
  );
}

/** The question asked when there is no script to ask it. */
export function renderDeleteQuestion(c: Context<SignedInEnv>, area: WebhookArea, endpoint: EndpointView) {
  const here = `${area.base}/${endpoint.id}`;
  return c.html(
    area.frame({
      title: t("webhooks.deleteTitle"),
      signedIn: c.get("signedIn"),
      children: (
        <form class="card narrow" method="post" action={`${here}/delete`}>
          <p>{rich("webhooks.state.deleteAsk", { url: endpoint.url, b: (chunks) => <strong class="webhook-url">{chunks}</strong> })}</p>
          <ConfirmFooter signedIn={c.get("signedIn")} label={t("webhooks.state.delete")} back={here} />
        </form>
      ),
    }),
  );
}
