/**
 * Former addresses of imported images: a strategy's `legacy_url` (a Lsky Pro strategy's public prefix, say
 * `https://img.example.com/uploads`) names where its objects were served before. A GET or HEAD of this server at
 * that prefix's path plus an object's path answers 301 to the object's address now. The same path under `/i/` needs
 * none: it is served as it is. Only what the app found nowhere else comes here (its not-found handler).
 */
import { findImageByStoredPath } from "../../db/repositories/images.ts";
import { listStrategies } from "../../db/repositories/strategies.ts";
import type { Deps } from "../../deps.ts";
import { servicesOf } from "../index.ts";

interface LegacyPrefix {
  /** The prefix's path, without its trailing slash ("" for a whole host). */
  path: string;
  strategyId: number;
}

const storedPathShape = /^[A-Za-z0-9_./-]{1,300}$/;

/** The strategies' legacy prefixes, longest first, kept like every other lookup (LOOKUP_CACHE_MS). */
function legacyPrefixes(deps: Deps): Promise<LegacyPrefix[]> {
  return servicesOf(deps).lookups.remember("legacy-prefixes", async () => {
    const out: LegacyPrefix[] = [];
    for (const s of await listStrategies(deps.db)) {
      const legacy = s.config.legacy_url;
      if (typeof legacy !== "string") continue;
      try {
        out.push({ path: new URL(legacy).pathname.replace(/\/+$/, ""), strategyId: s.id });
      } catch {
        // not a URL: the admin API refuses one, nothing to serve
      }
    }
    return out.sort((a, b) => b.path.length - a.path.length);
  });
}

/** Where the object once served at `pathname` (a request's raw path) is now, or null when no imported object was there. */
export async function legacyLocation(deps: Deps, pathname: string): Promise<string | null> {
  const prefixes = await legacyPrefixes(deps);
  if (prefixes.length === 0) return null;
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  for (const prefix of prefixes) {
    if (!decoded.startsWith(`${prefix.path}/`)) continue;
    const path = decoded.slice(prefix.path.length + 1);
    if (!storedPathShape.test(path) || path.split("/").includes("..")) continue;
    const found = await findImageByStoredPath(deps.db, path);
    if (!found || found.strategy.id !== prefix.strategyId || found.image.path !== path) continue;
    if (found.image.expiredAt && found.image.expiredAt.getTime() <= deps.clock().getTime()) continue;
    return deps.storage.for(found.strategy).url(path);
  }
  return null;
}
