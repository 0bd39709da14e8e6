/**
 * What the administration does to accounts: create one, change its fields, sign it out everywhere. Each is one
 * transaction; disabling an account emits `user.disabled` in it, revoking its tokens `token.revoked`.
 */
import { eq } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { getDefaultGroup, getGroup } from "../db/repositories/groups.ts";
import { deleteSessionsOfUser } from "../db/repositories/sessions.ts";
import { createUser, getUser, updateUser, type User } from "../db/repositories/users.ts";
import { users } from "../db/schema.ts";
import { validationError } from "../errors.ts";
import { emitUserDisabled } from "./events.ts";
import { hashPassword } from "./passwords.ts";
import { revokeAllTokensOf } from "./tokens.ts";

interface NewAccount {
  username: string;
  email: string;
  name?: string;
  password?: string;
  groupId?: number;
  capacityKb?: number | null;
  registeredIp: string;
  role?: "user" | "admin";
}

interface AccountChange {
  enabled?: boolean;
  groupId?: number;
  capacityKb?: number | null;
  name?: string;
  email?: string;
  role?: "user" | "admin";
  /** A new password, or null to remove it. */
  password?: string | null;
}

const isUniqueViolation = (e: unknown) => {
  const err = e as { code?: string; cause?: { code?: string } };
  return err.code === "23505" || err.cause?.code === "23505";
};

/** The group an account may be put in: an existing, non-guest group (422 otherwise). */
async function checkGroup(db: Db, id: number | undefined) {
  if (id === undefined) return;
  const group = await getGroup(db, id);
  if (!group || group.isGuest) throw validationError({ group_id: ["The group_id must be an existing, non-guest group."] });
}

/** Creates an account in its group (default: the default group); 422 when the username or email is taken. */
export async function createAccount(db: Db, account: NewAccount): Promise<User> {
  await checkGroup(db, account.groupId);
  const groupId = account.groupId ?? (await getDefaultGroup(db))?.id;
  if (!groupId) throw validationError({ group_id: ["There is no default group; give group_id."] });
  try {
    return await createUser(db, {
      username: account.username,
      email: account.email.toLowerCase(),
      name: account.name ?? account.username,
      groupId,
      capacityKb: account.capacityKb ?? null,
      passwordHash: account.password ? await hashPassword(account.password) : null,
      registeredIp: account.registeredIp,
      role: account.role ?? "user",
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw validationError({ username: ["The username or email is already taken."] });
    throw e;
  }
}

/**
 * Changes an account's fields; null when there is no such account. Disabling it emits `user.disabled`; a new
 * password, disabling it or moving it into a disabled group ends its sessions.
 */
export async function changeAccount(db: Db, id: number, change: AccountChange, now: Date): Promise<User | null> {
  await checkGroup(db, change.groupId);
  const passwordHash = change.password === undefined ? undefined : change.password === null ? null : await hashPassword(change.password);
  return db
    .transaction(async (tx) => {
      // was it enabled? (locked: two administrators disabling it at once send one user.disabled)
      const [before] = change.enabled === false ? await tx.select({ enabled: users.enabled }).from(users).where(eq(users.id, id)).for("update") : [];
      const updated = await updateUser(tx, id, {
        enabled: change.enabled,
        groupId: change.groupId,
        capacityKb: change.capacityKb,
        name: change.name,
        email: change.email?.toLowerCase(),
        role: change.role,
        passwordHash,
      });
      if (!updated) return null;
      if (before?.enabled && !updated.enabled) await emitUserDisabled(tx, updated, "disabled", now);
      // whoever knew the old password is signed out everywhere; a disabled account (or one moved into a disabled
      // group) is signed out too, so that enabling it again does not bring its old sessions back
      const group = change.groupId === undefined ? null : await getGroup(tx, updated.groupId);
      const shut = !updated.enabled || (group !== null && (!group.enabled || !group.allowApi));
      if (passwordHash !== undefined || shut) await deleteSessionsOfUser(tx, id);
      return updated;
    })
    .catch((e) => {
      if (isUniqueViolation(e)) throw validationError({ email: ["The email is already taken."] });
      throw e;
    });
}

/** Revokes every token of the account and ends its sessions, in one transaction: how many tokens; null when no such account. */
export async function signOutAccount(db: Db, id: number, now: Date): Promise<number | null> {
  return db.transaction(async (tx) => {
    if (!(await getUser(tx, id))) return null;
    const n = await revokeAllTokensOf(tx, id, now);
    await deleteSessionsOfUser(tx, id);
    return n;
  });
}
