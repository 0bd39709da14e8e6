import { FairWorkQueue } from "./work-queue.ts";

/** Password length accepted everywhere (admin API, CLI, sign-up): long enough to matter, short enough to hash cheaply. */
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 200;

/**
 * argon2id with OWASP's minimum profile (19 MiB, 2 passes): about 30 ms here. Bun.password runs it off the
 * JavaScript thread; the parameters travel in the hash, so a later change of profile still verifies old hashes.
 */
const ARGON2 = { algorithm: "argon2id", memoryCost: 19_456, timeCost: 2 } as const;

/**
 * Hashing costs memory: at most 4 run at once, and at most 64 wait for their turn. A flood of sign-ins
 * from many addresses (the per-address throttle does not stop many addresses) gets 503 instead of exhausting memory.
 */
const signIns = "Too many sign-ins at once: retry in a few seconds.";
const hashing = new FairWorkQueue(
  { concurrency: 4, waitingPerSubject: 64, waiting: 64 },
  { subjectFull: () => signIns, full: signIns, subjectCode: "unavailable" },
);
const bounded = <T>(work: () => Promise<T>) => hashing.run("passwords", work);

export const hashPassword = (password: string) => bounded(() => Bun.password.hash(password, ARGON2));

let dummy: Promise<string> | undefined;

/** Password verifications begun by this process (each costs one argon2id): what the throttles in front of them bound. */
export const passwordVerifications = { count: 0 };

/** One verification in the queue; a hash Bun.password does not know is a mismatch, a full queue is its 503. */
const verified = (password: string, hash: string) =>
  bounded(async () => {
    passwordVerifications.count++;
    try {
      return await Bun.password.verify(password, hash);
    } catch {
      return false; // not a hash Bun.password knows
    }
  });

/**
 * Whether `password` matches `hash`. An account without a password (or no account: `hash` null) is verified against
 * a dummy hash all the same, so that the answer takes as long whether the account exists or not.
 */
export async function verifyPassword(password: string, hash: string | null): Promise<boolean> {
  if (hash === null) {
    dummy ??= Bun.password.hash("not the password of anyone", ARGON2);
    await verified(password, await dummy);
    return false;
  }
  return verified(password, hash);
}
