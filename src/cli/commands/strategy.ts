import type { components } from "../../../openapi/schema";
import { payload } from "../client.ts";
import { command, type CommandGroup } from "../command.ts";
import { cell } from "../output.ts";
import { fieldCommands, type FieldType } from "./fields.ts";
import { morePages, PAGE_USAGE, pageOptions } from "./user.ts";

type StrategyInput = components["schemas"]["StrategyInput"];
type CreateStrategyInput = components["schemas"]["CreateStrategyInput"];
type AdminStrategy = components["schemas"]["AdminStrategy"];

const STRATEGY_FIELDS = {
  name: "string",
  driver: "string",
  config: "json",
  quota_kb: "nullable_int",
  enabled: "bool",
} satisfies Record<keyof StrategyInput, FieldType>;

export const strategyCommands: CommandGroup = {
  title: "Storage strategies:",
  commands: {
    list: command({
      usage: PAGE_USAGE,
      summary: "List storage strategies, a page at a time (default: the first 100)",
      options: ["page", "per_page"],
      async run({ options, api, out }) {
        const data = await payload(api().GET("/api/admin/strategies", { params: { query: pageOptions(options) } }));
        out.result(data, () => {
          out.table(
            ["ID", "NAME", "DRIVER", "ENABLED", "QUOTA_KB", "USED_KB", "CONFIG"],
            data.strategies.map((s) => [
              cell(s.id),
              s.name,
              s.driver,
              s.enabled ? "yes" : "no",
              s.quota_kb === null ? "unlimited" : cell(s.quota_kb),
              cell(s.used_kb),
              JSON.stringify(s.config),
            ]),
          );
          morePages(out, data, "strategies");
        });
      },
    }),
    ...fieldCommands<StrategyInput, CreateStrategyInput, AdminStrategy>({
      noun: "strategy",
      fields: STRATEGY_FIELDS,
      create: {
        usage: "<name> --driver local|s3 [--quota-kb <N|null>] [--config '<json>'] [--enabled true|false]",
        summary: "Create a storage strategy",
        requires: { field: "driver", placeholder: "local|s3" },
      },
      set: {
        usage: "<id> [--name <n>] [--driver local|s3] [--quota-kb <N|null>] [--config '<json>'] [--enabled true|false]",
        summary: "Change a storage strategy",
      },
      post: (api, body) => payload(api.POST("/api/admin/strategies", { body })),
      patch: (api, id, body) => payload(api.PATCH("/api/admin/strategies/{id}", { params: { path: { id } }, body })),
    }),
  },
};
