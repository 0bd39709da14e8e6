import { insertTokens } from "../db/repositories/tokens.ts";
import type { Executor } from "../db/client.ts";
import { randomToken, sha256Hex } from "./secrets.ts";

/** A permanent token is displayed once as `id|raw`; only the hash of `raw` is stored. */
export async function issuePermanentToken(db: Executor, userId: number) {
  const raw = randomToken(30);
  const [row] = await insertTokens(db, [{ userId, kind: "permanent", secretHash: sha256Hex(raw) }]);
  return { id: row!.id, token: `${row!.id}|${raw}` };
}

/** Issues `num` temporary upload tokens valid for `seconds`, in one statement. */
export async function issueTemporaryTokens(db: Executor, userId: number, num: number, seconds: number, now: Date) {
  // whole seconds, so that the displayed expiry is exactly when the token stops working
  const expiredAt = new Date(Math.floor(now.getTime() / 1000) * 1000 + seconds * 1000);
  const raws = Array.from({ length: num }, () => randomToken(30));
  await insertTokens(
    db,
    raws.map((raw) => ({ userId, kind: "temporary" as const, secretHash: sha256Hex(raw), expiredAt })),
  );
  return raws.map((token) => ({ token, expiredAt }));
}
