/**
 * Passkeys (WebAuthn) with @simplewebauthn/server: registration by a signed-in account (or one enrolling at sign-in),
 * and authentication as a second factor or alone (passwordless). The relying party is BASE_URL: its host name is the
 * rpID, its origin the only origin accepted. A challenge is a row bound to the session or pending sign-in that asked,
 * taken by the answer (used once); a counter that does not move forward is refused (docs/decisions/sign-in-core.md).
 */
import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from "@simplewebauthn/server";
import type { Executor } from "../../db/client.ts";
import { insertPasskeyChallenge, takePasskeyChallenge } from "../../db/repositories/pending-sign-ins.ts";
import {
  deletePasskeyOfUser,
  findPasskeyByCredentialId,
  insertPasskey,
  listPasskeysOfUser,
  type Passkey,
  PASSKEYS_PER_ACCOUNT,
  recordPasskeyUse,
  renamePasskeyOfUser,
} from "../../db/repositories/second-factors.ts";
import { AppError, badRequest } from "../../errors.ts";
import { sha256Hex } from "../secrets.ts";
import { type AccountActor, auditAccount } from "./audit.ts";

/** A ceremony must be answered within five minutes. */
const CHALLENGE_MS = 5 * 60_000;
export const PASSKEY_NAME_MAX = 60;
const COUNTER_BACKWARDS = "its signature counter went backwards (a cloned key?).";

export interface RelyingParty {
  id: string;
  origin: string;
  name: string;
}

/** The relying party of the site: BASE_URL's host name and origin, the site's name. */
export function relyingPartyOf(baseUrl: string, siteName: string): RelyingParty {
  const url = new URL(baseUrl);
  return { id: url.hostname, origin: url.origin, name: siteName };
}

export type ChallengeOwner = { sessionId: number } | { pendingId: number };

const ownerColumns = (owner: ChallengeOwner) => ("sessionId" in owner ? { sessionId: owner.sessionId } : { pendingId: owner.pendingId });

/** The WebAuthn user handle of an account: stable, and not its id in clear. */
const userHandle = (userId: number) => new Uint8Array(Buffer.from(sha256Hex(`passkey-user:${userId}`), "hex").subarray(0, 16));

/** The challenge the browser's answer carries (base64url), from its clientDataJSON; null when unreadable. */
function challengeOf(response: { response?: { clientDataJSON?: unknown } }): string | null {
  const data = response?.response?.clientDataJSON;
  if (typeof data !== "string" || data.length > 4096) return null;
  try {
    const parsed = JSON.parse(Buffer.from(data, "base64url").toString("utf8")) as { challenge?: unknown };
    return typeof parsed.challenge === "string" && parsed.challenge.length <= 200 ? parsed.challenge : null;
  } catch {
    return null;
  }
}

export const refused = (why: string) => new AppError("unauthorized", `The passkey was refused: ${why}`);

/** Options for adding a passkey to the account (its existing ones excluded); the challenge is kept for `owner`. */
export async function registrationOptions(
  db: Executor,
  rp: RelyingParty,
  account: { id: number; username: string; name: string },
  owner: ChallengeOwner,
  now: Date,
) {
  const existing = await listPasskeysOfUser(db, account.id);
  if (existing.length >= PASSKEYS_PER_ACCOUNT) throw badRequest(`An account holds at most ${PASSKEYS_PER_ACCOUNT} passkeys: remove one first.`);
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: account.username,
    userDisplayName: account.name || account.username,
    userID: userHandle(account.id),
    attestationType: "none",
    excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
    authenticatorSelection: { residentKey: "preferred", userVerification: "preferred" },
  });
  await keepChallenge(db, options.challenge, "register", account.id, owner, now);
  return options;
}

/** Verifies the browser's answer and stores the passkey under `name`; written to the audit log. */
export async function registerPasskey(
  db: Executor,
  rp: RelyingParty,
  actor: AccountActor,
  owner: ChallengeOwner,
  response: RegistrationResponseJSON,
  name: string,
  now: Date,
): Promise<Passkey> {
  const challenge = challengeOf(response);
  const taken = challenge ? await takePasskeyChallenge(db, challenge, owner, "register", now) : null;
  if (!taken || taken.userId !== actor.userId) throw refused("its challenge is unknown, used or expired: try again.");
  let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    verified = await verifyRegistrationResponse({
      response,
      expectedChallenge: taken.challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      requireUserVerification: false,
    });
  } catch (e) {
    throw refused((e as Error).message);
  }
  if (!verified.verified) throw refused("its answer did not verify.");
  const info = verified.registrationInfo;
  if (await findPasskeyByCredentialId(db, info.credential.id)) throw refused("it is registered already.");
  const passkey = await insertPasskey(db, {
    userId: actor.userId,
    credentialId: info.credential.id,
    publicKey: Buffer.from(info.credential.publicKey).toString("base64url"),
    counter: info.credential.counter,
    transports: (info.credential.transports ?? []).slice(0, 10),
    name: cleanName(name) || "Passkey",
    backedUp: info.credentialBackedUp,
    createdAt: now,
  });
  await auditAccount(db, actor, "account.passkey.add", { passkey: passkey.id, name: passkey.name }, now);
  return passkey;
}

/** A challenge given to `owner`, kept CHALLENGE_MS for the one answer that may take it. */
const keepChallenge = (db: Executor, challenge: string, purpose: "register" | "authenticate", userId: number | null, owner: ChallengeOwner, now: Date) =>
  insertPasskeyChallenge(db, { challenge, purpose, userId, ...ownerColumns(owner), expiresAt: new Date(now.getTime() + CHALLENGE_MS) });

export const cleanName = (name: string) => [...name.replace(/\p{Cc}/gu, "").trim()].slice(0, PASSKEY_NAME_MAX).join("").trim();

/**
 * Options for signing in with a passkey: of `userId` (a second factor: its passkeys are allowed) or of anyone
 * (passwordless: the browser offers the site's discoverable passkeys). The challenge is kept for `owner`.
 */
export async function authenticationOptions(db: Executor, rp: RelyingParty, userId: number | null, owner: ChallengeOwner, now: Date) {
  const allowed = userId === null ? [] : await listPasskeysOfUser(db, userId);
  const options = await generateAuthenticationOptions({
    rpID: rp.id,
    allowCredentials: allowed.map((p) => ({ id: p.credentialId, transports: p.transports })),
    userVerification: userId === null ? "required" : "preferred",
  });
  await keepChallenge(db, options.challenge, "authenticate", userId, owner, now);
  return options;
}

/**
 * Verifies a sign-in's answer: the challenge given to `owner` (taken), a passkey known (of `userId` when given), its
 * signature, user verification when `requireUserVerification`, and a counter that moved forward. Returns the passkey's
 * account and whether its user was verified. Refusals are 401 AppErrors.
 */
export async function authenticatePasskey(
  db: Executor,
  rp: RelyingParty,
  owner: ChallengeOwner,
  response: AuthenticationResponseJSON,
  userId: number | null,
  requireUserVerification: boolean,
  now: Date,
): Promise<{ userId: number; passkey: Passkey; userVerified: boolean }> {
  const challenge = challengeOf(response);
  const taken = challenge ? await takePasskeyChallenge(db, challenge, owner, "authenticate", now) : null;
  if (!taken || taken.userId !== userId) throw refused("its challenge is unknown, used or expired: try again.");
  const id = typeof response?.id === "string" && response.id.length <= 1400 ? response.id : "";
  const passkey = id ? await findPasskeyByCredentialId(db, id) : null;
  if (!passkey || (userId !== null && passkey.userId !== userId)) throw refused("it is not registered here (or was removed).");
  let verified: Awaited<ReturnType<typeof verifyAuthenticationResponse>>;
  try {
    verified = await verifyAuthenticationResponse({
      response,
      expectedChallenge: taken.challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: {
        id: passkey.credentialId,
        publicKey: new Uint8Array(Buffer.from(passkey.publicKey, "base64url")),
        counter: passkey.counter,
        transports: passkey.transports,
      },
      requireUserVerification,
    });
  } catch (e) {
    const message = (e as Error).message;
    throw refused(/counter/i.test(message) ? COUNTER_BACKWARDS : message);
  }
  if (!verified.verified) throw refused("its signature did not verify.");
  const { newCounter, userVerified } = verified.authenticationInfo;
  // an authenticator that counts must count up: a counter that stays or goes back is a clone
  if ((newCounter > 0 || passkey.counter > 0) && newCounter <= passkey.counter) throw refused(COUNTER_BACKWARDS);
  if (!(await recordPasskeyUse(db, passkey.id, passkey.counter, newCounter, now))) throw refused("it was used at the same time elsewhere.");
  return { userId: passkey.userId, passkey, userVerified };
}

export const passkeysOf = (db: Executor, userId: number) => listPasskeysOfUser(db, userId);

export async function renamePasskey(db: Executor, actor: AccountActor, id: number, name: string, now: Date): Promise<Passkey | null> {
  const clean = cleanName(name);
  if (!clean) throw badRequest("Give the passkey a name.");
  const row = await renamePasskeyOfUser(db, id, actor.userId, clean);
  if (row) await auditAccount(db, actor, "account.passkey.rename", { passkey: id, name: clean }, now);
  return row;
}

export async function removePasskey(db: Executor, actor: AccountActor, id: number, now: Date): Promise<Passkey | null> {
  const row = await deletePasskeyOfUser(db, id, actor.userId);
  if (row) await auditAccount(db, actor, "account.passkey.remove", { passkey: id, name: row.name }, now);
  return row;
}
