import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { sql } from "drizzle-orm";
import { respond } from "../../http/envelope.ts";
import { errorResponses, okResponse } from "../../http/responses.ts";
import { envelope } from "../../http/schemas.ts";
import type { AppEnv } from "../../http/types.ts";
import { AppError } from "../../errors.ts";
import { listStrategies } from "../../db/repositories/strategies.ts";
import { logFor } from "../../observability/log.ts";
import type { Storage } from "../../storage/index.ts";
import type { Deps } from "../../deps.ts";
import { lookupCacheFor } from "../../services/lookup-cache.ts";
import { readinessProbeName } from "../../services/reconcile.ts";

export const healthRoute = createRoute({
  method: "get",
  path: "/health",
  operationId: "getHealth",
  tags: ["Service"],
  summary: "Health check",
  description: "200 when the database answers, 503 otherwise. No credential.",
  security: [],
  responses: {
    ...okResponse(envelope(z.object({ database: z.literal("up") }), "HealthResponse"), "The service and its database are up"),
    ...errorResponses(503),
  },
});

const PROBE_TIMEOUT_MS = 5_000;

const StorageCheck = z
  .object({
    id: z.number().int().openapi({ example: 1 }),
    name: z.string().openapi({ example: "Local" }),
    driver: z.string().openapi({ example: "local" }),
    writable: z.literal(true),
  })
  .openapi("StorageCheck");

export const readinessRoute = createRoute({
  method: "get",
  path: "/health/ready",
  operationId: "getReadiness",
  tags: ["Service"],
  summary: "Readiness check",
  description:
    "200 when the database answers and the storage of every enabled strategy is writable: a small probe object is written and removed on each (at most 5 s per storage; one round per second at most, its answer shared by the requests of that second). " +
    "503 otherwise, with a message naming what failed (the database, or each strategy whose storage refused the probe). No credential. " +
    "Use it to take an instance out of a load balancer; `GET /health` (database only, no writes) for liveness.",
  security: [],
  responses: {
    ...okResponse(
      envelope(z.object({ database: z.literal("up"), storage: z.array(StorageCheck) }), "ReadinessResponse"),
      "The database answers and every enabled strategy's storage is writable",
    ),
    ...errorResponses(503),
  },
});

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
export type ProbeReason = (typeof PROBE_REASONS)[number];

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
export function probeReason(e: unknown): ProbeReason {
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

type Readiness = { ready: true; storage: z.infer<typeof StorageCheck>[] } | { ready: false; message: string };

export async function checkReadiness(deps: Deps): Promise<Readiness> {
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
    return { ready: true, storage: results.map(({ strategy }) => ({ id: strategy.id, name: strategy.name, driver: strategy.driver, writable: true as const })) };
  }
  for (const { strategy, failure } of failed) {
    logFor(deps).warn({ strategy_id: strategy.id, reason: failure!.detail }, "readiness: a storage is not writable");
  }
  const parts = failed.map(({ strategy, failure }) => `storage of strategy #${strategy.id} "${strategy.name}" (${strategy.driver}) is not writable: ${failure!.summary}`);
  return { ready: false, message: `Not ready: ${parts.join("; ")}.` };
}

export function register(app: OpenAPIHono<AppEnv>) {
  // one probe round at a time and at most one a second per instance, however often it is asked (the answer is
  // shared): a public address cannot be used to make the service write to its storage at will. A change to the
  // strategies (admin API) forgets the kept answer.
  app.openapi(readinessRoute, async (c) => {
    const deps = c.get("deps");
    const readiness = await lookupCacheFor(deps).remember("readiness", () => checkReadiness(deps));
    if (!readiness.ready) throw new AppError("unavailable", readiness.message);
    return respond(c, { database: "up" as const, storage: readiness.storage });
  });

  app.openapi(healthRoute, async (c) => {
    try {
      await c.get("deps").db.execute(sql`select 1`);
    } catch {
      throw new AppError("unavailable", "The database does not answer.");
    }
    return respond(c, { database: "up" as const });
  });
}
