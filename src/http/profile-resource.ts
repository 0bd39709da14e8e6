import type { Group } from "../db/repositories/groups.ts";
import type { User } from "../db/repositories/users.ts";
import { avatarOf, capacityKbOf } from "../services/profile.ts";

/** The contract's profile object (2.2): capacity and size in KB. */
export function toProfile(user: User, group: Group, baseUrl: string) {
  return {
    username: user.username,
    name: user.name,
    avatar: avatarOf(user),
    email: user.email,
    capacity: capacityKbOf(user, group),
    size: user.usedBytes / 1024,
    // the user center's dashboard
    url: `${baseUrl}/user/dashboard`,
    image_num: user.imageNum,
    album_num: user.albumNum,
    registered_ip: user.registeredIp,
  };
}
