import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { getUser, listUsers, type User } from "../../db/repositories/users.ts";
import { notFound } from "../../errors.ts";
import { clientIp } from "../../http/auth.ts";
import { respond } from "../../http/envelope.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { dateTime, envelope } from "../../http/schemas.ts";
import { formatDateTime } from "../../http/time.ts";
import { deleteUserAndImages } from "../../services/delete-user.ts";
import { createPasswordLink, PASSWORD_LINK_MS } from "../../services/password-links.ts";
import type { AppEnv } from "../../http/types.ts";
import { INT4_MAX } from "../../http/validation.ts";
import { PASSWORD_MAX, PASSWORD_MIN } from "../../services/passwords.ts";
import { changeAccount, createAccount, signOutAccount } from "../../services/users.ts";
import { AdminUser, adminRoute, idParam, jsonBody, pageFields, pageOf, pageQuery } from "./common.ts";

const UserResponse = envelope(AdminUser, "AdminUserResponse");

const toOutput = (u: User): z.infer<typeof AdminUser> => ({
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

const role = z.enum(["user", "admin"]).openapi({
  description: "`admin`: may use the admin pages of the site when signed in (a shorter session: 30 minutes idle, 12 hours at most). ADMIN_TOKEN stays what automation and the CLI use.",
  example: "user",
});

const CreateUser = z
  .object({
    username: z.string().regex(/^[A-Za-z0-9_.-]{2,64}$/, "2–64 letters, digits, '_', '.' or '-'"),
    email: z.email(),
    name: z.string().min(1).max(100).optional(),
    password: z.string().min(PASSWORD_MIN).max(PASSWORD_MAX).optional().openapi({ description: "For the user center's sign-in; stored as an argon2id hash" }),
    group_id: z.number().int().positive().max(INT4_MAX).optional().openapi({ description: "Default: the default group" }),
    capacity_kb: z.number().int().min(0).nullable().optional().openapi({ description: "null or absent = the group's default" }),
    registered_ip: z.string().max(45).optional().openapi({ description: "Default: the address of the admin request" }),
    role: role.optional(),
  })
  .openapi("CreateUserInput");

const UpdateUser = z
  .object({
    enabled: z.boolean(),
    group_id: z.number().int().positive().max(INT4_MAX),
    capacity_kb: z.number().int().min(0).nullable(),
    name: z.string().min(1).max(100),
    email: z.email(),
    role,
    password: z.string().min(PASSWORD_MIN).max(PASSWORD_MAX).nullable().openapi({
      description: "A new password for the user center's sign-in (stored as an argon2id hash), or null to remove it; either ends the user's signed-in sessions",
    }),
  })
  .partial()
  .openapi("UpdateUserInput");

export function register(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/users",
      operationId: "adminListUsers",
      summary: "List users (optionally by exact username)",
      description: "A page of the users by id (`page`, `per_page` up to 500, default 100): all of them, those matching `q`, or the one with this exact `username`.",
      request: {
        query: pageQuery.extend({
          username: z.string().max(64).optional().openapi({ example: "alice" }),
          q: z.string().max(100).optional().openapi({ description: "Only users whose username, name or email contains this (any case)", example: "example.com" }),
        }),
      },
      responses: {
        ...okResponse(envelope(z.object({ users: z.array(AdminUser), ...pageFields }), "AdminUserListResponse"), "A page of users"),
        ...errorResponses(401, 422, 500),
      },
    }),
    async (c) => {
      const { page, per_page, username, q } = c.req.valid("query");
      const { rows, total } = await listUsers(c.get("deps").db, per_page, (page - 1) * per_page, username, q || undefined);
      return respond(c, { users: rows.map(toOutput), ...pageOf(page, per_page, total) });
    },
  );
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/users",
      operationId: "adminCreateUser",
      summary: "Create a user",
      description: "Creates a user in `group_id` (default: the default group). `capacity_kb` null or absent means the group's default capacity. The password, if any, is stored hashed.",
      request: { body: jsonBody(CreateUser) },
      responses: { ...okResponse(UserResponse, "The user"), ...errorResponses(400, 401, 415, 422, 500) },
    }),
    async (c) => {
      const b = c.req.valid("json");
      const user = await createAccount(c.get("deps").db, {
        username: b.username,
        email: b.email,
        name: b.name,
        password: b.password,
        groupId: b.group_id,
        capacityKb: b.capacity_kb,
        registeredIp: b.registered_ip ?? clientIp(c),
        role: b.role,
      });
      return respond(c, toOutput(user));
    },
  );
  app.openapi(
    adminRoute({
      method: "get",
      path: "/api/admin/users/{id}",
      operationId: "adminGetUser",
      summary: "Read a user",
      description: "One user with capacity, used space and counters.",
      request: { params: idParam },
      responses: { ...okResponse(UserResponse, "The user"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const user = await getUser(c.get("deps").db, c.req.valid("param").id);
      if (!user) throw notFound("User not found.");
      return respond(c, toOutput(user));
    },
  );
  app.openapi(
    adminRoute({
      method: "patch",
      path: "/api/admin/users/{id}",
      operationId: "adminUpdateUser",
      summary: "Change a user (enabled, group, capacity, name, email, role, password)",
      description:
        "Enables or disables the account (disabled \u2192 403 on every call and no sign-in), moves it to another group, changes its capacity (`null` = the group's default), email (unique) or role, or sets its password for the user center (`null` removes it). A new password, disabling the account or moving it into a disabled group ends the user's signed-in sessions: enabling it again does not revive them.",
      request: { params: idParam, body: jsonBody(UpdateUser) },
      responses: { ...okResponse(UserResponse, "The user"), ...errorResponses(400, 401, 404, 415, 422, 500) },
    }),
    async (c) => {
      const { db, clock } = c.get("deps");
      const b = c.req.valid("json");
      const change = { enabled: b.enabled, groupId: b.group_id, capacityKb: b.capacity_kb, name: b.name, email: b.email, role: b.role, password: b.password };
      const user = await changeAccount(db, c.req.valid("param").id, change, clock());
      if (!user) throw notFound("User not found.");
      return respond(c, toOutput(user));
    },
  );
  registerAccountActions(app);
}

/** What an administrator does to an account beyond its fields: sign it out everywhere, a password link, deletion. */
function registerAccountActions(app: OpenAPIHono<AppEnv>) {
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/users/{id}/sign-out",
      operationId: "adminSignOutUser",
      summary: "Revoke a user's tokens and end their sessions",
      description: "Revokes every permanent and temporary token of the user and ends every signed-in session, in one transaction; `data` counts the tokens revoked.",
      request: { params: idParam },
      responses: { ...okResponse(envelope(z.object({ tokens_revoked: z.number().int() }), "SignOutResponse"), "Done"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const { db, clock } = c.get("deps");
      const revoked = await signOutAccount(db, c.req.valid("param").id, clock());
      if (revoked === null) throw notFound("User not found.");
      return respond(c, { tokens_revoked: revoked });
    },
  );
  app.openapi(
    adminRoute({
      method: "post",
      path: "/api/admin/users/{id}/password-link",
      operationId: "adminCreatePasswordLink",
      summary: "Make a one-time link to set a user's password",
      description: `A link to the user center's page that sets this user's password: valid for ${PASSWORD_LINK_MS / 60_000} minutes, used once; using it ends the user's sessions. Give it to the user over a channel you trust. At most 5 links are live per user (a new one ends the oldest).`,
      request: { params: idParam },
      responses: {
        ...okResponse(envelope(z.object({ url: z.url(), expired_at: dateTime }), "PasswordLinkResponse"), "The link (shown this once)"),
        ...errorResponses(401, 404, 422, 500),
      },
    }),
    async (c) => {
      const link = await createPasswordLink(c.get("deps"), c.req.valid("param").id);
      if (!link) throw notFound("User not found.");
      return respond(c, { url: link.url, expired_at: formatDateTime(link.expiresAt) });
    },
  );
  app.openapi(
    adminRoute({
      method: "delete",
      path: "/api/admin/users/{id}",
      operationId: "adminDeleteUser",
      summary: "Delete a user and all their images",
      description:
        "Disables the account, revokes its tokens and ends its sessions at once; then deletes every image of it with the guarantees of `DELETE /api/v1/images/{key}` (record, quota and capacity in one transaction each, objects, thumbnails and variants removed after the commit or by the removal workers), then the account with its albums. Synchronous: with many images it takes a while. A failure halfway leaves a disabled account with fewer images; deleting it again finishes.",
      request: { params: idParam },
      responses: { ...okResponse(envelope(z.object({ images_deleted: z.number().int() }), "DeleteUserResponse"), "Deleted"), ...errorResponses(401, 404, 422, 500) },
    }),
    async (c) => {
      const result = await deleteUserAndImages(c.get("deps"), c.req.valid("param").id);
      if (!result) throw notFound("User not found.");
      return respond(c, { images_deleted: result.images });
    },
  );
}
