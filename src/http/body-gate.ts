import { AppError } from "../errors.ts";

export interface BodyGateLimits {
  /** Upload bodies one client address may be sending at once while their sender is unknown (no Authorization header). */
  perAddress: number;
  /** Upload bodies this process receives at once, from everyone. */
  total: number;
}

export const defaultBodyGateLimits: BodyGateLimits = { perAddress: 4, total: 64 };

/**
 * Bounds the upload bodies being received at once, so that a few sources cannot hold every connection and
 * buffer of the process: in total, and per client address for senders not known from a header (guests, form
 * tokens) — a caller known from its token is bounded by its group's own concurrency limit instead. Beyond a
 * bound the upload is refused with 429 before its body is read. A slot is held only while the body arrives.
 */
export class UploadBodyGate {
  private readonly perAddress = new Map<string, number>();
  private total = 0;

  constructor(private readonly limits: BodyGateLimits) {}

  /** Takes a slot (and one of the address's, for a stranger); returns its release (idempotent). */
  enter(address: string, stranger: boolean): () => void {
    if (!stranger) address = "";
    const held = this.perAddress.get(address) ?? 0;
    if (stranger && held >= this.limits.perAddress) {
      throw tooMany(`Too many uploads in progress from your address: at most ${this.limits.perAddress} at a time.`);
    }
    if (this.total >= this.limits.total) throw tooMany("The server is receiving too many uploads: retry in a few seconds.");
    this.perAddress.set(address, held + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.perAddress.get(address) ?? 1) - 1;
      if (left > 0) this.perAddress.set(address, left);
      else this.perAddress.delete(address);
    };
  }
}

const tooMany = (message: string) => new AppError("too_many_requests", message, undefined, { "retry-after": "5" });
