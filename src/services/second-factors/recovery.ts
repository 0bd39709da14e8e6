/**
 * Recovery codes: ten per account, made with its TOTP authenticator, shown once, stored as SHA-256 (random 50-bit
 * codes, throttled like TOTP codes: a slow hash adds nothing), each used once.
 */
import { randomInt } from "node:crypto";
import type { Executor } from "../../db/client.ts";
import { replaceRecoveryCodes, useRecoveryCode } from "../../db/repositories/second-factors.ts";
import { sha256Hex } from "../secrets.ts";

export const RECOVERY_CODES = 10;
const ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"; // no 0/o, 1/l/i: read aloud and typed without doubt

function newCode(): string {
  const chars = Array.from({ length: 10 }, () => ALPHABET[randomInt(ALPHABET.length)]!);
  return `${chars.slice(0, 5).join("")}-${chars.slice(5).join("")}`;
}

/** A code as typed: case, spaces and dashes ignored. */
export const normaliseRecoveryCode = (code: string) => code.toLowerCase().replace(/[\s-]/g, "");
const hashOf = (code: string) => sha256Hex(`recovery:${normaliseRecoveryCode(code)}`);

/** Makes the account's ten codes, replacing any it had; returns them in clear, once. */
export async function issueRecoveryCodes(db: Executor, userId: number, now: Date): Promise<string[]> {
  const codes = new Set<string>();
  while (codes.size < RECOVERY_CODES) codes.add(newCode());
  await replaceRecoveryCodes(db, userId, [...codes].map(hashOf), now);
  return [...codes];
}

/** Uses one of the account's codes: true once per code. */
export async function redeemRecoveryCode(db: Executor, userId: number, code: string, now: Date): Promise<boolean> {
  const clean = normaliseRecoveryCode(code);
  if (!/^[a-z0-9]{10}$/.test(clean)) return false;
  return useRecoveryCode(db, userId, hashOf(clean), now);
}
