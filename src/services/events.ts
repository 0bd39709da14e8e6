/**
 * The events of accounts and tokens, written in the transaction of the change they describe (the outbox of
 * webhooks/events.ts). Events are emitted by services, and only by them: a repository returns what changed, a route
 * calls a service; the layer check refuses webhooks/events.ts to every other layer.
 */
import type { Executor } from "../db/client.ts";
import type { RevokedToken } from "../db/repositories/tokens.ts";
import { emitEvent } from "../webhooks/events.ts";

/** `token.revoked` for each token revoked (its id and kind: never its secret). */
export async function emitTokensRevoked(tx: Executor, revoked: Pick<RevokedToken, "id" | "userId" | "kind" | "label">[], at: Date) {
  for (const t of revoked) {
    await emitEvent(tx, {
      type: "token.revoked",
      ownerId: t.userId,
      subject: `token:${t.id}`,
      at,
      data: { token: { id: t.id, kind: t.kind, label: t.label ?? null, revoked_at: at.toISOString() } },
    });
  }
}

/** `user.disabled`, to the site-wide endpoints. */
export async function emitUserDisabled(tx: Executor, user: { id: number; username: string }, reason: "disabled" | "deleted", at: Date) {
  await emitEvent(tx, {
    type: "user.disabled",
    ownerId: null,
    subject: `user:${user.id}`,
    at,
    data: { user: { id: user.id, username: user.username }, reason },
  });
}
