import type { Deps } from "../deps.ts";

/**
 * One value per set of dependencies — per app, so that two apps in one process (tests, a second instance) keep
 * separate caches — made on first use.
 */
export function perDeps<T>(make: (deps: Deps) => T): (deps: Deps) => T {
  const values = new WeakMap<Deps, T>();
  return (deps) => {
    let value = values.get(deps);
    if (value === undefined) values.set(deps, (value = make(deps)));
    return value;
  };
}
