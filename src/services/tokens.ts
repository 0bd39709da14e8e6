import { insertTokens, lockUnrevokedToken, recordTokenUse } from "../db/repositories/tokens.ts";
import type { Executor } from "../db/client.ts";
import type { Deps } from "../deps.ts";
import { unauthorized } from "../errors.ts";
import type { UserCaller } from "./caller.ts";
import { perDeps } from "./per-deps.ts";
import { randomToken, sha256Hex } from "./secrets.ts";

/** A permanent token is displayed once as `id|raw`; only the hash of `raw` is stored. `label` is the owner's name for it. */
export async function issuePermanentToken(db: Executor, userId: number, now: Date, label: string | null = null) {
  const raw = randomToken(30);
  const [row] = await insertTokens(db, [{ userId, kind: "permanent", secretHash: sha256Hex(raw), label, createdAt: now }]);
  return { id: row!.id, token: `${row!.id}|${raw}` };
}

/** Whole seconds, so that the displayed expiry is exactly when the token stops working. */
const expiryAfter = (now: Date, seconds: number) => new Date(Math.floor(now.getTime() / 1000) * 1000 + seconds * 1000);

/**
 * Issues `num` temporary upload tokens valid for `seconds`, recorded as issued by the caller's permanent token
 * so that revoking it revokes them. A revocation that commits after authentication refuses the issue (401).
 */
export async function issueTemporaryTokens(db: Executor, caller: UserCaller, num: number, seconds: number, now: Date) {
  const expiredAt = expiryAfter(now, seconds);
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

const isForeignKeyViolation = (e: unknown) => {
  const err = e as { code?: string; cause?: { code?: string } };
  return err.code === "23503" || err.cause?.code === "23503";
};

/**
 * Temporary upload tokens for a signed-in account of the user center (no permanent token issues them). With
 * `sessionId` they belong to that session: signing out or its expiry removes them, and a session that ended
 * meanwhile refuses the issue (401: the foreign key finds no session). Without it they live until they expire
 * or the owner revokes them.
 */
export async function issueAccountTemporaryTokens(
  db: Executor,
  userId: number,
  num: number,
  seconds: number,
  now: Date,
  sessionId: number | null = null,
) {
  const expiredAt = expiryAfter(now, seconds);
  const raws = Array.from({ length: num }, () => randomToken(30));
  try {
    await insertTokens(
      db,
      raws.map((raw) => ({ userId, kind: "temporary" as const, secretHash: sha256Hex(raw), expiredAt, sessionId, createdAt: now })),
    );
  } catch (e) {
    if (sessionId !== null && isForeignKeyViolation(e)) throw unauthorized("Your session has ended: sign in again.");
    throw e;
  }
  return raws.map((token) => ({ token, expiredAt }));
}

/** How often a token's last use is written: at most once a minute per token and instance. */
export const TOKEN_USE_INTERVAL_MS = 60_000;
const MAX_REMEMBERED = 100_000;
const notedFor = perDeps(() => new Map<number, number>());

/**
 * Records a token's use (shown as "last used" on the API Tokens page) without slowing the call: at most once a
 * minute per token, and never awaited. The write is itself conditional, so instances that note the same minute
 * cost one no-op UPDATE each. A failed write is only a less precise "last used": it is dropped.
 */
export function noteTokenUse(deps: Deps, tokenId: number) {
  const seen = notedFor(deps);
  const now = deps.clock();
  const at = seen.get(tokenId);
  if (at !== undefined && now.getTime() - at < TOKEN_USE_INTERVAL_MS) return;
  seen.delete(tokenId); // re-inserted last: the map's order is the order of last write
  seen.set(tokenId, now.getTime());
  if (seen.size > MAX_REMEMBERED) seen.delete(seen.keys().next().value!);
  recordTokenUse(deps.db, tokenId, now).catch(() => {});
}
