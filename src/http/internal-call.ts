import type { Actor } from "../services/audit.ts";

/**
 * An in-process call of the app by the app itself: an admin page calling the admin API on behalf of the signed-in
 * administrator. It is marked in the call's environment (Hono's `c.env`) with a symbol only this module holds, so
 * no request from the network can claim it: Bun passes its server object there, a test its own.
 */
const INTERNAL = Symbol("internal admin call");

interface InternalCall {
  readonly [INTERNAL]: Actor;
}

export const internalCall = (actor: Actor): InternalCall => ({ [INTERNAL]: actor });

/** The administrator an in-process call acts for, or undefined for a request from the network. */
export function internalActorOf(env: unknown): Actor | undefined {
  return env !== null && typeof env === "object" && INTERNAL in env ? (env as InternalCall)[INTERNAL] : undefined;
}
