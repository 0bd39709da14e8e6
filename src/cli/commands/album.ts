import { payload } from "../client.ts";
import { command, type CommandGroup } from "../command.ts";
import { resolveUser } from "./user.ts";

export const albumCommands: CommandGroup = {
  title: "Albums:",
  commands: {
    create: command({
      usage: "<user> <name>",
      summary: "Create an album for a user",
      args: ["user", "name"],
      async run({ args, api, out }) {
        const { id, label } = await resolveUser(api(), args.user);
        const album = await payload(api().POST("/api/admin/users/{id}/albums", { params: { path: { id } }, body: { name: args.name } }));
        out.result(album, () => out.line(`Created album ${album.id} "${album.name}" for ${label}.`));
      },
    }),
  },
};
