import type { Deps } from "../deps.ts";

/** How stale an authentication fact may be: a revoked token, a disabled account or group, the API switch take effect on every instance within this bound. */
export const AUTH_CACHE_MS = 1000;
const MAX_ENTRIES = 10_000;

/**
 * The lookups every authenticated call needs (the settings row, a token with its owner and group, the guest
 * group and its strategies), kept for at most AUTH_CACHE_MS so that a steady client costs no database round
 * trip to authenticate. Concurrent misses of one key share one lookup. This instance's own administration
 * writes clear it at once; other instances see them within the bound.
 */
export class AuthCache {
  private readonly entries = new Map<string, { at: number; value: Promise<unknown> }>();

  constructor(private readonly now: () => number = performance.now.bind(performance)) {}

  remember<T>(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit && this.now() - hit.at < AUTH_CACHE_MS) return hit.value as Promise<T>;
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
}

const caches = new WeakMap<Deps, AuthCache>();
export const authCacheFor = (deps: Deps) => caches.get(deps) ?? caches.set(deps, new AuthCache()).get(deps)!;
