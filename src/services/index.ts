/**
 * The composition root of the services: everything an app keeps for its lifetime (caches, counters, the variant
 * maker, the object server, the readiness probe, the metrics), built once from `Deps` by buildServices. createApp
 * puts the result in every request's context (`c.get("services")`); server.ts hands its object server to Bun's own
 * router. Two apps in one process (tests, a second instance) have two sets.
 *
 * One WeakMap stays, here and only here: a service function deep in a call chain (a delete forgetting the kept
 * strategies, the sweeper counting what it removed) receives `deps` alone, and servicesOf(deps) finds the set built
 * for it rather than threading a second argument through every signature. A set is built on first use when a caller
 * runs without an app (the CLI's offline commands, a test calling a service directly). See docs/architecture.md.
 */
import type { Deps } from "../deps.ts";
import { Metrics } from "../observability/metrics.ts";
import type { Job, LastRun } from "./last-runs.ts";
import { LookupCache } from "./lookup-cache.ts";
import { MailOutbox } from "./mail/outbox.ts";
import { type ReadinessService, readinessService } from "./readiness.ts";
import { ObjectServer } from "./serving/object-server.ts";
import { Variants } from "./variants/maker.ts";

export interface Services {
  /** Prometheus metrics (GET /metrics). */
  metrics: Metrics;
  /** The lookups every call needs, kept for a second (settings, tokens, groups' strategies, readiness). */
  lookups: LookupCache;
  /** Makes variants on demand and in the background, within the cold budget. */
  variants: Variants;
  /** What /i/<path> answers (services/serving/). */
  objects: ObjectServer;
  /** GET /health and /health/ready, the admin overview. */
  readiness: ReadinessService;
  /** The last run of each background job on this instance (the admin overview). */
  lastRuns: Map<Job, LastRun>;
  /** When this instance last wrote each token's use (services/tokens.ts noteTokenUse). */
  tokenUses: Map<number, number>;
  /** Mail sent after the answer (services/mail/outbox.ts). */
  mail: MailOutbox;
}

const built = new WeakMap<Deps, Services>();

/** The services of an app, built once per set of dependencies. */
export function buildServices(deps: Deps): Services {
  const existing = built.get(deps);
  if (existing) return existing;
  const lookups = new LookupCache();
  const variants = new Variants(deps);
  const services: Services = {
    metrics: new Metrics({ pool: deps.pool }),
    lookups,
    variants,
    objects: new ObjectServer(deps, variants),
    readiness: readinessService(deps, lookups),
    lastRuns: new Map(),
    tokenUses: new Map(),
    mail: new MailOutbox(deps),
  };
  built.set(deps, services);
  return services;
}

/** The services built for `deps` (built now if nothing has yet). */
export const servicesOf = buildServices;
