import { insertTokens, lockUnrevokedToken } from "../db/repositories/tokens.ts";
import type { Executor } from "../db/client.ts";
import { unauthorized } from "../errors.ts";
import type { UserCaller } from "./caller.ts";
import { randomToken, sha256Hex } from "./secrets.ts";

/** A permanent token is displayed once as `id|raw`; only the hash of `raw` is stored. */
export async function issuePermanentToken(db: Executor, userId: number, now: Date) {
  const raw = randomToken(30);
  const [row] = await insertTokens(db, [{ userId, kind: "permanent", secretHash: sha256Hex(raw), createdAt: now }]);
  return { id: row!.id, token: `${row!.id}|${raw}` };
}

/**
 * Issues `num` temporary upload tokens valid for `seconds`, recorded as issued by the caller's permanent token
 * so that revoking it revokes them. A revocation that commits after authentication refuses the issue (401).
 */
export async function issueTemporaryTokens(db: Executor, caller: UserCaller, num: number, seconds: number, now: Date) {
  // whole seconds, so that the displayed expiry is exactly when the token stops working
  const expiredAt = new Date(Math.floor(now.getTime() / 1000) * 1000 + seconds * 1000);
  const raws = Array.from({ length: num }, () => randomToken(30));
  await db.transaction(async (tx) => {
    if (!(await lockUnrevokedToken(tx, caller.tokenId))) throw unauthorized("Invalid token.");
    await insertTokens(
      tx,
      raws.map((raw) => ({
        userId: caller.user.id,
        kind: "temporary" as const,
        secretHash: sha256Hex(raw),
        expiredAt,
        parentTokenId: caller.tokenId,
        createdAt: now,
      })),
    );
  });
  return raws.map((token) => ({ token, expiredAt }));
}
