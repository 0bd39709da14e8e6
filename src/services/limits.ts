import { and, eq, gt, lt, sql } from "drizzle-orm";
import type { Db, Executor } from "../db/client.ts";
import type { Group } from "../db/repositories/groups.ts";
import type { FrequencyLimits } from "../db/repositories/images.ts";
import { uploadLeases, uploadLog } from "../db/schema.ts";
import { badRequest } from "../errors.ts";

const windows = [
  ["minute", 60, "uploadsPerMinute"],
  ["hour", 3600, "uploadsPerHour"],
  ["day", 86_400, "uploadsPerDay"],
  ["week", 7 * 86_400, "uploadsPerWeek"],
  ["month", 30 * 86_400, "uploadsPerMonth"],
] as const;

const LOG_RETENTION_SECONDS = 31 * 86_400;

const hasFrequencyLimit = (g: Group) => windows.some(([, , field]) => g[field] !== null);

/**
 * Rolling windows: every accepted upload of the subject in the last minute/hour/day/7 days/30 days
 * counts, deleted or not. This early check refuses before anything is stored; the record step
 * (record_upload) checks again under a lock of the subject, so concurrent uploads cannot both take
 * the last free slot.
 */
export async function checkFrequency(db: Executor, group: Group, subject: string, now: Date) {
  if (!hasFrequencyLimit(group)) return;
  const longest = Math.max(...windows.filter(([, , f]) => group[f] !== null).map(([, s]) => s));
  const t = (seconds: number) => new Date(now.getTime() - seconds * 1000);
  // raw SQL parameters: postgres.js under drizzle does not serialise Date objects there
  const since = (seconds: number) => sql`${t(seconds).toISOString()}::timestamptz`;
  const [counts] = await db
    .select({
      minute: sql<number>`(count(*) filter (where ${uploadLog.createdAt} > ${since(60)}))::int`,
      hour: sql<number>`(count(*) filter (where ${uploadLog.createdAt} > ${since(3600)}))::int`,
      day: sql<number>`(count(*) filter (where ${uploadLog.createdAt} > ${since(86_400)}))::int`,
      week: sql<number>`(count(*) filter (where ${uploadLog.createdAt} > ${since(7 * 86_400)}))::int`,
      month: sql<number>`count(*)::int`,
    })
    .from(uploadLog)
    .where(and(eq(uploadLog.subject, subject), gt(uploadLog.createdAt, t(longest))));
  for (const [name, , field] of windows) {
    const limit = group[field];
    if (limit !== null && counts![name] >= limit) {
      throw badRequest(`Upload frequency limit reached: at most ${limit} uploads per ${name}.`);
    }
  }
}

/** The group's windows as the record step re-checks them. */
export const frequencyLimitsOf = (g: Group): FrequencyLimits => ({
  perMinute: g.uploadsPerMinute,
  perHour: g.uploadsPerHour,
  perDay: g.uploadsPerDay,
  perWeek: g.uploadsPerWeek,
  perMonth: g.uploadsPerMonth,
});

/** How long a slot outlives its holder when the holder stops renewing it (a crashed or frozen instance). */
export const LEASE_SECONDS = 15;
const RENEW_EVERY_MS = 5_000;

/**
 * Takes one of the group's concurrent-upload slots for the subject, or refuses with 400. Slots live in
 * the database so the limit holds across instances. The live upload renews its lease every 5 s; a slot
 * of a process that died lapses within LEASE_SECONDS. Returns the release function, which the upload
 * calls however it ends.
 */
export async function acquireUploadSlot(db: Db, group: Group, subject: string, clock: () => Date): Promise<() => Promise<void>> {
  const limit = group.concurrentUploads;
  if (limit === null) return async () => {};
  const leaseEnd = () => new Date(clock().getTime() + LEASE_SECONDS * 1000);
  const leaseId = await db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`lease:${subject}`}))`);
    const [row] = await tx
      .select({ n: sql<number>`count(*)::int` })
      .from(uploadLeases)
      .where(and(eq(uploadLeases.subject, subject), gt(uploadLeases.expiresAt, clock())));
    if (row!.n >= limit) return null;
    const [lease] = await tx.insert(uploadLeases).values({ subject, expiresAt: leaseEnd() }).returning({ id: uploadLeases.id });
    return lease!.id;
  });
  if (leaseId === null) throw badRequest(`Too many concurrent uploads: at most ${limit} at a time.`);
  const renewal = setInterval(() => {
    db.update(uploadLeases)
      .set({ expiresAt: leaseEnd() })
      .where(eq(uploadLeases.id, leaseId))
      .catch(() => {}); // a missed renewal only shortens the lease; the release below still runs
  }, RENEW_EVERY_MS);
  return async () => {
    clearInterval(renewal);
    // if the database fails here, the slot lapses within LEASE_SECONDS; the upload's own answer stands
    await db
      .delete(uploadLeases)
      .where(eq(uploadLeases.id, leaseId))
      .catch(() => {});
  };
}

/** Housekeeping for the sweeper: old log rows and lapsed leases. */
export async function pruneLimits(db: Executor, now: Date) {
  await db.delete(uploadLog).where(lt(uploadLog.createdAt, new Date(now.getTime() - LOG_RETENTION_SECONDS * 1000)));
  await db.delete(uploadLeases).where(lt(uploadLeases.expiresAt, now));
}
