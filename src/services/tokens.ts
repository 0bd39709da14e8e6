import {
  countIssuedTokens,
  deleteDeadTokens,
  insertTokens,
  isOwnToken,
  lockTokenIssuing,
  lockUnrevokedToken,
  nthRecentTemporaryIssue,
  recordTokenUse,
  revokeTokenAndIssued,
  revokeTokensOfUser,
  trimSessionTokens,
} from "../db/repositories/tokens.ts";
import type { Executor } from "../db/client.ts";
import type { Deps } from "../deps.ts";
import { AppError, badRequest, unauthorized } from "../errors.ts";
import type { UserCaller } from "./caller.ts";
import { emitTokensRevoked } from "./events.ts";
import { servicesOf } from "./index.ts";
import { randomToken, sha256Hex } from "./secrets.ts";

/**
 * The bounds of one account's tokens, each enforced by counting under the account's issuing lock inside the
 * inserting transaction (so concurrent requests and instances cannot overshoot them).
 */
export const TOKEN_LIMITS = {
  /** Live temporary tokens (unexpired, unrevoked) an account may hold, the upload page's own aside: beyond, 400. */
  liveTemporary: 1000,
  /** Temporary tokens an account may issue in any 60 seconds (revoked or expired ones included): beyond, 400 with Retry-After. */
  temporaryPerMinute: 600,
  /** Unrevoked permanent tokens an account may hold: beyond, 400. */
  livePermanent: 100,
  /** Upload tokens one signed-in session of the user center keeps: a new one removes the oldest beyond. */
  perSession: 10,
  /** Tokens that can never work again (expired, revoked) are forgotten this long after (the sweeper). */
  keepDeadMs: 3_600_000,
} as const;

const WINDOW_MS = 60_000;

/** A permanent token is displayed once as `id|raw`; only the hash of `raw` is stored. `label` is the owner's name for it. */
export async function issuePermanentToken(db: Executor, userId: number, now: Date, label: string | null = null) {
  const raw = randomToken(30);
  const row = await db.transaction(async (tx) => {
    await lockTokenIssuing(tx, userId);
    const { livePermanent } = await countIssuedTokens(tx, userId, now, now);
    if (livePermanent >= TOKEN_LIMITS.livePermanent) {
      throw badRequest(`This account already holds ${TOKEN_LIMITS.livePermanent} permanent tokens, the most it may: revoke one first.`);
    }
    const [inserted] = await insertTokens(tx, [{ userId, kind: "permanent", secretHash: sha256Hex(raw), label, createdAt: now }]);
    return inserted!;
  });
  return { id: row.id, token: `${row.id}|${raw}` };
}

/** Whole seconds, so that the displayed expiry is exactly when the token stops working. */
const expiryAfter = (now: Date, seconds: number) => new Date(Math.floor(now.getTime() / 1000) * 1000 + seconds * 1000);

/**
 * Refuses a batch of `num` temporary tokens that would take the account beyond its live tokens (400) or its issuing
 * rate (400, with Retry-After: the seconds until enough of the window's tokens have left it). Call under lockTokenIssuing.
 */
async function checkTemporaryBounds(tx: Executor, userId: number, num: number, now: Date) {
  const since = new Date(now.getTime() - WINDOW_MS);
  const { liveTemporary, recentTemporary } = await countIssuedTokens(tx, userId, now, since);
  if (liveTemporary + num > TOKEN_LIMITS.liveTemporary) {
    throw badRequest(
      `An account may hold at most ${TOKEN_LIMITS.liveTemporary} live temporary tokens and this one holds ${liveTemporary}: ` +
        "revoke some or wait until they expire.",
    );
  }
  const over = recentTemporary + num - TOKEN_LIMITS.temporaryPerMinute;
  if (over > 0) {
    const at = await nthRecentTemporaryIssue(tx, userId, since, over);
    const seconds = Math.max(1, Math.ceil(((at?.getTime() ?? now.getTime()) + WINDOW_MS - now.getTime()) / 1000));
    throw new AppError(
      "bad_request",
      `An account may issue at most ${TOKEN_LIMITS.temporaryPerMinute} temporary tokens a minute: retry in ${seconds} s.`,
      undefined,
      { "retry-after": String(seconds) },
    );
  }
}

/**
 * Issues `num` temporary upload tokens valid for `seconds`, recorded as issued by the caller's permanent token
 * so that revoking it revokes them. A revocation that commits after authentication refuses the issue (401); the
 * account's bounds (TOKEN_LIMITS) refuse it with 400.
 */
export async function issueTemporaryTokens(db: Executor, caller: UserCaller, num: number, seconds: number, now: Date) {
  const expiredAt = expiryAfter(now, seconds);
  const raws = Array.from({ length: num }, () => randomToken(30));
  await db.transaction(async (tx) => {
    if (!(await lockUnrevokedToken(tx, caller.tokenId))) throw unauthorized("Invalid token.");
    await lockTokenIssuing(tx, caller.user.id);
    await checkTemporaryBounds(tx, caller.user.id, num, now);
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
 * `sessionId` they belong to that session: signing out or its expiry removes them, a session that ended
 * meanwhile refuses the issue (401: the foreign key finds no session), and the session keeps only its
 * TOKEN_LIMITS.perSession newest. Without it they live until they expire or the owner revokes them, within the
 * account's bounds (400) as through the API.
 */
export async function issueAccountTemporaryTokens(db: Executor, userId: number, num: number, seconds: number, now: Date, sessionId: number | null = null) {
  const expiredAt = expiryAfter(now, seconds);
  const raws = Array.from({ length: num }, () => randomToken(30));
  try {
    await db.transaction(async (tx) => {
      await lockTokenIssuing(tx, userId);
      if (sessionId === null) await checkTemporaryBounds(tx, userId, num, now);
      await insertTokens(
        tx,
        raws.map((raw) => ({ userId, kind: "temporary" as const, secretHash: sha256Hex(raw), expiredAt, sessionId, createdAt: now })),
      );
      if (sessionId !== null) await trimSessionTokens(tx, sessionId, TOKEN_LIMITS.perSession);
    });
  } catch (e) {
    if (sessionId !== null && isForeignKeyViolation(e)) throw unauthorized("Your session has ended: sign in again.");
    throw e;
  }
  return raws.map((token) => ({ token, expiredAt }));
}

/** Revokes a token and the temporary tokens it issued, with their `token.revoked` events; false when no such token. */
export async function revokeToken(db: Executor, id: number, at: Date): Promise<boolean> {
  return db.transaction(async (tx) => {
    const { found, revoked } = await revokeTokenAndIssued(tx, id, at);
    await emitTokensRevoked(tx, revoked, at); // the events commit with the revocation
    return found;
  });
}

/** Revokes the owner's token (and what it issued); false when it is missing or another account's. */
export async function revokeOwnToken(db: Executor, id: number, ownerId: number, at: Date): Promise<boolean> {
  return (await isOwnToken(db, id, ownerId)) && revokeToken(db, id, at);
}

/**
 * Revokes every unrevoked token of the account, except the upload tokens of the session `keepSessionId`, with their
 * events (run it in the caller's transaction); returns how many.
 */
export async function revokeAllTokensOf(tx: Executor, userId: number, at: Date, keepSessionId: number | null = null): Promise<number> {
  const revoked = await revokeTokensOfUser(tx, userId, at, keepSessionId);
  await emitTokensRevoked(tx, revoked, at);
  return revoked.length;
}

/** Forgets the tokens that expired or were revoked more than TOKEN_LIMITS.keepDeadMs ago (the sweeper, every round). */
export const pruneDeadTokens = (db: Executor, now: Date) => deleteDeadTokens(db, new Date(now.getTime() - TOKEN_LIMITS.keepDeadMs));

/** How often a token's last use is written: at most once a minute per token and instance. */
const TOKEN_USE_INTERVAL_MS = 60_000;
const MAX_REMEMBERED = 100_000;

/**
 * Records a token's use (shown as "last used" on the API Tokens page) without slowing the call: at most once a
 * minute per token, and never awaited. The write is itself conditional, so instances that note the same minute
 * cost one no-op UPDATE each. A failed write is only a less precise "last used": it is dropped.
 */
export function noteTokenUse(deps: Deps, tokenId: number) {
  const seen = servicesOf(deps).tokenUses;
  const now = deps.clock();
  const at = seen.get(tokenId);
  if (at !== undefined && now.getTime() - at < TOKEN_USE_INTERVAL_MS) return;
  seen.delete(tokenId); // re-inserted last: the map's order is the order of last write
  seen.set(tokenId, now.getTime());
  if (seen.size > MAX_REMEMBERED) seen.delete(seen.keys().next().value!);
  recordTokenUse(deps.db, tokenId, now).catch(() => {});
}
