import type { Group } from "../db/repositories/groups.ts";
import type { User } from "../db/repositories/users.ts";
import { sha256Hex } from "./secrets.ts";

export const capacityKbOf = (user: User, group: Group) => user.capacityKb ?? group.defaultCapacityKb;

export function avatarOf(user: Pick<User, "avatar" | "email">) {
  return user.avatar ?? `https://www.gravatar.com/avatar/${sha256Hex(user.email.trim().toLowerCase())}?d=identicon`;
}
