import { AppError } from "../errors.ts";

export interface ThrottleLimits {
  /** Units a key may spend in a burst before it must wait. */
  burst: number;
  /** Units a key earns back per minute. */
  perMinute: number;
}

/** 30 failures at once, then one every two seconds: guessing a 180-bit token stays hopeless, a typo costs nothing. */
export const defaultAuthFailureLimits: ThrottleLimits = { burst: 30, perMinute: 30 };

/** Kept at most; beyond it the keys that have waited longest are forgotten (they are the least throttled). */
const MAX_KEYS = 100_000;

/** A unit taken before the work: kept when the work counts (a failure, an account made), given back otherwise. */
export interface Reservation {
  /** Gives the unit back (idempotent): the work turned out not to count. */
  refund(): void;
}

/**
 * A token bucket per key (a client address, a login): the unit is taken *before* the work it guards, so that N
 * concurrent requests can never do more than the bucket holds, whatever their timing; the caller then settles,
 * keeping the unit (a failed authentication, an account created) or refunding it (a success, where only failures
 * count). A key with nothing left is refused with 429 and `Retry-After` before any work is done.
 * Kept in this process's memory: with N instances a key can spend at most N times the rate.
 */
export class FailedAuthThrottle {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly limits: ThrottleLimits,
    private readonly now: () => number = Date.now,
    /** The refusal's wording: `seconds` to wait. */
    private readonly refusal: (seconds: number) => string = (seconds) => `Too many failed authentications from your address: retry in ${seconds} s.`,
  ) {}

  /** Takes one unit for `key`, or refuses with 429 (nothing taken) while it has none left. Synchronous: no other request can interleave. */
  reserve(key: string): Reservation {
    const bucket = this.refilled(key) ?? { tokens: this.limits.burst, at: this.now() };
    if (bucket.tokens < 1) {
      const seconds = Math.max(1, Math.ceil(((1 - bucket.tokens) * 60) / this.limits.perMinute));
      throw new AppError("too_many_requests", this.refusal(seconds), undefined, { "retry-after": String(seconds) });
    }
    bucket.tokens -= 1;
    this.buckets.delete(key); // re-inserted last: the map's order is the order of last use
    this.buckets.set(key, bucket);
    if (this.buckets.size > MAX_KEYS) this.buckets.delete(this.buckets.keys().next().value!);
    let settled = false;
    return {
      refund: () => {
        if (settled) return;
        settled = true;
        const current = this.refilled(key);
        if (!current) return; // full again (or forgotten): nothing to give back
        current.tokens = Math.min(this.limits.burst, current.tokens + 1);
        if (current.tokens >= this.limits.burst) this.buckets.delete(key);
      },
    };
  }

  /** Runs `work` under a reserved unit; `counts(outcome)` says whether the unit is kept. A thrown error is passed to `countsError`. */
  async guard<T>(key: string, work: () => Promise<T> | T, countsError: (e: unknown) => boolean, counts: (result: T) => boolean = () => false): Promise<T> {
    const reservation = this.reserve(key);
    let result: T;
    try {
      result = await work();
    } catch (e) {
      if (!countsError(e)) reservation.refund();
      throw e;
    }
    if (!counts(result)) reservation.refund();
    return result;
  }

  private refilled(key: string) {
    const bucket = this.buckets.get(key);
    if (!bucket) return undefined;
    const now = this.now();
    bucket.tokens = Math.min(this.limits.burst, bucket.tokens + ((now - bucket.at) / 60_000) * this.limits.perMinute);
    bucket.at = now;
    if (bucket.tokens >= this.limits.burst) {
      this.buckets.delete(key);
      return undefined;
    }
    return bucket;
  }
}
