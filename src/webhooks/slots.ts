/** This instance's send slots: how many sends run at once per endpoint, per account and for all users (fairness). */

export interface Attempted {
  id: number;
  endpoint_id: number;
  owner_id: number | null;
  /** The owner's group has webhook_allow_internal: WEBHOOK_ALLOW applies to this user endpoint too. */
  allow_internal: boolean;
  message_id: string;
  seq: string;
  subject: string;
  body: string;
  status: string;
  attempts: number;
  url: string;
  secret_sealed: string;
  enabled: boolean;
  failing_since: Date | string | null;
}

/** Sends in flight from this instance at most, to one account's endpoints together (each endpoint: perEndpoint). */
export const PER_ACCOUNT = 8;
/** Sends in flight from this instance at most, to all users' endpoints together; site-wide ones are not counted. */
export const USERS_IN_FLIGHT = 256;
/** Deliveries waiting here for a slot, at most: per endpoint, and in all (beyond, a job is put back in the queue). */
const QUEUED_PER_ENDPOINT = 512;
const QUEUED_MAX = 4_096;
/** A delivery that waited here longer than this is read again before it is sent (its endpoint may have changed). */
export const FRESH_MS = 5_000;
/** A lease outlives the attempt's deadline by this much; the instance holding it renews it (sweepLeases). */
export const LEASE_GRACE_MS = 15_000;

export type Limits = { perEndpoint: number; perAccount: number; users: number };
interface Queued {
  row: Attempted;
  since: number;
}

/**
 * This instance's sends (docs/decisions/webhook-fairness.md). A send does not hold a queue worker: the worker admits
 * it, starts it and is free again, so a hanging receiver holds only its own slots. Admission is bounded per endpoint,
 * per account, and for all users' endpoints together; site-wide endpoints are bounded per endpoint only, so no
 * user's endpoint can delay them. A delivery that is not admitted does not hold a worker either: it waits here, in its
 * endpoint's line (its job ended, its lease renewed by this instance), and a freed slot starts the first one it admits.
 */
class Sends {
  readonly endpoints = new Map<number, number>();
  readonly accounts = new Map<number, number>();
  users = 0;
  /** Deliveries being sent, so that one queued again meanwhile is not sent twice at once from here. */
  readonly deliveries = new Set<number>();
  /** Deliveries waiting for a slot, per endpoint in arrival order. */
  readonly lines = new Map<number, Queued[]>();
  readonly waiting = new Set<number>();
  readonly running = new Set<Promise<unknown>>();
  stopping = false;

  admits(endpointId: number, ownerId: number | null, limits: Limits): boolean {
    if ((this.endpoints.get(endpointId) ?? 0) >= limits.perEndpoint) return false;
    if (ownerId === null) return true;
    return (this.accounts.get(ownerId) ?? 0) < limits.perAccount && this.users < limits.users;
  }

  /** Lines a delivery up here; false when the lines are full (its job is then put back in the queue instead). */
  enqueue(row: Attempted): boolean {
    const line = this.lines.get(row.endpoint_id) ?? [];
    if (this.stopping || this.waiting.size >= QUEUED_MAX || line.length >= QUEUED_PER_ENDPOINT) return false;
    line.push({ row, since: performance.now() });
    this.lines.set(row.endpoint_id, line);
    this.waiting.add(row.id);
    return true;
  }

  take(deliveryId: number, endpointId: number, ownerId: number | null) {
    this.deliveries.add(deliveryId);
    this.endpoints.set(endpointId, (this.endpoints.get(endpointId) ?? 0) + 1);
    if (ownerId !== null) {
      this.accounts.set(ownerId, (this.accounts.get(ownerId) ?? 0) + 1);
      this.users++;
    }
  }

  release(deliveryId: number, endpointId: number, ownerId: number | null) {
    this.deliveries.delete(deliveryId);
    const n = (this.endpoints.get(endpointId) ?? 1) - 1;
    if (n > 0) this.endpoints.set(endpointId, n);
    else this.endpoints.delete(endpointId);
    if (ownerId !== null) {
      const a = (this.accounts.get(ownerId) ?? 1) - 1;
      if (a > 0) this.accounts.set(ownerId, a);
      else this.accounts.delete(ownerId);
      this.users--;
    }
  }

  /** The next waiting delivery the slots admit: the freed endpoint's first, else the first of another endpoint's line. */
  next(endpointId: number, limits: Limits): Queued | null {
    if (this.stopping) return null;
    const from = (id: number) => {
      const line = this.lines.get(id);
      const head = line?.[0];
      if (!line || !head || !this.admits(id, head.row.owner_id, limits)) return null;
      line.shift();
      if (line.length === 0) this.lines.delete(id);
      this.waiting.delete(head.row.id);
      return head;
    };
    const own = from(endpointId);
    if (own) return own;
    for (const id of this.lines.keys()) {
      const other = id === endpointId ? null : from(id);
      if (other) return other;
    }
    return null;
  }
}

export const sends = new Sends();

/**
 * Stops starting sends, waits for those in flight to end and be recorded (the queue's stop; each is bounded by its
 * timeout), and forgets the deliveries waiting here: their leases bring them back.
 */
export async function drainSends(): Promise<void> {
  sends.stopping = true;
  try {
    while (sends.running.size > 0) await Promise.allSettled([...sends.running]);
  } finally {
    sends.lines.clear();
    sends.waiting.clear();
    sends.stopping = false;
  }
}
