/**
 * Webhooks in the user center: the account's own endpoints (services/webhooks.ts, scope `{ ownerId }`).
 * The pages and their handlers are shared with the admin page of the site-wide endpoints (admin/webhooks.tsx), which
 * differs in its frame, its events (user.disabled too), its gate and its backend: this page calls the service layer
 * (serviceBackend, scope `{ ownerId }`), the admin page the admin API in-process (so the API's validation and audit log).
 *
 *   GET  /user/webhooks                                   the endpoints, and the form to add one
 *   POST /user/webhooks                                   add one: its secret is shown this once (the page is not stored)
 *   GET  /user/webhooks/:id                               one endpoint: edit, switch on/off, rotate, test, delete; its delivery log
 *   POST /user/webhooks/:id                               save URL, description, events
 *   POST /user/webhooks/:id/enable | /disable             switch on (its failure streak starts over; with `resend`, what failed
 *                                                         or was not sent since `since` is sent again) or off
 *   POST /user/webhooks/:id/resend-failed                 send again every failed delivery of events since `since`
 *   POST /user/webhooks/:id/rotate                        a new secret, shown this once
 *   POST /user/webhooks/:id/test                          a webhook.test event to this endpoint only
 *   POST /user/webhooks/:id/delete                        delete (confirmed; without the page's script, a page asks)
 *   POST /user/webhooks/:id/deliveries/:delivery/resend   send a delivered or failed delivery again
 *
 * Another account's endpoint is "not found", whatever the request. Every form post carries the session's form token.
 *
 * Switched off, an endpoint keeps each event it wants in its log as failed, "not sent: the endpoint was switched off";
 * switching it on offers to send those (and what failed before it went off) at once, checked by default: someone who
 * switches an endpoint back on wants what it missed (docs/decisions/webhook-switch-on.md).
 */
import type { Context, Hono, MiddlewareHandler } from "hono";
import type { Child } from "hono/jsx";
import { EVENT_TYPES, type EventType } from "../db/schema.ts";
import { AppError, notFound } from "../errors.ts";
import {
  createEndpoint,
  DELIVERIES_PAGE,
  DESCRIPTION_MAX,
  deleteEndpoint,
  type Delivery,
  type Endpoint,
  type EndpointInput,
  type EndpointScope,
  ENDPOINTS_PER_ACCOUNT,
  findEndpoint,
  listDeliveries,
  listEndpoints,
  RESEND_MAX,
  resendFailedSince,
  resendOneDelivery,
  rotateSecret,
  testEndpoint,
  updateEndpoint,
} from "../services/webhooks.ts";
import { parseDateTime } from "../http/time.ts";
import { UtcTime } from "./account.tsx";
import { formField, type FormFields, readForm } from "./form.ts";
import { FieldError, FormToken, Layout, Notice, SecretValue } from "./components/index.ts";
import { BASE, requireSession, type SignedIn, type SignedInEnv, type WebEnv } from "./session.ts";

/** What a user's endpoint may ask for: user.disabled goes to the site-wide endpoints only. */
const USER_EVENTS = EVENT_TYPES.filter((e) => e !== "user.disabled") as EventType[];

const EVENT_HINTS: Record<EventType, string> = {
  "image.uploaded": "an image was uploaded",
  "image.deleted": "an image was deleted",
  "image.expired": "an image reached its expiry and was removed",
  "token.revoked": "an API token was revoked",
  "user.disabled": "an account was disabled",
};

/** What the pages show of an endpoint (a service row has it; the admin page reads it from the admin API). */
export type EndpointView = Pick<Endpoint, "id" | "url" | "description" | "events" | "enabled" | "disabledReason" | "disabledAt" | "failingSince" | "createdAt">;
/** What the delivery log shows of a delivery. */
export type DeliveryView = Pick<
  Delivery,
  "id" | "eventType" | "status" | "attempts" | "lastStatusCode" | "lastLatencyMs" | "lastError" | "lastAttemptAt" | "nextAttemptAt" | "createdAt"
>;

/**
 * Where the pages read and change endpoints. A refusal is thrown as an AppError: 404 for an endpoint or delivery
 * not in scope, 422 with field errors (url, description, events), 400 for the whole form (the cap).
 */
export interface WebhookBackend {
  list(c: Context<SignedInEnv>): Promise<EndpointView[]>;
  /** The answer carries the secret, shown this once. */
  create(c: Context<SignedInEnv>, input: EndpointInput): Promise<{ endpoint: EndpointView; secret: string }>;
  find(c: Context<SignedInEnv>, id: number): Promise<EndpointView>;
  update(c: Context<SignedInEnv>, id: number, change: Partial<EndpointInput> & { enabled?: boolean }): Promise<EndpointView>;
  rotate(c: Context<SignedInEnv>, id: number): Promise<{ endpoint: EndpointView; secret: string }>;
  /** A webhook.test event to this endpoint only. */
  test(c: Context<SignedInEnv>, id: number): Promise<void>;
  /** A page of the log, newest first, and the `before` of the next page (null when there are no older deliveries). */
  deliveries(c: Context<SignedInEnv>, id: number, before?: number): Promise<{ deliveries: DeliveryView[]; older: number | null }>;
  /** Sends a delivered or failed delivery again (404 when there is none, or it is still pending). */
  resend(c: Context<SignedInEnv>, id: number, deliveryId: number): Promise<void>;
  /** Sends again every failed delivery of events since `since` (400 while the endpoint is off); answers how many. */
  resendFailed(c: Context<SignedInEnv>, id: number, since: Date): Promise<number>;
  remove(c: Context<SignedInEnv>, id: number): Promise<void>;
}

/** Where the pages live and what differs between the user's and the site's. */
export interface WebhookArea {
  /** The list page's path, e.g. /user/webhooks. */
  base: string;
  backend: WebhookBackend;
  events: EventType[];
  /** The most endpoints this scope may hold. */
  max: number;
  /** "your account" or "the site", in sentences. */
  whose: string;
  /** Who may open internal addresses to these endpoints, for the URL field's hint. */
  internal: string;
  gate: MiddlewareHandler<SignedInEnv>;
  /** The page's frame. */
  frame: (props: { title: string; signedIn: SignedIn; children: Child }) => ReturnType<typeof Layout>;
}

const NOTICES: Record<string, string> = {
  saved: "Changes saved.",
  enabled: "Endpoint switched on; its failure streak starts over.",
  disabled:
    "Endpoint switched off: no events are sent to it. Each one it would have received stays in the delivery log as not sent; switching it on offers to send them.",
  test: "A test event is on its way; it appears in the delivery log below.",
  resent: "The delivery is sent again; its row below shows the outcome.",
  deleted: "Endpoint deleted, with its delivery log.",
};

type FieldName = "url" | "description" | "events";
interface FormState {
  values: { url: string; description: string; events: string[] };
  errors: Partial<Record<FieldName, string>>;
  refusal?: string;
}

interface Secret {
  secret: string;
  endpoint: EndpointView;
  rotated: boolean;
}

// ---- pieces ----------------------------------------------------------------------------------------------------

/** The endpoint's state, in words the owner notices: disabled with its reason, or failing since when. */
function EndpointStatus({ e }: { e: EndpointView }) {
  if (!e.enabled) {
    return (
      <span class="webhook-status disabled" data-testid="endpoint-status">
        <strong>Disabled: {e.disabledReason ?? "switched off"}</strong>
        {e.disabledAt && (
          <>
            {" "}
            <span class="muted small">
              since <UtcTime at={e.disabledAt} />
            </span>
          </>
        )}
      </span>
    );
  }
  if (e.failingSince) {
    return (
      <span class="webhook-status failing" data-testid="endpoint-status">
        <strong>
          Enabled, failing since <UtcTime at={e.failingSince} />
        </strong>{" "}
        <span class="muted small">(a day of failures disables it)</span>
      </span>
    );
  }
  return (
    <span class="webhook-status ok" data-testid="endpoint-status">
      Enabled
    </span>
  );
}

const eventField = (e: string) => `event_${e}`;

/** URL, description and the events, for adding and editing. */
function EndpointFields({ area, form, prefix }: { area: WebhookArea; form: FormState; prefix: string }) {
  const { values, errors } = form;
  const id = (name: string) => `${prefix}-${name}`;
  const described = (name: FieldName, hint: string) => ({
    ...(errors[name] ? { "aria-invalid": "true" as const } : {}),
    "aria-describedby": errors[name] ? `${hint} ${id(name)}-error` : hint,
  });
  return (
    <>
      <div class="field">
        <label for={id("url")}>URL</label>
        <input
          id={id("url")}
          name="url"
          type="url"
          required
          maxlength={2000}
          value={values.url}
          placeholder="https://example.com/hooks/images"
          {...described("url", `${id("url")}-hint`)}
        />
        <small id={`${id("url")}-hint`} class="hint">
          http or https. Events are sent as POST requests with a JSON body; private and internal addresses are refused, {area.internal}.
        </small>
        <FieldError id={id("url")} error={errors.url} />
      </div>
      <div class="field">
        <label for={id("description")}>Description (optional)</label>
        <input
          id={id("description")}
          name="description"
          type="text"
          maxlength={DESCRIPTION_MAX}
          value={values.description}
          {...described("description", `${id("description")}-hint`)}
        />
        <small id={`${id("description")}-hint`} class="hint">
          What receives it, at most {DESCRIPTION_MAX} characters.
        </small>
        <FieldError id={id("description")} error={errors.description} />
      </div>
      <fieldset class="webhook-events" aria-describedby={errors.events ? `${id("events")}-error` : undefined} aria-invalid={errors.events ? "true" : undefined}>
        <legend>Events</legend>
        <ul class="admin-checks">
          {area.events.map((e) => (
            <li class="checkbox">
              <label for={id(`ev-${e}`)}>
                <input type="checkbox" id={id(`ev-${e}`)} name={eventField(e)} value="1" checked={values.events.includes(e)} />
                <span>
                  <code>{e}</code> <span class="muted small">{EVENT_HINTS[e]}</span>
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

function SecretShown({ shown, area }: { shown: Secret; area: WebhookArea }) {
  return (
    <section class="card secret" aria-labelledby="secret-title">
      <h2 id="secret-title">{shown.rotated ? "The endpoint's new signing secret" : "The new endpoint's signing secret"}</h2>
      <Notice kind="info">Copy it now: it will not be shown again.{shown.rotated ? " The old secret no longer signs anything." : ""}</Notice>
      <SecretValue id="webhook-secret" label="Signing secret" value={shown.secret} name="signing secret" />
      <p class="muted small">
        Every delivery is signed as Standard Webhooks do it: the headers <code>webhook-id</code>, <code>webhook-timestamp</code> and{" "}
        <code>webhook-signature</code> (<code>v1,</code> and the base64 HMAC-SHA256 of <code>id.timestamp.body</code>, keyed with the base64-decoded part of the
        secret after <code>whsec_</code>). A Standard Webhooks library checks it with this secret; the image host's docs/webhooks.md shows how, and what each
        event holds. Deduplicate by <code>webhook-id</code>: a delivery may arrive more than once.
      </p>
      <p class="muted small">
        <a href={`${area.base}/${shown.endpoint.id}`}>Go to the endpoint</a> · <a href={area.base}>All endpoints</a>
      </p>
    </section>
  );
}

function EndpointTable({ area, endpoints }: { area: WebhookArea; endpoints: EndpointView[] }) {
  return (
    <div class="table-wrap">
      <table class="list stack webhooks">
        <thead>
          <tr>
            <th scope="col">URL</th>
            <th scope="col">Description</th>
            <th scope="col">Events</th>
            <th scope="col">Status</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {endpoints.map((e) => (
            <tr class={e.enabled ? (e.failingSince ? "failing" : undefined) : "disabled"}>
              <th scope="row" class="webhook-url">
                <a href={`${area.base}/${e.id}`}>{e.url}</a>
              </th>
              <td data-label="Description">{e.description || <span class="muted">—</span>}</td>
              <td data-label="Events">{e.events.join(", ")}</td>
              <td data-label="Status">
                <EndpointStatus e={e} />
              </td>
              <td data-label="Created">
                <UtcTime at={e.createdAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const truncate = (text: string, n: number) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

function DeliveryLog({
  area,
  endpoint,
  deliveries,
  before,
  older,
  signedIn,
}: {
  area: WebhookArea;
  endpoint: EndpointView;
  deliveries: DeliveryView[];
  before?: number;
  older: string | null;
  signedIn: SignedIn;
}) {
  const here = `${area.base}/${endpoint.id}`;
  return (
    <section class="card" aria-labelledby="log-title">
      <h2 id="log-title">Delivery log</h2>
      <p class="muted small">
        Newest first, {DELIVERIES_PAGE} a page{before !== undefined ? `; deliveries older than #${before}` : ""}. Delivered and failed deliveries are kept 30
        days.
      </p>
      {deliveries.length === 0 ? (
        <p class="muted">
          {before === undefined ? (
            "Nothing sent yet."
          ) : (
            <>
              No older deliveries. <a href={here}>Back to the newest</a>.
            </>
          )}
        </p>
      ) : (
        <div class="table-wrap">
          <table class="list stack deliveries">
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Answer</th>
                <th scope="col">Latency (ms)</th>
                <th scope="col">Last error</th>
                <th scope="col">Time</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {deliveries.map((d) => (
                <tr data-delivery={String(d.id)}>
                  <th scope="row">
                    <code>{d.eventType}</code> <span class="muted small">#{d.id}</span>
                  </th>
                  <td data-label="Status">
                    <span class={`delivery-${d.status}`}>{d.status}</span>
                    {d.status === "pending" && d.nextAttemptAt && (
                      <span class="muted small">
                        {" "}
                        next <UtcTime at={d.nextAttemptAt} />
                      </span>
                    )}
                  </td>
                  <td data-label="Attempts">{d.attempts}</td>
                  <td data-label="Answer">{d.lastStatusCode ?? "—"}</td>
                  <td data-label="Latency (ms)">{d.lastLatencyMs ?? "—"}</td>
                  <td data-label="Last error" class="delivery-error">
                    {d.lastError ? <span title={d.lastError}>{truncate(d.lastError, 120)}</span> : "—"}
                  </td>
                  <td data-label="Time">
                    <UtcTime at={d.lastAttemptAt ?? d.createdAt} />
                  </td>
                  <td>
                    {d.status !== "pending" && (
                      <form method="post" action={`${here}/deliveries/${d.id}/resend`} class="inline">
                        <FormToken signedIn={signedIn} />
                        <button type="submit" class="small" aria-label={`Send delivery #${d.id} again`}>
                          Send again
                        </button>
                      </form>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {(before !== undefined || older) && (
        <nav class="pages" aria-label="Pages of deliveries">
          {before !== undefined ? <a href={here}>← Newest</a> : <span></span>}
          <span></span>
          {older ? (
            <a href={older} rel="next">
              Older →
            </a>
          ) : (
            <span></span>
          )}
        </nav>
      )}
    </section>
  );
}

/** A time as a datetime-local field holds it, in UTC: `YYYY-MM-DDTHH:MM`. */
const utcField = (d: Date) => d.toISOString().slice(0, 16);

/** Where "what it missed" begins: the failure streak that led to the switch-off, else the switch-off itself. */
const missedSince = (e: EndpointView, now: Date) => e.failingSince ?? e.disabledAt ?? new Date(now.getTime() - 86_400_000);

/** The `since` of a form: a datetime-local value read as UTC (or any date the API reads); null when there is none that reads. */
function sinceOf(value: string): Date | null {
  const v = value.trim();
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(v)) return parseDateTime(`${v}Z`);
  return v === "" ? null : parseDateTime(v);
}

const SINCE_REFUSAL = "Give the time to send from as YYYY-MM-DDTHH:MM, in UTC.";

function resentNotice(done: string, n: string | undefined) {
  const count = /^\d{1,6}$/.test(n ?? "") ? Number(n) : null;
  if (count === null || (done !== "enabled-resent" && done !== "resent-failed")) return null;
  const what = count === 1 ? "1 failed delivery is" : `${count} failed deliveries are`;
  const more = count >= RESEND_MAX ? ` That is the most one request sends: send again for the rest.` : "";
  return (
    <Notice kind="success">{`${done === "enabled-resent" ? "Endpoint switched on; its failure streak starts over. " : ""}${count === 0 ? "There was no failed delivery to send again." : `${what} sent again; their rows below show the outcome.`}${more}`}</Notice>
  );
}

/** Switching on, with what it missed (checked by default): the deliveries that failed or were not sent since the streak or the switch-off. */
function SwitchOn({ here, endpoint, signedIn }: { here: string; endpoint: EndpointView; signedIn: SignedIn }) {
  const since = utcField(missedSince(endpoint, new Date()));
  return (
    <form method="post" action={`${here}/enable`} class="admin-form webhook-switch-on">
      <FormToken signedIn={signedIn} />
      <div class="checkbox">
        <label for="resend-missed">
          <input type="checkbox" id="resend-missed" name="resend" value="1" checked aria-describedby="resend-missed-hint" /> Also send what it missed
        </label>
        <small id="resend-missed-hint" class="hint">
          The events that failed, or were not sent while it was off, since the time below (in UTC): each is sent again at once, with its own webhook-id.
        </small>
      </div>
      <div class="field">
        <label for="resend-missed-since">Since (UTC)</label>
        <input id="resend-missed-since" name="since" type="datetime-local" value={since} step={60} />
      </div>
      <div class="admin-buttons">
        <button type="submit" class="primary">
          Switch on
        </button>
      </div>
    </form>
  );
}

/** The delivery log's recovery: every failed delivery of events since a time, sent again. */
function ResendFailed({ here, endpoint, signedIn }: { here: string; endpoint: EndpointView; signedIn: SignedIn }) {
  const since = utcField(endpoint.failingSince ?? new Date(Date.now() - 86_400_000));
  return (
    <section class="card" aria-labelledby="resend-failed-title">
      <h2 id="resend-failed-title">Send failed deliveries again</h2>
      <form method="post" action={`${here}/resend-failed`} class="admin-form">
        <FormToken signedIn={signedIn} />
        <div class="field">
          <label for="resend-failed-since">Every failed delivery of events since (UTC)</label>
          <input id="resend-failed-since" name="since" type="datetime-local" value={since} step={60} required aria-describedby="resend-failed-hint" />
          <small id="resend-failed-hint" class="hint">
            Those not sent while the endpoint was off among them, oldest first, at most {RESEND_MAX} at a time; each keeps its webhook-id, so a receiver that
            already has it can tell.
          </small>
        </div>
        <div class="admin-buttons">
          <button type="submit">Send them again</button>
        </div>
      </form>
    </section>
  );
}

// ---- pages -----------------------------------------------------------------------------------------------------

const emptyForm = (area: WebhookArea): FormState => ({
  values: { url: "", description: "", events: area.events.filter((e) => e.startsWith("image.")) },
  errors: {},
});

async function renderList(c: Context<SignedInEnv>, area: WebhookArea, shown: { form?: FormState; secret?: Secret } = {}, status: 200 | 400 | 422 = 200) {
  const signedIn = c.get("signedIn");
  const endpoints = await area.backend.list(c);
  const form = shown.form ?? emptyForm(area);
  const done = c.req.query("done");
  const full = endpoints.length >= area.max;
  c.header("Cache-Control", "no-store");
  return c.html(
    area.frame({
      title: "Webhooks",
      signedIn,
      children: (
        <>
          {done && NOTICES[done] && <Notice kind="success">{NOTICES[done]}</Notice>}
          {shown.secret && <SecretShown shown={shown.secret} area={area} />}
          <p>
            An endpoint receives a signed POST for each event it asks for about {area.whose}. Failed deliveries are retried for about a day; an endpoint that
            keeps failing for a day, or answers <code>410 Gone</code>, is switched off and says so here.
          </p>
          <section class="card" aria-labelledby="endpoints-title">
            <h2 id="endpoints-title">Endpoints</h2>
            {endpoints.length === 0 ? <p class="muted">No endpoints yet.</p> : <EndpointTable area={area} endpoints={endpoints} />}
            <p class="muted small">
              {endpoints.length} of at most {area.max}.
            </p>
          </section>
          <section class="card" aria-labelledby="add-title">
            <h2 id="add-title">Add an endpoint</h2>
            {form.refusal && <Notice kind="error">{form.refusal}</Notice>}
            {full && !form.refusal ? (
              <p class="muted">{`There are ${area.max} endpoints, the most allowed: delete one to add another.`}</p>
            ) : (
              <form method="post" action={area.base} class="admin-form">
                <FormToken signedIn={signedIn} />
                <EndpointFields area={area} form={form} prefix="new" />
                <div class="admin-buttons">
                  <button type="submit" class="primary">
                    Add endpoint
                  </button>
                </div>
              </form>
            )}
          </section>
        </>
      ),
    }),
    status,
  );
}

async function renderEndpoint(
  c: Context<SignedInEnv>,
  area: WebhookArea,
  endpoint: EndpointView,
  shown: { form?: FormState; secret?: Secret } = {},
  status: 200 | 422 = 200,
) {
  const signedIn = c.get("signedIn");
  const before = idOf(c.req.query("before"), Number.MAX_SAFE_INTEGER) ?? undefined;
  const log = await area.backend.deliveries(c, endpoint.id, before);
  const deliveries = log.deliveries;
  const here = `${area.base}/${endpoint.id}`;
  const older = log.older === null ? null : `${here}?before=${log.older}`;
  const form = shown.form ?? { values: { url: endpoint.url, description: endpoint.description, events: endpoint.events }, errors: {} };
  const done = c.req.query("done");
  c.header("Cache-Control", "no-store");
  return c.html(
    area.frame({
      title: `Webhook endpoint #${endpoint.id}`,
      signedIn,
      children: (
        <>
          <p>
            <a href={area.base}>← All endpoints</a>
          </p>
          {done && NOTICES[done] && <Notice kind="success">{NOTICES[done]}</Notice>}
          {done && resentNotice(done, c.req.query("n"))}
          {shown.secret && <SecretShown shown={shown.secret} area={area} />}
          <section class={`card webhook-state${endpoint.enabled ? (endpoint.failingSince ? " failing" : "") : " disabled"}`} aria-labelledby="state-title">
            <h2 id="state-title">Status</h2>
            <p class="webhook-url">
              <code>{endpoint.url}</code>
            </p>
            <p>
              <EndpointStatus e={endpoint} />
            </p>
            <p class="muted small">
              Created <UtcTime at={endpoint.createdAt} />.
            </p>
            {!endpoint.enabled && <SwitchOn here={here} endpoint={endpoint} signedIn={signedIn} />}
            <div class="buttons webhook-actions">
              {endpoint.enabled && (
                <form method="post" action={`${here}/disable`} class="inline">
                  <FormToken signedIn={signedIn} />
                  <button type="submit">Switch off</button>
                </form>
              )}
              <form method="post" action={`${here}/test`} class="inline">
                <FormToken signedIn={signedIn} />
                <button type="submit" disabled={!endpoint.enabled} aria-describedby={endpoint.enabled ? undefined : "test-hint"}>
                  Send a test event
                </button>
              </form>
              <form method="post" action={`${here}/rotate`} class="inline" data-confirm="Make a new signing secret? The old one stops signing at once.">
                <FormToken signedIn={signedIn} />
                <button type="submit">Rotate secret</button>
              </form>
              <form method="post" action={`${here}/delete`} class="inline" data-confirm={`Delete the endpoint ${endpoint.url} and its delivery log?`}>
                <FormToken signedIn={signedIn} />
                <input type="hidden" name="confirmed" value="0" />
                <button type="submit" class="danger">
                  Delete
                </button>
              </form>
            </div>
            {!endpoint.enabled && (
              <p id="test-hint" class="muted small">
                Switch it on to send a test event.
              </p>
            )}
          </section>
          <section class="card" aria-labelledby="edit-title">
            <h2 id="edit-title">Settings</h2>
            {form.refusal && <Notice kind="error">{form.refusal}</Notice>}
            <form method="post" action={here} class="admin-form">
              <FormToken signedIn={signedIn} />
              <EndpointFields area={area} form={form} prefix="edit" />
              <div class="admin-buttons">
                <button type="submit" class="primary">
                  Save
                </button>
              </div>
            </form>
          </section>
          <DeliveryLog area={area} endpoint={endpoint} deliveries={deliveries} before={before} older={older} signedIn={signedIn} />
          {endpoint.enabled && <ResendFailed here={here} endpoint={endpoint} signedIn={signedIn} />}
        </>
      ),
    }),
    status,
  );
}

// ---- requests --------------------------------------------------------------------------------------------------

/** An id of a path or query: digits only, 1..max; anything else is none. */
function idOf(value: string | undefined, max = 2_147_483_647): number | null {
  if (value === undefined || !/^\d{1,16}$/.test(value)) return null;
  const n = Number(value);
  return n >= 1 && n <= max ? n : null;
}

const endpointIdOf = (value: string) => {
  const id = idOf(value);
  if (id === null) throw notFound("Webhook endpoint not found.");
  return id;
};

function formValues(area: WebhookArea, form: FormFields): FormState["values"] {
  return {
    url: formField(form, "url").trim(),
    description: formField(form, "description").trim(),
    events: area.events.filter((e) => formField(form, eventField(e)) === "1"),
  };
}

/** The service's refusal as the form's errors: field errors (422) or a refusal of the whole form (400). */
function formErrorsOf(e: unknown, values: FormState["values"]): { form: FormState; status: 400 | 422 } {
  if (!(e instanceof AppError) || (e.status !== 400 && e.status !== 422)) throw e;
  const errors: FormState["errors"] = {};
  for (const [k, v] of Object.entries(e.errors ?? {})) {
    const field = k.split(".")[0]; // the API names an item of a list: events.0
    if ((field === "url" || field === "description" || field === "events") && !errors[field]) errors[field] = v[0];
  }
  const fielded = Object.keys(errors).length > 0;
  return { form: { values, errors, refusal: fielded ? undefined : e.message }, status: e.status };
}

export function registerWebhookPages(web: Hono<WebEnv>, area: WebhookArea) {
  const { base, gate, backend } = area;
  const path = base.startsWith(BASE) ? base.slice(BASE.length) : base;

  web.get(path, gate, (c) => renderList(c, area));

  web.post(path, gate, async (c) => {
    const values = formValues(area, await readForm(c));
    let made;
    try {
      made = await backend.create(c, values);
    } catch (e) {
      const { form, status } = formErrorsOf(e, values);
      return renderList(c, area, { form }, status);
    }
    // the secret is in this answer only: no redirect, the page is not stored
    return renderList(c, area, { secret: { secret: made.secret, endpoint: made.endpoint, rotated: false } });
  });

  web.get(`${path}/:id`, gate, async (c) => {
    const endpoint = await backend.find(c, endpointIdOf(c.req.param("id")));
    return renderEndpoint(c, area, endpoint);
  });

  web.post(`${path}/:id`, gate, async (c) => {
    const id = endpointIdOf(c.req.param("id"));
    const endpoint = await backend.find(c, id);
    const values = formValues(area, await readForm(c));
    try {
      await backend.update(c, id, values);
    } catch (e) {
      const { form } = formErrorsOf(e, values);
      return renderEndpoint(c, area, endpoint, { form }, 422);
    }
    return c.redirect(`${base}/${id}?done=saved`, 303);
  });

  web.post(`${path}/:id/disable`, gate, async (c) => {
    const id = endpointIdOf(c.req.param("id"));
    await backend.update(c, id, { enabled: false });
    return c.redirect(`${base}/${id}?done=disabled`, 303);
  });

  // on again, and (checked by default) what it missed sent: switched on first, or the deliveries would fail again at once
  web.post(`${path}/:id/enable`, gate, async (c) => {
    const id = endpointIdOf(c.req.param("id"));
    const form = await readForm(c);
    const resend = formField(form, "resend") === "1";
    const since = resend ? sinceOf(formField(form, "since")) : null;
    if (resend && since === null) throw new AppError("bad_request", SINCE_REFUSAL);
    await backend.update(c, id, { enabled: true });
    if (since === null) return c.redirect(`${base}/${id}?done=enabled`, 303);
    const n = await backend.resendFailed(c, id, since);
    return c.redirect(`${base}/${id}?done=enabled-resent&n=${n}`, 303);
  });

  web.post(`${path}/:id/resend-failed`, gate, async (c) => {
    const id = endpointIdOf(c.req.param("id"));
    const since = sinceOf(formField(await readForm(c), "since"));
    if (since === null) throw new AppError("bad_request", SINCE_REFUSAL);
    const n = await backend.resendFailed(c, id, since);
    return c.redirect(`${base}/${id}?done=resent-failed&n=${n}`, 303);
  });

  web.post(`${path}/:id/rotate`, gate, async (c) => {
    const id = endpointIdOf(c.req.param("id"));
    const { endpoint, secret } = await backend.rotate(c, id);
    return renderEndpoint(c, area, endpoint, { secret: { secret, endpoint, rotated: true } });
  });

  web.post(`${path}/:id/test`, gate, async (c) => {
    const id = endpointIdOf(c.req.param("id"));
    const endpoint = await backend.find(c, id);
    if (!endpoint.enabled) throw new AppError("bad_request", "The endpoint is switched off: switch it on to send a test event.");
    await backend.test(c, id);
    return c.redirect(`${base}/${id}?done=test`, 303);
  });

  web.post(`${path}/:id/deliveries/:delivery/resend`, gate, async (c) => {
    const id = endpointIdOf(c.req.param("id"));
    await backend.find(c, id);
    const delivery = idOf(c.req.param("delivery"), Number.MAX_SAFE_INTEGER);
    if (delivery === null) throw notFound(NO_SUCH_DELIVERY);
    await backend.resend(c, id, delivery);
    return c.redirect(`${base}/${id}?done=resent`, 303);
  });

  // confirmed (the page's script asks first, or the page below without scripts), the endpoint goes with its log
  web.post(`${path}/:id/delete`, gate, async (c) => {
    const id = endpointIdOf(c.req.param("id"));
    if (formField(await readForm(c), "confirmed") !== "1") {
      const endpoint = await backend.find(c, id);
      return c.html(
        area.frame({
          title: "Delete a webhook endpoint",
          signedIn: c.get("signedIn"),
          children: (
            <form class="card narrow" method="post" action={`${base}/${id}/delete`}>
              <p>
                Delete the endpoint <strong class="webhook-url">{endpoint.url}</strong> and its delivery log? Deliveries under way are not sent.
              </p>
              <FormToken signedIn={c.get("signedIn")} />
              <input type="hidden" name="confirmed" value="1" />
              <div class="buttons">
                <button type="submit" class="danger">
                  Delete
                </button>
                <a class="button" href={`${base}/${id}`}>
                  Cancel
                </a>
              </div>
            </form>
          ),
        }),
      );
    }
    await backend.remove(c, id);
    return c.redirect(`${base}?done=deleted`, 303);
  });
}

const NO_SUCH_DELIVERY = "There is no such delivery, or it is still pending.";

/** The service layer in a scope: the user center's backend (the account's own endpoints). */
function serviceBackend(scope: (c: Context<SignedInEnv>) => EndpointScope): WebhookBackend {
  return {
    list: (c) => listEndpoints(c.get("deps").db, scope(c)),
    create: (c, input) => createEndpoint(c.get("deps"), scope(c), input),
    find: (c, id) => findEndpoint(c.get("deps").db, scope(c), id),
    update: (c, id, change) => updateEndpoint(c.get("deps"), scope(c), id, change),
    rotate: (c, id) => rotateSecret(c.get("deps"), scope(c), id),
    test: async (c, id) => {
      await testEndpoint(c.get("deps"), scope(c), id);
    },
    deliveries: async (c, id, before) => {
      const { db } = c.get("deps");
      await findEndpoint(db, scope(c), id);
      const deliveries = await listDeliveries(db, id, before);
      const last = deliveries.at(-1);
      const older = deliveries.length === DELIVERIES_PAGE && last && (await listDeliveries(db, id, last.id, 1)).length > 0 ? last.id : null;
      return { deliveries, older };
    },
    resend: async (c, id, deliveryId) => {
      if ((await resendOneDelivery(c.get("deps"), scope(c), id, deliveryId)) !== "queued") throw notFound(NO_SUCH_DELIVERY);
    },
    resendFailed: (c, id, since) => resendFailedSince(c.get("deps"), scope(c), id, since),
    remove: (c, id) => deleteEndpoint(c.get("deps").db, scope(c), id),
  };
}

/** The user center's page: the account's own endpoints. */
const userArea: WebhookArea = {
  base: `${BASE}/webhooks`,
  backend: serviceBackend((c) => ({ ownerId: c.get("signedIn").user.id })),
  events: USER_EVENTS,
  max: ENDPOINTS_PER_ACCOUNT,
  whose: "your images and API tokens",
  internal: "unless an administrator opens the operator's internal hosts to your group",
  gate: requireSession,
  frame: ({ title, signedIn, children }) => (
    <Layout title={title} signedIn={signedIn} active="webhooks">
      {children}
    </Layout>
  ),
};

export function register(web: Hono<WebEnv>) {
  registerWebhookPages(web, userArea);
}
