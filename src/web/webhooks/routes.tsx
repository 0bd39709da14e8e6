/**
 * The handlers of the webhook pages, shared by the user center's (../webhooks.tsx) and the administrator's
 * (../admin/webhooks.tsx): each area brings its path, gate, backend and frame.
 */
import type { Hono } from "hono";
import { AppError, notFound } from "../../errors.ts";
import { parseDateTime } from "../../http/time.ts";
import { formField, type FormFields, readForm } from "../form.ts";
import { t } from "../i18n/index.ts";
import { BASE, type WebEnv } from "../session.ts";
import { idOf, renderDeleteQuestion, renderEndpoint, renderList } from "./pages.tsx";
import { eventField } from "./parts.tsx";
import type { FormState, WebhookArea } from "./types.ts";

/** The `since` of a form: a datetime-local value read as UTC (or any date the API reads); null when there is none that reads. */
function sinceOf(value: string): Date | null {
  const v = value.trim();
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(v)) return parseDateTime(`${v}Z`);
  return v === "" ? null : parseDateTime(v);
}

const endpointIdOf = (value: string) => {
  const id = idOf(value);
  if (id === null) throw notFound(t("webhooks.error.notFound"));
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
    if (resend && since === null) throw new AppError("bad_request", t("webhooks.error.since"));
    await backend.update(c, id, { enabled: true });
    if (since === null) return c.redirect(`${base}/${id}?done=enabled`, 303);
    const n = await backend.resendFailed(c, id, since);
    return c.redirect(`${base}/${id}?done=enabled-resent&n=${n}`, 303);
  });

  web.post(`${path}/:id/resend-failed`, gate, async (c) => {
    const id = endpointIdOf(c.req.param("id"));
    const since = sinceOf(formField(await readForm(c), "since"));
    if (since === null) throw new AppError("bad_request", t("webhooks.error.since"));
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
    if (!endpoint.enabled) throw new AppError("bad_request", t("webhooks.error.testOff"));
    await backend.test(c, id);
    return c.redirect(`${base}/${id}?done=test`, 303);
  });

  web.post(`${path}/:id/deliveries/:delivery/resend`, gate, async (c) => {
    const id = endpointIdOf(c.req.param("id"));
    await backend.find(c, id);
    const delivery = idOf(c.req.param("delivery"), Number.MAX_SAFE_INTEGER);
    if (delivery === null) throw notFound(t("webhooks.error.noDelivery"));
    await backend.resend(c, id, delivery);
    return c.redirect(`${base}/${id}?done=resent`, 303);
  });

  // confirmed (the page's script asks first, or the page below without scripts), the endpoint goes with its log
  web.post(`${path}/:id/delete`, gate, async (c) => {
    const id = endpointIdOf(c.req.param("id"));
    if (formField(await readForm(c), "confirmed") !== "1") return renderDeleteQuestion(c, area, await backend.find(c, id));
    await backend.remove(c, id);
    return c.redirect(`${base}?done=deleted`, 303);
  });
}
