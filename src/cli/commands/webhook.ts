/** `webhook ...`: the site-wide webhook endpoints through the admin API (/api/admin/webhooks). */
import type { components } from "../../../openapi/schema";
import { payload, succeeded } from "../client.ts";
import { command, requireOption, type CommandGroup } from "../command.ts";
import { usageError } from "../errors.ts";
import { cell, type Output } from "../output.ts";
import { parseBool, parseId, splitList } from "../values.ts";
import { resolveUser } from "./user.ts";

type WebhookEndpoint = components["schemas"]["WebhookEndpoint"];
type CreateWebhookInput = components["schemas"]["CreateWebhookInput"];
type UpdateWebhookInput = components["schemas"]["UpdateWebhookInput"];

const EVENTS = "image.uploaded, image.deleted, image.expired, token.revoked, user.disabled";

/** `--events a,b`: the server checks the names (422 naming the unknown ones and the list). */
const parseEvents = (value: string) => {
  const events = splitList(value);
  if (events.length === 0) throw usageError(`--events needs at least one event (${EVENTS})`);
  return events as CreateWebhookInput["events"];
};

const parseEndpointId = (value: string) => parseId(value, "endpoint id");

function showEndpoint(out: Output, e: WebhookEndpoint) {
  out.keyValues({
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events,
    enabled: e.enabled,
    disabled_reason: e.disabled_reason,
    disabled_at: e.disabled_at,
    failing_since: e.failing_since,
    owner_id: e.owner_id === null ? "site-wide" : e.owner_id,
    created_at: e.created_at,
  });
}

/** The secret last, alone on its line, after a line saying it is not shown again. */
function showSecret(out: Output, secret: string) {
  out.line("Signing secret (shown only once; it cannot be read back, only rotated):");
  out.line(secret);
}

export const webhookCommands: CommandGroup = {
  title: `Webhooks (site-wide endpoints; events: ${EVENTS}):`,
  commands: {
    list: command({
      usage: "[--user <user>]",
      summary: "List the site-wide webhook endpoints (never their secrets); --user: that user's own endpoints instead",
      notes: ["    columns: ID, URL, EVENTS, ENABLED (no: why), FAILING SINCE, DESCRIPTION"],
      options: ["user"],
      async run({ options, api, out }) {
        const user_id = options.user === undefined ? undefined : (await resolveUser(api(), options.user)).id;
        const data = await payload(api().GET("/api/admin/webhooks", { params: { query: { user_id } } }));
        out.result(data, () =>
          out.table(
            ["ID", "URL", "EVENTS", "ENABLED", "FAILING SINCE", "DESCRIPTION"],
            data.endpoints.map((e) => [
              cell(e.id),
              e.url,
              e.events.join(","),
              e.enabled ? "yes" : `no (${e.disabled_reason ?? "disabled"})`,
              cell(e.failing_since),
              cell(e.description || null),
            ]),
          ),
        );
      },
    }),
    add: command({
      usage: "<url> --events <e1,e2,...> [--description <text>]",
      summary: "Create a site-wide endpoint; its signing secret is printed alone on the last line, this once",
      args: ["url"],
      options: ["events", "description"],
      async run(inv) {
        const { args, options, api, out } = inv;
        const body: CreateWebhookInput = { url: args.url, events: parseEvents(requireOption(inv, "events", "<e1,e2,...>")), description: options.description };
        const e = await payload(api().POST("/api/admin/webhooks", { body }));
        out.result(e, () => {
          out.line(`Created webhook endpoint ${e.id} for ${e.url}.`);
          const { secret, ...endpoint } = e;
          showEndpoint(out, endpoint);
          showSecret(out, secret);
        });
      },
    }),
    show: command({
      usage: "<id>",
      summary: "Show one site-wide endpoint",
      args: ["id"],
      async run({ args, api, out }) {
        const id = parseEndpointId(args.id);
        const e = await payload(api().GET("/api/admin/webhooks/{id}", { params: { path: { id } } }));
        out.result(e, () => showEndpoint(out, e));
      },
    }),
    update: command({
      usage: "<id> [--url <url>] [--events <e1,e2,...>] [--description <text>] [--enabled true|false]",
      summary: "Change a site-wide endpoint; --enabled true switches it on again and clears why it was disabled",
      args: ["id"],
      options: ["url", "events", "description", "enabled"],
      async run({ name, args, options, api, out }) {
        const id = parseEndpointId(args.id);
        if (Object.keys(options).length === 0) throw usageError(`${name} needs at least one of --url, --events, --description, --enabled`);
        const body: UpdateWebhookInput = {
          url: options.url,
          events: options.events === undefined ? undefined : parseEvents(options.events),
          description: options.description,
          enabled: options.enabled === undefined ? undefined : parseBool(options.enabled, "--enabled"),
        };
        const e = await payload(api().PATCH("/api/admin/webhooks/{id}", { params: { path: { id } }, body }));
        out.result(e, () => {
          out.line(`Updated webhook endpoint ${e.id}.`);
          showEndpoint(out, e);
        });
      },
    }),
    remove: command({
      usage: "<id>",
      summary: "Delete a site-wide endpoint and its delivery log",
      args: ["id"],
      async run({ args, api, out }) {
        const id = parseEndpointId(args.id);
        await succeeded(api().DELETE("/api/admin/webhooks/{id}", { params: { path: { id } } }));
        out.result(null, () => out.line(`Deleted webhook endpoint ${id}.`));
      },
    }),
    rotate: command({
      usage: "<id>",
      summary: "Give a site-wide endpoint a new signing secret (printed alone on the last line, this once); the old one stops at once",
      args: ["id"],
      async run({ args, api, out }) {
        const id = parseEndpointId(args.id);
        const e = await payload(api().POST("/api/admin/webhooks/{id}/secret", { params: { path: { id } } }));
        out.result(e, () => {
          out.line(`Rotated the signing secret of webhook endpoint ${e.id}; the old one no longer signs.`);
          showSecret(out, e.secret);
        });
      },
    }),
    test: command({
      usage: "<id>",
      summary: "Send a webhook.test event to one site-wide endpoint",
      args: ["id"],
      async run({ args, api, out }) {
        const id = parseEndpointId(args.id);
        const data = await payload(api().POST("/api/admin/webhooks/{id}/test", { params: { path: { id } } }));
        out.result(data, () => out.line(`Queued a test event for webhook endpoint ${id}: delivery ${data.delivery_id} (see: webhook deliveries ${id}).`));
      },
    }),
    deliveries: command({
      usage: "<id> [--before <delivery-id>]",
      summary: "Show a site-wide endpoint's delivery log, newest first, 50 at a time",
      notes: ["    columns: ID, EVENT, STATUS, ATTEMPTS, CODE, LAST ATTEMPT, NEXT ATTEMPT, ERROR"],
      args: ["id"],
      options: ["before"],
      async run({ args, options, api, out }) {
        const id = parseEndpointId(args.id);
        const before = options.before === undefined ? undefined : parseId(options.before, "--before");
        const data = await payload(api().GET("/api/admin/webhooks/{id}/deliveries", { params: { path: { id }, query: { before } } }));
        out.result(data, () => {
          out.table(
            ["ID", "EVENT", "STATUS", "ATTEMPTS", "CODE", "LAST ATTEMPT", "NEXT ATTEMPT", "ERROR"],
            data.deliveries.map((d) => [
              cell(d.id),
              d.event_type,
              d.status,
              cell(d.attempts),
              cell(d.last_status_code),
              cell(d.last_attempt_at),
              cell(d.next_attempt_at),
              cell(d.last_error),
            ]),
          );
          if (data.next_before !== null) out.line(`More: --before ${data.next_before}.`);
        });
      },
    }),
    resend: command({
      usage: "<id> <delivery-id>",
      summary: "Send a delivered or failed delivery again, at once",
      args: ["id", "delivery"],
      async run({ args, api, out }) {
        const id = parseEndpointId(args.id);
        const delivery_id = parseId(args.delivery, "delivery id");
        await succeeded(api().POST("/api/admin/webhooks/{id}/deliveries/{delivery_id}/resend", { params: { path: { id, delivery_id } } }));
        out.result(null, () => out.line(`Delivery ${delivery_id} of webhook endpoint ${id} will be sent again.`));
      },
    }),
    "resend-failed": command({
      usage: "<id> --since <time>",
      summary: "Send again every failed delivery of events since a time (those not sent while it was off among them); the endpoint must be on",
      notes: ['    --since: ISO 8601 with an offset, or "YYYY-MM-DD HH:MM[:SS]" in the server\'s time zone'],
      args: ["id"],
      options: ["since"],
      async run(inv) {
        const { args, api, out } = inv;
        const id = parseEndpointId(args.id);
        const since = requireOption(inv, "since", "<time>");
        const data = await payload(api().POST("/api/admin/webhooks/{id}/resend-failed", { params: { path: { id } }, body: { since } }));
        out.result(data, () =>
          out.line(`${data.queued} failed ${data.queued === 1 ? "delivery" : "deliveries"} of webhook endpoint ${id} will be sent again.`),
        );
      },
    }),
  },
};
