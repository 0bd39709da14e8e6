/** Every command, by its two words (`user create`), in the order the help lists them. */
import type { CommandGroup } from "../command.ts";
import { albumCommands } from "./album.ts";
import { backupCommands } from "./backup.ts";
import { databaseCommands } from "./database.ts";
import { groupCommands } from "./group.ts";
import { imageCommands } from "./images.ts";
import { oidcCommands } from "./oidc.ts";
import { importCommands } from "./import.ts";
import { invitationCommands } from "./invitation.ts";
import { settingsCommands } from "./settings.ts";
import { storageCommands } from "./storage.ts";
import { strategyCommands } from "./strategy.ts";
import { tokenCommands } from "./token.ts";
import { userCommands } from "./user.ts";
import { webhookCommands } from "./webhook.ts";

export const commandGroups: Record<string, CommandGroup> = {
  user: userCommands,
  token: tokenCommands,
  settings: settingsCommands,
  oidc: oidcCommands,
  invitation: invitationCommands,
  group: groupCommands,
  images: imageCommands,
  strategy: strategyCommands,
  album: albumCommands,
  storage: storageCommands,
  backup: backupCommands,
  database: databaseCommands,
  import: importCommands,
  webhook: webhookCommands,
};
