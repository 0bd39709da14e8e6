/**
 * The service's Prometheus metrics (prom-client), one registry per running app, served at GET /metrics.
 * Names follow Prometheus conventions: `imagehost_` prefix, base units (seconds, bytes), `_total` for counters.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** Why an upload was refused: the steps of services/upload/ that can say no, plus the gates before it. */
const REFUSAL_REASONS = [
  "unauthenticated",
  "format",
  "too_large",
  "dimensions",
  "capacity",
  "frequency",
  "concurrency",
  "storage_permission",
  "review",
  "bad_request",
  "busy",
  "timeout",
  "storage_failure",
  "other",
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

const refusals = new WeakMap<object, RefusalReason>();

/** Marks an error that refuses an upload with its reason (returns it, to be thrown). */
export function tagRefusal<E>(error: E, reason: RefusalReason): E {
  if (typeof error === "object" && error !== null) refusals.set(error, reason);
  return error;
}

/** The reason an upload was refused: the one its error was tagged with, or one read from the answer's status. */
export function refusalReason(error: unknown, status: number): RefusalReason {
  const tagged = typeof error === "object" && error !== null ? refusals.get(error) : undefined;
  if (tagged) return tagged;
  if (status === 401 || status === 403) return "unauthenticated";
  if (status === 408) return "timeout";
  if (status === 413) return "too_large";
  if (status === 429 || status === 503) return "busy";
  if (status === 400 || status === 422) return "bad_request";
  return "other";
}

/** Connections of this instance's pool: read from the database at scrape time. */
export type PoolReader = () => Promise<{ open: number; inUse: number; max: number }>;

export class Metrics {
  readonly registry = new Registry();

  readonly requests = new Counter({
    name: "imagehost_http_requests_total",
    help: "HTTP requests answered, by route pattern, method and status",
    labelNames: ["route", "method", "status"] as const,
    registers: [this.registry],
  });
  readonly requestDuration = new Histogram({
    name: "imagehost_http_request_duration_seconds",
    help: "Time from a request's arrival to its answer's headers, by route pattern",
    labelNames: ["route", "method"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly uploadsAccepted = new Counter({
    name: "imagehost_uploads_accepted_total",
    help: "Uploads stored and recorded",
    labelNames: ["caller"] as const,
    registers: [this.registry],
  });
  readonly uploadsRefused = new Counter({
    name: "imagehost_uploads_refused_total",
    help: "Uploads refused, by reason",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly storedBytes = new Counter({
    name: "imagehost_stored_bytes_total",
    help: "Bytes written to storage by accepted uploads (originals and thumbnails)",
    registers: [this.registry],
  });
  readonly decodeDuration = new Histogram({
    name: "imagehost_image_decode_duration_seconds",
    help: "Time spent decoding images: reading their facts (inspect) and making thumbnails",
    labelNames: ["step"] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly sweeperRemoved = new Counter({
    name: "imagehost_sweeper_removed_images_total",
    help: "Expired images removed by the sweeper",
    registers: [this.registry],
  });
  readonly reconcilerOrphans = new Counter({
    name: "imagehost_reconciler_orphans_found_total",
    help: "Stored objects without a record found by the reconciler",
    registers: [this.registry],
  });

  private processMetrics = false;

  constructor(options: { pool?: PoolReader } = {}) {
    for (const reason of REFUSAL_REASONS) this.uploadsRefused.inc({ reason }, 0);
    const read = options.pool;
    if (read) {
      new Gauge({
        name: "imagehost_db_pool_connections",
        help: "Connections of this instance's database pool: open, in_use (running a statement, the scrape's own not counted) and max",
        labelNames: ["state"] as const,
        registers: [this.registry],
        async collect() {
          this.reset();
          try {
            const pool = await read();
            this.set({ state: "open" }, pool.open);
            this.set({ state: "in_use" }, pool.inUse);
            this.set({ state: "max" }, pool.max);
          } catch {
            // the database does not answer: no figure rather than a wrong one
          }
        },
      });
    }
  }

  /** Adds the process's metrics (CPU, memory, event loop lag, handles) under their usual names; once, on first scrape. */
  enableProcessMetrics() {
    if (this.processMetrics) return;
    this.processMetrics = true;
    collectDefaultMetrics({ register: this.registry });
  }

  /** Times `fn` into the decode histogram. */
  async timeDecode<T>(step: "inspect" | "thumbnail", fn: () => Promise<T>): Promise<T> {
    const end = this.decodeDuration.startTimer({ step });
    try {
      return await fn();
    } finally {
      end();
    }
  }
}
