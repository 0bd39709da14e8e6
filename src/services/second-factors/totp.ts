/**
 * TOTP authenticators (RFC 6238: SHA-1, 6 digits, 30-second steps, one step either side for clock drift), with
 * `otpauth` (docs/decisions/sign-in-core.md). A code is accepted once: the step it matched must be later than the
 * last one accepted, which is recorded by a conditional UPDATE (two requests with one code: one wins).
 */
import { Secret, TOTP, URI } from "otpauth";
import QRCode from "qrcode";
import type { Executor } from "../../db/client.ts";
import { acceptTotpStep, deleteRecoveryCodesOfUser, deleteTotpOfUser, findTotpOfUser, putUnconfirmedTotp } from "../../db/repositories/second-factors.ts";
import type { SecretBox } from "../../webhooks/secret-box.ts";
import { type AccountActor, auditAccount } from "./audit.ts";
import { issueRecoveryCodes } from "./recovery.ts";

const PERIOD = 30;
const DIGITS = 6;
/** Steps accepted either side of now: a phone's clock a little off still works. */
const WINDOW = 1;
/** What sealed secrets carry inside, so that a sealed webhook secret in this column opens to nothing. */
const PREFIX = "totp:";

const totpOf = (secret: string, label = "", issuer = "") =>
  new TOTP({ issuer, label, secret: Secret.fromBase32(secret), algorithm: "SHA1", digits: DIGITS, period: PERIOD });

export const sealTotpSecret = (box: SecretBox, secret: string) => box.seal(`${PREFIX}${secret}`);

export function openTotpSecret(box: SecretBox, sealed: string): string {
  const text = box.open(sealed);
  if (!text.startsWith(PREFIX)) throw new Error("not a sealed TOTP secret");
  return text.slice(PREFIX.length);
}

/** A code as people type it: digits, spaces and dashes ignored. Null when it cannot be a code. */
export function cleanCode(code: string): string | null {
  const digits = code.replace(/[\s-]/g, "");
  return new RegExp(`^\\d{${DIGITS}}$`).test(digits) ? digits : null;
}

/** The time step `code` is right for, within the window around `now`, or null. */
export function matchingStep(secret: string, code: string, now: Date): number | null {
  const token = cleanCode(code);
  if (!token) return null;
  const delta = totpOf(secret).validate({ token, timestamp: now.getTime(), window: WINDOW });
  return delta === null ? null : Math.floor(now.getTime() / 1000 / PERIOD) + delta;
}

/** The code of `secret` at `at` (tests and the enrolment's example). */
export const codeAt = (secret: string, at: Date) => totpOf(secret).generate({ timestamp: at.getTime() });

export interface TotpEnrolment {
  /** Base32, shown once, for typing into an app by hand. */
  secret: string;
  /** The otpauth:// address the QR code carries. */
  uri: string;
  /** The QR code, an SVG drawn here (no image from elsewhere). */
  qrSvg: string;
}

/**
 * Starts (or restarts) an enrolment: a new secret of 160 bits, kept sealed and unconfirmed until a first code proves
 * the app holds it. Null when the account has a confirmed authenticator already (remove it first).
 */
export async function beginTotpEnrolment(
  db: Executor,
  box: SecretBox,
  account: { id: number; username: string },
  issuer: string,
  now: Date,
): Promise<TotpEnrolment | null> {
  const secret = new Secret({ size: 20 }).base32;
  if (!(await putUnconfirmedTotp(db, account.id, sealTotpSecret(box, secret), now))) return null;
  const uri = URI.stringify(totpOf(secret, account.username, issuer));
  const qrSvg = await QRCode.toString(uri, { type: "svg", margin: 2, errorCorrectionLevel: "M" });
  return { secret, uri, qrSvg };
}

/** The enrolment's secret and QR code again (the page reloaded), while it is unconfirmed. */
export async function pendingTotpEnrolment(db: Executor, box: SecretBox, account: { id: number; username: string }, issuer: string) {
  const row = await findTotpOfUser(db, account.id);
  if (!row || row.confirmedAt) return null;
  const secret = openTotpSecret(box, row.secret);
  const uri = URI.stringify(totpOf(secret, account.username, issuer));
  return { secret, uri, qrSvg: await QRCode.toString(uri, { type: "svg", margin: 2, errorCorrectionLevel: "M" }) };
}

export type TotpCheck = "ok" | "wrong" | "replayed" | "none";

async function check(db: Executor, box: SecretBox, userId: number, code: string, now: Date, confirmed: boolean): Promise<TotpCheck> {
  const row = await findTotpOfUser(db, userId);
  if (!row || (row.confirmedAt !== null) !== confirmed) return "none";
  const step = matchingStep(openTotpSecret(box, row.secret), code, now);
  if (step === null) return "wrong";
  if (row.lastStep !== null && step <= row.lastStep) return "replayed";
  return (await acceptTotpStep(db, userId, step, now)) ? "ok" : "replayed";
}

/** A sign-in's code: right for now, and of a later step than any code accepted before. */
export const verifyTotp = (db: Executor, box: SecretBox, userId: number, code: string, now: Date) => check(db, box, userId, code, now, true);

/**
 * Confirms an enrolment with its first code: the authenticator counts from now on, and ten new recovery codes are
 * made (returned once, in clear). Written to the audit log.
 */
export async function confirmTotpEnrolment(
  db: Executor,
  box: SecretBox,
  actor: AccountActor,
  code: string,
  now: Date,
): Promise<{ result: TotpCheck; recoveryCodes?: string[] }> {
  const result = await check(db, box, actor.userId, code, now, false);
  if (result !== "ok") return { result };
  const recoveryCodes = await issueRecoveryCodes(db, actor.userId, now);
  await auditAccount(db, actor, "account.totp.enable", { recovery_codes: recoveryCodes.length }, now);
  return { result, recoveryCodes };
}

/** Removes the account's authenticator and its recovery codes; written to the audit log. Whether there was one. */
export async function removeTotp(db: Executor, actor: AccountActor, now: Date): Promise<boolean> {
  return db.transaction(async (tx) => {
    const removed = await deleteTotpOfUser(tx, actor.userId);
    const codes = await deleteRecoveryCodesOfUser(tx, actor.userId);
    if (removed) await auditAccount(tx, actor, "account.totp.disable", { recovery_codes_removed: codes }, now);
    return removed;
  });
}
