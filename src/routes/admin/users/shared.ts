import { z } from "@hono/zod-openapi";
import type { User } from "../../../db/repositories/users.ts";
import { envelope } from "../../../http/schemas.ts";
import { AdminUser } from "../common.ts";

export const UserResponse = envelope(AdminUser, "AdminUserResponse");

export const toOutput = (u: User): z.infer<typeof AdminUser> => ({
  id: u.id,
  username: u.username,
  name: u.name,
  email: u.email,
  group_id: u.groupId,
  enabled: u.enabled,
  capacity_kb: u.capacityKb,
  used_kb: u.usedBytes / 1024,
  image_num: u.imageNum,
  album_num: u.albumNum,
  registered_ip: u.registeredIp,
  role: u.role,
});

export const role = z.enum(["user", "admin"]).openapi({
  description:
    "`admin`: may use the admin pages of the site when signed in (a shorter session: 30 minutes idle, 12 hours at most). ADMIN_TOKEN stays what automation and the CLI use.",
  example: "user",
});
