import type { components } from "../../../openapi/schema";
import { payload } from "../client.ts";
import { command, readCommand, type CommandGroup } from "../command.ts";
import { usageError } from "../errors.ts";
import { parseBool } from "../values.ts";

type SettingsInput = components["schemas"]["SettingsInput"];
/** The settings `set` changes: the site-wide switches (true or false). */
type SettingName = { [K in keyof SettingsInput]-?: NonNullable<SettingsInput[K]> extends boolean ? K : never }[keyof SettingsInput];

const SETTING_NAMES = Object.keys({
  api_enabled: true,
  guest_upload_enabled: true,
  registration_enabled: true,
  password_sign_in: true,
} satisfies Record<SettingName, true>) as SettingName[];

const isSettingName = (name: string): name is SettingName => (SETTING_NAMES as string[]).includes(name);

export const settingsCommands: CommandGroup = {
  title: "Settings:",
  commands: {
    get: readCommand(
      "Show the site settings",
      (api) => payload(api.GET("/api/admin/settings")),
      (out, settings) => out.keyValues(settings),
    ),
    set: command({
      usage: `<${SETTING_NAMES.join("|")}> <true|false>`,
      summary: "Change a site setting",
      args: ["name", "value"],
      async run({ args, api, out }) {
        const name = args.name.replace(/-/g, "_");
        if (!isSettingName(name)) throw usageError(`unknown setting '${args.name}': use ${SETTING_NAMES.join(" or ")}`);
        const body: SettingsInput = { [name]: parseBool(args.value, name) };
        const settings = await payload(api().PATCH("/api/admin/settings", { body }));
        out.result(settings, () => out.keyValues(settings));
      },
    }),
  },
};
