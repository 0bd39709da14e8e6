import type { Executor } from "../../db/client.ts";
import { deletePendingSignInsOfUser } from "../../db/repositories/pending-sign-ins.ts";
import { deletePasskeysOfUser, deleteRecoveryCodesOfUser, deleteTotpOfUser } from "../../db/repositories/second-factors.ts";
import { getUser } from "../../db/repositories/users.ts";

/**
 * The emergency path (the admin API, the CLI): removes every second factor of an account — its authenticator app,
 * its recovery codes, its passkeys — and its sign-ins under way, in one transaction. The password and the sessions
 * stay. When the site requires a second factor, the account is led to set one up at its next sign-in. Null when
 * there is no such account. The admin API writes the audit log entry.
 */
export async function resetSecondFactors(db: Executor, userId: number) {
  return db.transaction(async (tx) => {
    if (!(await getUser(tx, userId))) return null;
    const totp = await deleteTotpOfUser(tx, userId);
    const recoveryCodes = await deleteRecoveryCodesOfUser(tx, userId);
    const passkeys = await deletePasskeysOfUser(tx, userId);
    await deletePendingSignInsOfUser(tx, userId);
    return { totp, recoveryCodes, passkeys };
  });
}
