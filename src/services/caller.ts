import type { Group } from "../db/repositories/groups.ts";
import type { User } from "../db/repositories/users.ts";
import type { TokenKind } from "../db/schema.ts";

/** An account, authenticated by a permanent or a temporary upload token. */
export interface UserCaller {
  kind: "user";
  user: User;
  group: Group;
  tokenKind: TokenKind;
  tokenId: number;
}

/** No credential, where guest upload is enabled: the guest group's limits apply. */
interface GuestCaller {
  kind: "guest";
  group: Group;
}

/** Who sends a request (contract section 5). */
export type Caller = UserCaller | GuestCaller;
