import { listUsableStrategies } from "../db/repositories/strategies.ts";
import type { Deps } from "../deps.ts";
import { servicesOf } from "./index.ts";

/** How stale a kept lookup may be: a revoked token, a disabled account or group, the API switch, a strategy's settings take effect on every instance within this bound. */
export const LOOKUP_CACHE_MS = 1000;
const MAX_ENTRIES = 10_000;

/**
 * The lookups every call needs (the settings row, a token with its owner and group, the guest group, a group's
 * usable strategies), kept for at most LOOKUP_CACHE_MS so that a steady client costs no database round trip to
 * authenticate and choose a strategy. Whatever is decided from them that must be exact (quota, capacity) is
 * re-checked atomically where it is charged. Concurrent misses of one key share one lookup. This instance's own administration
 * writes clear it at once; other instances see them within the bound.
 */
export class LookupCache {
  private readonly entries = new Map<string, { at: number; value: Promise<unknown> }>();

  constructor(private readonly now: () => number = performance.now.bind(performance)) {}

  remember<T>(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit && this.now() - hit.at < LOOKUP_CACHE_MS) return hit.value as Promise<T>;
    const value = load();
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { at: this.now(), value });
    // a failed lookup is not kept
    value.catch(() => this.entries.get(key)?.value === value && this.entries.delete(key));
    return value;
  }

  clear() {
    this.entries.clear();
  }

  /** Drops the kept lookups whose key starts with `prefix`. */
  forget(prefix: string) {
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.entries.delete(key);
  }
}

/** A group's usable strategies in group order, kept like the other lookups (a delete forgets them, so freed quota counts at once). */
export const usableStrategiesOf = (deps: Deps, groupId: number) =>
  servicesOf(deps).lookups.remember(`strategies:${groupId}`, () => listUsableStrategies(deps.db, groupId));
