import { AppError } from "../errors.ts";

export interface ThrottleLimits {
  /** Failures an address may make in a burst before it must wait. */
  burst: number;
  /** Failures an address earns back per minute. */
  perMinute: number;
}

/** 30 failures at once, then one every two seconds: guessing a 180-bit token stays hopeless, a typo costs nothing. */
export const defaultAuthFailureLimits: ThrottleLimits = { burst: 30, perMinute: 30 };

/** Kept at most; beyond it the addresses that have waited longest are forgotten (they are the least throttled). */
const MAX_ADDRESSES = 100_000;

/**
 * Failed authentications per client address, as a token bucket that only failures drain: an address
 * that keeps guessing tokens is answered 429 (before its credential is looked at) until its bucket
 * refills. Successful calls neither drain it nor wait. Kept in this process's memory: with N instances
 * an address can fail at most N times the rate.
 */
export class FailedAuthThrottle {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly limits: ThrottleLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Refuses with 429 and `Retry-After` while the address has no failures left. */
  check(address: string) {
    const bucket = this.refilled(address);
    if (bucket && bucket.tokens < 1) {
      const seconds = Math.ceil(((1 - bucket.tokens) * 60) / this.limits.perMinute);
      throw new AppError("too_many_requests", `Too many failed authentications from your address: retry in ${seconds} s.`, undefined, {
        "retry-after": String(seconds),
      });
    }
  }

  recordFailure(address: string) {
    const bucket = this.refilled(address) ?? { tokens: this.limits.burst, at: this.now() };
    bucket.tokens -= 1;
    this.buckets.delete(address); // re-inserted last: the map's order is the order of last failure
    this.buckets.set(address, bucket);
    if (this.buckets.size > MAX_ADDRESSES) this.buckets.delete(this.buckets.keys().next().value!);
  }

  private refilled(address: string) {
    const bucket = this.buckets.get(address);
    if (!bucket) return undefined;
    const now = this.now();
    bucket.tokens = Math.min(this.limits.burst, bucket.tokens + ((now - bucket.at) / 60_000) * this.limits.perMinute);
    bucket.at = now;
    if (bucket.tokens >= this.limits.burst) {
      this.buckets.delete(address);
      return undefined;
    }
    return bucket;
  }
}
