import { and, asc, eq, gt, isNull, sql } from "drizzle-orm";
import type { Deps } from "../deps.ts";
import { getGroup } from "../db/repositories/groups.ts";
import { images, strategies, users } from "../db/schema.ts";
import { notFound } from "../errors.ts";
import { type MetadataPolicy, MetadataRefused } from "../images/metadata/policy.ts";
import { decoders } from "./work-queue.ts";
import { logFor } from "../observability/log.ts";

/**
 * `images strip-metadata`: applies a group's metadata policy to the images it already has, one batch
 * at a time in id order (the caller resumes after the last id). Each image keeps its address: the object is replaced
 * at its own path through the storage interface (a local write is a temporary file renamed into place; an S3 put
 * replaces the object whole), inside the transaction that holds the image's row and updates its size and hashes and
 * the account's and strategy's used space, so a failed write changes nothing. A commit lost after the write leaves
 * stored bytes the record does not describe: the next run sees it (the hashes differ) and updates the record.
 */

export const STRIP_BATCH_MAX = 500;

interface StripItem {
  id: number;
  key: string;
  path: string;
  action: "changed" | "skipped";
  /** Why it was skipped, or what else happened; null for a plain change. */
  reason: string | null;
  removed: string[];
  sizeBefore: number;
  sizeAfter: number;
}

export interface StripBatch {
  groupId: number;
  policy: MetadataPolicy;
  dryRun: boolean;
  items: StripItem[];
  /** The id to pass as `after_id` for the next batch; null when this batch reached the end. */
  nextAfterId: number | null;
}

const md5 = (b: Uint8Array) => new Bun.CryptoHasher("md5").update(b).digest("hex");
const sha1 = (b: Uint8Array) => new Bun.CryptoHasher("sha1").update(b).digest("hex");

/** The stored object's bytes: from the file of a local strategy, over its public address for one that serves its own (S3). */
async function readObject(storage: ReturnType<Deps["storage"]["for"]>, path: string): Promise<Uint8Array | string> {
  const file = storage.readableFile(path);
  if (file) {
    if (!(await file.exists())) return "the object is missing";
    return new Uint8Array(await file.arrayBuffer());
  }
  const res = await fetch(storage.url(path), { signal: AbortSignal.timeout(30_000) }).catch((e: Error) => e);
  if (res instanceof Error) return `the object could not be read (${res.message})`;
  if (!res.ok) return `the object could not be read (HTTP ${res.status})`;
  return new Uint8Array(await res.arrayBuffer());
}

export async function stripMetadataBatch(deps: Deps, input: { groupId: number; dryRun: boolean; afterId: number; limit: number }): Promise<StripBatch> {
  const group = await getGroup(deps.db, input.groupId);
  if (!group) throw notFound("Group not found.");
  const limit = Math.min(Math.max(1, input.limit), STRIP_BATCH_MAX);
  // the group's images: its accounts', and for the guest group the images without an account
  const owned = group.isGuest ? isNull(images.userId) : sql`${images.userId} in (select ${users.id} from ${users} where ${users.groupId} = ${group.id})`;
  const rows = await deps.db
    .select({ image: images, strategy: strategies })
    .from(images)
    .innerJoin(strategies, eq(strategies.id, images.strategyId))
    .where(and(gt(images.id, input.afterId), owned))
    .orderBy(asc(images.id))
    .limit(limit);

  const items: StripItem[] = [];
  for (const { image, strategy } of rows) {
    const item: StripItem = {
      id: image.id,
      key: image.key,
      path: image.path,
      action: "skipped",
      reason: null,
      removed: [],
      sizeBefore: image.size,
      sizeAfter: image.size,
    };
    items.push(item);
    if (group.metadata === "keep") {
      item.reason = "the group's policy is keep: nothing to strip";
      continue;
    }
    const storage = deps.storage.for(strategy);
    const read = await readObject(storage, image.path);
    if (typeof read === "string") {
      item.reason = read;
      continue;
    }
    item.sizeBefore = read.byteLength;
    // in the decode process, under its budget: a stored object is bytes a caller sent
    const result = await decoders.strip(read, image.mimetype, group.metadata).catch((e: Error) => e);
    if (result instanceof Error) {
      // never left looking stripped: the object keeps its bytes, and the report says why
      item.reason =
        result instanceof MetadataRefused
          ? `${result.message} The object was left as it is.`
          : `the policy could not be applied (${result.message}): left as it was`;
      continue;
    }
    const bytes = result.bytes;
    item.sizeAfter = bytes.byteLength;
    item.removed = result.removed;
    const newMd5 = md5(bytes);
    if (!result.changed && newMd5 === image.md5 && bytes.byteLength === image.size) {
      item.reason = "nothing to strip";
      continue;
    }
    if (!result.changed) item.reason = "the record did not describe the stored bytes: updated";
    if (input.dryRun) {
      item.action = "changed";
      continue;
    }
    try {
      const done = await deps.db.transaction(async (tx) => {
        const [locked] = await tx.select().from(images).where(eq(images.id, image.id)).for("update");
        if (!locked) return "the image was deleted meanwhile";
        if (locked.path !== image.path || locked.strategyId !== image.strategyId) return "the image moved meanwhile";
        if (result.changed) await storage.put(image.path, bytes, image.mimetype);
        const delta = bytes.byteLength - locked.size;
        await tx
          .update(images)
          .set({ size: bytes.byteLength, md5: newMd5, sha1: sha1(bytes) })
          .where(eq(images.id, image.id));
        if (delta !== 0 && locked.userId !== null) {
          await tx
            .update(users)
            .set({ usedBytes: sql`greatest(${users.usedBytes} + ${delta}, 0)` })
            .where(eq(users.id, locked.userId));
        }
        // the shared strategy row last: held only until commit
        if (delta !== 0) {
          await tx
            .update(strategies)
            .set({ usedBytes: sql`greatest(${strategies.usedBytes} + ${delta}, 0)` })
            .where(eq(strategies.id, locked.strategyId));
        }
        return null;
      });
      if (done) item.reason = done;
      else item.action = "changed";
    } catch (e) {
      logFor(deps).error({ err: e, image_id: image.id, strategy_id: strategy.id }, "strip-metadata: the object could not be replaced");
      item.reason = `the object could not be replaced (${e instanceof Error ? e.message : String(e)}): left as it was`;
    }
  }
  return {
    groupId: group.id,
    policy: group.metadata,
    dryRun: input.dryRun,
    items,
    nextAfterId: rows.length === limit ? rows.at(-1)!.image.id : null,
  };
}
