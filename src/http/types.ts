import type { Group } from "../db/repositories/groups.ts";
import type { User } from "../db/repositories/users.ts";
import type { TokenKind } from "../db/schema.ts";
import type { Deps } from "../deps.ts";

export type Caller =
  | { kind: "user"; user: User; group: Group; tokenKind: TokenKind; tokenId: number }
  | { kind: "guest"; group: Group };

export type AppEnv = {
  Variables: {
    deps: Deps;
    requestId: string;
    caller: Caller;
  };
};
