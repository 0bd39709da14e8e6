import type { components } from "../../../openapi/schema";
import { payload } from "../client.ts";
import { command, type CommandGroup } from "../command.ts";
import { cell } from "../output.ts";
import { fieldCommands, type FieldType } from "./fields.ts";
import { morePages, PAGE_USAGE, pageOptions } from "./user.ts";

type GroupInput = components["schemas"]["GroupInput"];
type CreateGroupInput = components["schemas"]["CreateGroupInput"];
type Group = components["schemas"]["Group"];

const GROUP_FIELDS = {
  name: "string",
  enabled: "bool",
  allow_api: "bool",
  is_default: "bool",
  max_file_size_kb: "int",
  allowed_extensions: "string_list",
  max_pixels: "int",
  uploads_per_minute: "nullable_int",
  uploads_per_hour: "nullable_int",
  uploads_per_day: "nullable_int",
  uploads_per_week: "nullable_int",
  uploads_per_month: "nullable_int",
  concurrent_uploads: "nullable_int",
  retention_max_seconds: "nullable_int",
  default_capacity_kb: "int",
  review_provider: "string",
  review_webhook_url: "nullable_string",
  review_timeout_ms: "int",
  review_fail_open: "bool",
  metadata: "string",
  convert_format: "nullable_string",
  convert_quality: "int",
  max_width: "nullable_int",
  max_height: "nullable_int",
  jpeg_max_quality: "nullable_int",
  webhook_allow_internal: "bool",
  strategy_ids: "int_list",
} satisfies Record<keyof GroupInput, FieldType>;

export const groupCommands: CommandGroup = {
  title: "Groups:",
  commands: {
    list: command({
      usage: PAGE_USAGE,
      summary: "List user groups, a page at a time (default: the first 100)",
      options: ["page", "per_page"],
      async run({ options, api, out }) {
        const data = await payload(api().GET("/api/admin/groups", { params: { query: pageOptions(options) } }));
        out.result(data, () => {
          out.table(
            ["ID", "NAME", "FLAGS", "MAX_FILE_KB", "CAPACITY_KB", "UPLOADS m/h/d/w/mo", "CONCURRENT", "REVIEW", "METADATA", "STRATEGIES"],
            data.groups.map((g) => [
              cell(g.id),
              g.name,
              [
                g.enabled ? "enabled" : "disabled",
                g.is_default && "default",
                g.is_guest && "guest",
                g.allow_api ? "api" : "no-api",
                g.webhook_allow_internal && "webhooks-internal",
              ]
                .filter(Boolean)
                .join(","),
              cell(g.max_file_size_kb),
              cell(g.default_capacity_kb),
              [g.uploads_per_minute, g.uploads_per_hour, g.uploads_per_day, g.uploads_per_week, g.uploads_per_month].map(cell).join("/"),
              cell(g.concurrent_uploads),
              g.review_provider,
              g.metadata,
              g.strategy_ids.length ? g.strategy_ids.join(",") : "-",
            ]),
          );
          morePages(out, data, "groups");
        });
      },
    }),
    ...fieldCommands<GroupInput, CreateGroupInput, Group>({
      noun: "group",
      fields: GROUP_FIELDS,
      create: { usage: "<name> [--field value ...]", summary: "Create a group" },
      set: {
        usage: "<id> --field value ...",
        summary: "Change a group",
        notes: [
          "    fields: --enabled, --allow-api, --is-default, --review-fail-open (true|false);",
          "            --max-file-size-kb, --max-pixels, --default-capacity-kb, --review-timeout-ms (integer);",
          "            --uploads-per-minute|-hour|-day|-week|-month, --concurrent-uploads,",
          "            --retention-max-seconds (integer or null); --review-provider none|webhook;",
          "            --review-webhook-url <url|null>; --allowed-extensions jpg,png,...; --strategy-ids 2,1;",
          "            --metadata keep|strip_location|strip_all (what of an upload's metadata is stored);",
          "            processing on upload: --convert-format webp|avif|jpeg|null, --convert-quality 1-100,",
          "            --max-width, --max-height (integer or null: downscale anything larger),",
          "            --jpeg-max-quality 1-100|null (re-encode JPEGs above that quality);",
          "            --webhook-allow-internal true|false (members' own webhooks may reach WEBHOOK_ALLOW's hosts);",
          "            --name <name>",
        ],
      },
      post: (api, body) => payload(api.POST("/api/admin/groups", { body })),
      patch: (api, id, body) => payload(api.PATCH("/api/admin/groups/{id}", { params: { path: { id } }, body })),
    }),
  },
};
