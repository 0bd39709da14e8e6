/**
 * Events, written in the transaction of the change they describe (an outbox): a rolled-back change sends
 * nothing, a committed one is never forgotten, even when the instance dies right after the commit. Writing one costs
 * one call in that transaction (`webhook_enqueue`, drizzle/0012), and nothing at all when no enabled endpoint wants the
 * event: otherwise it writes one delivery per such endpoint and one graphile-worker job (`webhook_deliver`) each.
 *
 * `seq` (a sequence, taken in the same call) orders the events of one subject: an image's `image.uploaded` is always
 * before its `image.deleted`, whose transaction can only begin once the upload's has committed.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Executor } from "../db/client.ts";
import type { ImageRow } from "../db/repositories/images.ts";
import type { EventType, VariantFormat } from "../db/schema.ts";
import type { StorageRegistry } from "../storage/index.ts";
import type { Strategy } from "../db/repositories/strategies.ts";

/** The job an earlier version added per event (its deliveries made later): still run for jobs left queued by it. */
export const EVENT_JOB = "webhook_event";

interface EventInput {
  type: EventType;
  /** The account whose endpoints receive it besides the site-wide ones; null: the site-wide endpoints only. */
  ownerId: number | null;
  /** What the event is about, for ordering: `image:<key>`, `token:<id>`, `user:<id>`. */
  subject: string;
  data: Record<string, unknown>;
  at: Date;
}

/**
 * The statement (a fragment usable inside a larger one) that makes the event's deliveries, when some enabled endpoint
 * wants it; its value is the number of deliveries made. Account names are read in the same statement.
 */
export function eventStatement(event: EventInput): SQL {
  const id = `msg_${crypto.randomUUID().replace(/-/g, "")}`;
  return sql`webhook_enqueue(${id}::text, ${event.type}::text, ${event.at.toISOString()}::text, ${event.ownerId}::integer,
    ${event.subject}::text, ${JSON.stringify(event.data)}::jsonb)`;
}

/**
 * Writes the event in the caller's transaction (one statement). Only services call it (or eventStatement): the
 * layer check refuses this file's import anywhere else (docs/architecture.md).
 */
export async function emitEvent(tx: Executor, event: EventInput): Promise<void> {
  await tx.execute(sql`select ${eventStatement(event)} as added`);
}

/** Where an image is served: its original and thumbnail (on its strategy) and its variants (on this server). */
function imageAddresses(
  image: Pick<ImageRow, "path" | "thumbnailPath" | "width" | "mimetype">,
  strategy: Pick<Strategy, "id" | "driver" | "config">,
  storage: StorageRegistry,
  baseUrl: string,
  variants: { width: number; format: VariantFormat }[] = [],
): { url: string; thumbnail_url: string; addresses: string[] } {
  const driver = storage.for(strategy);
  const url = driver.url(image.path);
  const thumbnailUrl = image.thumbnailPath ? driver.url(image.thumbnailPath) : url;
  const addresses = [url];
  if (thumbnailUrl !== url) addresses.push(thumbnailUrl);
  const base = `${baseUrl.replace(/\/+$/, "")}/i/${image.path.split("/").map(encodeURIComponent).join("/")}`;
  const own = image.mimetype.replace(/^image\//, "");
  for (const v of variants) {
    const w = v.width < image.width ? `w=${v.width}&` : "";
    addresses.push(`${base}?${w}format=${v.format}`);
    if (v.format === own && w) addresses.push(`${base}?w=${v.width}`); // the original's format, asked for without `format`
  }
  return { url, thumbnail_url: thumbnailUrl, addresses: [...new Set(addresses)] };
}

/** The `data` of an image event (owner added by the statement): no uploader address, no token, nothing secret. */
export function imageEventData(
  image: ImageRow,
  strategy: Pick<Strategy, "id" | "name" | "driver" | "config">,
  storage: StorageRegistry,
  baseUrl: string,
  variants?: { width: number; format: VariantFormat }[],
): Record<string, unknown> {
  const { url, thumbnail_url, addresses } = imageAddresses(image, strategy, storage, baseUrl, variants);
  return {
    key: image.key,
    owner: null, // a guest's upload; an account's is filled in by the statement
    strategy: { id: strategy.id, name: strategy.name },
    pathname: image.path,
    origin_name: image.originName,
    mimetype: image.mimetype,
    size: image.size / 1024,
    width: image.width,
    height: image.height,
    is_public: image.isPublic,
    url,
    thumbnail_url,
    ...(variants ? { addresses } : {}),
  };
}
