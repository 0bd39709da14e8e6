import type { Group } from "../db/repositories/groups.ts";
import type { User } from "../db/repositories/users.ts";
import { sha256Hex } from "./secrets.ts";

export const capacityKbOf = (user: User, group: Group) => user.capacityKb ?? group.defaultCapacityKb;

export function avatarOf(user: Pick<User, "avatar" | "email">) {
  return user.avatar ?? `https://www.gravatar.com/avatar/${sha256Hex(user.email.trim().toLowerCase())}?d=identicon`;
}

export function toProfile(user: User, group: Group, baseUrl: string) {
  return {
    username: user.username,
    name: user.name,
    avatar: avatarOf(user),
    email: user.email,
    capacity: capacityKbOf(user, group),
    size: user.usedBytes / 1024,
    url: `${baseUrl}/`,
    image_num: user.imageNum,
    album_num: user.albumNum,
    registered_ip: user.registeredIp,
  };
}
