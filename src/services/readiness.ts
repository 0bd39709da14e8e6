/**
 * Liveness and readiness: whether the database answers, and whether the storage of every enabled strategy takes a
 * write (a small probe object, written and removed). GET /health, GET /health/ready, the admin overview and the
 * strategy's Test button all ask here.
 */
import { sql } from "drizzle-orm";
import { listStrategies } from "../db/repositories/strategies.ts";
import type { Deps } from "../deps.ts";
import { logFor } from "../observability/log.ts";
import type { Storage } from "../storage/index.ts";
import type { LookupCache } from "./lookup-cache.ts";
import { readinessProbeName } from "./reconcile/index.ts";

const PROBE_TIMEOUT_MS = 5_000;

/**
 * What an answer may say of a storage that refused the probe: one of these, never the storage's own words. A remote
 * endpoint's message and error code are its own text (anything its operator, or whoever answers at that address,
 * wrote); they reach the log only.
 */
export const PROBE_REASONS = [
  "no answer within 5 s",
  "unusable configuration",
  "permission denied",
  "path not found",
  "path is not a directory",
  "disk full",
  "read-only file system",
  "endpoint unreachable",
  "endpoint name does not resolve",
  "credentials refused",
  "bucket not found",
  "access denied",
  "endpoint refused the write",
  "write failed",
] as const;
type ProbeReason = (typeof PROBE_REASONS)[number];

export interface ProbeFailure {
  /** Said in the answer (the details stay in the log: paths, endpoints, the remote's text). */
  summary: ProbeReason;
  detail: string;
}

const BY_CODE: Record<string, ProbeReason> = {
  EACCES: "permission denied",
  EPERM: "permission denied",
  ENOENT: "path not found",
  ENOTDIR: "path is not a directory",
  EISDIR: "path is not a directory",
  ENOSPC: "disk full",
  EDQUOT: "disk full",
  EROFS: "read-only file system",
  ConnectionRefused: "endpoint unreachable",
  ECONNREFUSED: "endpoint unreachable",
  ECONNRESET: "endpoint unreachable",
  FailedToOpenSocket: "endpoint unreachable",
  ETIMEDOUT: "endpoint unreachable",
  DNSResolveFailed: "endpoint name does not resolve",
  ENOTFOUND: "endpoint name does not resolve",
  InvalidAccessKeyId: "credentials refused",
  SignatureDoesNotMatch: "credentials refused",
  ExpiredToken: "credentials refused",
  NoSuchBucket: "bucket not found",
  AccessDenied: "access denied",
  AllAccessDisabled: "access denied",
};

/** The fixed reason for a failed write: known error codes by name, any other error of a remote endpoint as such. */
function probeReason(e: unknown): ProbeReason {
  const err = (e instanceof Error && e.cause !== undefined ? e.cause : e) as { code?: unknown; name?: unknown } | null;
  const code = typeof err?.code === "string" ? err.code : "";
  if (Object.hasOwn(BY_CODE, code)) return BY_CODE[code]!;
  return err?.name === "S3Error" ? "endpoint refused the write" : "write failed";
}

/** Writes and removes a probe object; resolves with what failed, or null. */
export async function probe(storage: Storage): Promise<ProbeFailure | null> {
  const path = readinessProbeName();
  let timer: Timer | undefined;
  const timeout = new Promise<ProbeFailure>((resolve) => {
    const summary = "no answer within 5 s";
    timer = setTimeout(() => resolve({ summary, detail: `no answer within ${PROBE_TIMEOUT_MS} ms` }), PROBE_TIMEOUT_MS);
  });
  const attempt = (async () => {
    try {
      await storage.put(path, new TextEncoder().encode("readiness probe\n"), "text/plain");
      await storage.delete(path);
      return null;
    } catch (e) {
      const err = (e instanceof Error && e.cause !== undefined ? e.cause : e) as { code?: unknown; message?: unknown };
      return { summary: probeReason(e), detail: `${String(err?.code ?? "")} ${String(err?.message ?? e)}`.trim() };
    }
  })();
  try {
    return await Promise.race([attempt, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A storage that took the probe write. */
export interface StorageCheck {
  id: number;
  name: string;
  driver: string;
  writable: true;
}

export type Readiness = { ready: true; storage: StorageCheck[] } | { ready: false; message: string };

/** One probe round: the database, then every enabled strategy's storage at once. */
async function checkReadiness(deps: Deps): Promise<Readiness> {
  let strategies;
  try {
    strategies = (await listStrategies(deps.db)).filter((s) => s.enabled);
  } catch {
    return { ready: false, message: "Not ready: the database does not answer." };
  }
  const results = await Promise.all(
    strategies.map(async (s) => {
      let failure: ProbeFailure | null;
      try {
        failure = await probe(deps.storage.for(s));
      } catch (e) {
        failure = { summary: "unusable configuration", detail: (e as Error).message || String(e) };
      }
      return { strategy: s, failure };
    }),
  );
  const failed = results.filter((r) => r.failure !== null);
  if (failed.length === 0) {
    return {
      ready: true,
      storage: results.map(({ strategy }) => ({ id: strategy.id, name: strategy.name, driver: strategy.driver, writable: true as const })),
    };
  }
  for (const { strategy, failure } of failed) {
    logFor(deps).warn({ strategy_id: strategy.id, reason: failure!.detail }, "readiness: a storage is not writable");
  }
  const parts = failed.map(
    ({ strategy, failure }) => `storage of strategy #${strategy.id} "${strategy.name}" (${strategy.driver}) is not writable: ${failure!.summary}`,
  );
  return { ready: false, message: `Not ready: ${parts.join("; ")}.` };
}

/** Whether the database answers a trivial query (liveness: no writes). */
export async function databaseAnswers(deps: Deps): Promise<boolean> {
  try {
    await deps.db.execute(sql`select 1`);
    return true;
  } catch {
    return false;
  }
}

/**
 * The readiness of this instance as its callers see it: one probe round at a time and at most one a second, however
 * often it is asked (the answer is shared): a public address cannot be used to make the service write to its storage
 * at will. A change to the strategies (the admin API clears the lookup cache) forgets the kept answer.
 */
export function readinessService(deps: Deps, lookups: LookupCache) {
  return {
    check: (): Promise<Readiness> => lookups.remember("readiness", () => checkReadiness(deps)),
    databaseAnswers: () => databaseAnswers(deps),
  };
}
export type ReadinessService = ReturnType<typeof readinessService>;
