import { AppError } from "../errors.ts";

export interface BodyGateLimits {
  /** Upload bodies one client address (an IPv6 /64) may be sending at once while their sender is unknown (no Authorization header). */
  perAddress: number;
  /** Upload bodies one known caller (an account, or a guest's address) may be sending at once on this instance: its share of the total. */
  perCaller: number;
  /** Upload bodies this process receives at once, from everyone. */
  total: number;
}

export const defaultBodyGateLimits: BodyGateLimits = { perAddress: 4, perCaller: 16, total: 64 };

/**
 * Bounds the upload bodies being received at once, so that a few sources cannot hold every connection and
 * buffer of the process: in total; per client address while the sender is unknown (guests, form tokens); and
 * per caller once it is known, so that no caller holds more than its share of the total whatever its group's
 * concurrency limit (which is taken as well, in the database, before the body is read). Beyond a bound the
 * upload is refused before more of its body is read, each with `Retry-After`: 429 for an address whose sender is not
 * known yet, 400 for a known caller (a failed upload check, as the contract has it), 503 for the process's total.
 * A slot is held only while the body arrives.
 */
export class UploadBodyGate {
  private readonly held = new Map<string, number>();
  private total = 0;

  constructor(readonly limits: BodyGateLimits) {}

  /** A body from a sender not known yet: one of the process's slots and one of its address's. */
  enterStranger(addressBucket: string): () => void {
    const refusal = `Too many uploads in progress from your address: at most ${this.limits.perAddress} at a time.`;
    return this.enter(`address:${addressBucket}`, this.limits.perAddress, () => refused("too_many_requests", refusal), true);
  }

  /** A body from a caller known from its header: one of the process's slots and one of the caller's. */
  enterCaller(subject: string): () => void {
    return this.enter(`caller:${subject}`, this.limits.perCaller, () => this.callerRefusal(), true);
  }

  /** A stranger that has just become known (a form token, a guest): one of the caller's slots, the process's is already held. */
  holdCaller(subject: string): () => void {
    return this.enter(`caller:${subject}`, this.limits.perCaller, () => this.callerRefusal(), false);
  }

  private callerRefusal() {
    return refused("bad_request", `Too many of your uploads are in progress on this server: at most ${this.limits.perCaller} at a time.`);
  }

  private enter(key: string, cap: number, refusal: () => AppError, counted: boolean): () => void {
    const held = this.held.get(key) ?? 0;
    if (held >= cap) throw refusal();
    if (counted && this.total >= this.limits.total) throw refused("unavailable", "The server is receiving too many uploads: retry in a few seconds.");
    this.held.set(key, held + 1);
    if (counted) this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (counted) this.total--;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
    };
  }
}

const refused = (code: "too_many_requests" | "bad_request" | "unavailable", message: string) => new AppError(code, message, undefined, { "retry-after": "5" });
