/**
 * What an importer brought in from another host (services/import/): one row per record imported, from the source's
 * id to ours, written in the transaction that creates the record. A second run skips what is mapped, a run that
 * stopped half-way continues after the last record that committed, and a Lsky Pro client's `ID|PLAINTEXT` token
 * finds its imported token by the id it still holds.
 */
import { and, eq, inArray, or, sql } from "drizzle-orm";
import type { Executor } from "../client.ts";
import { type ImportKind, imageVariants, images, importedRecords, strategies, tokens, users } from "../schema.ts";

export type { ImportKind };

/** Our ids of the source's records already imported, by source id. */
export async function importedIds(db: Executor, source: string, kind: ImportKind, sourceIds: number[]): Promise<Map<number, number>> {
  const map = new Map<number, number>();
  if (sourceIds.length === 0) return map;
  const rows = await db
    .select({ sourceId: importedRecords.sourceId, targetId: importedRecords.targetId })
    .from(importedRecords)
    .where(and(eq(importedRecords.source, source), eq(importedRecords.kind, kind), inArray(importedRecords.sourceId, sourceIds)))
    .limit(sourceIds.length);
  for (const r of rows) map.set(r.sourceId, r.targetId);
  return map;
}

export async function recordImported(db: Executor, source: string, kind: ImportKind, sourceId: number, targetId: number) {
  await db.insert(importedRecords).values({ source, kind, sourceId, targetId });
}

/** Whether our record `targetId` was imported as the source's `sourceId` of that kind. */
export async function isImportedAs(db: Executor, source: string, kind: ImportKind, sourceId: number, targetId: number): Promise<boolean> {
  const [row] = await db
    .select({ targetId: importedRecords.targetId })
    .from(importedRecords)
    .where(and(eq(importedRecords.source, source), eq(importedRecords.kind, kind), eq(importedRecords.sourceId, sourceId)))
    .limit(1);
  return row?.targetId === targetId;
}

/** Whether a stored object of any image (original, thumbnail or variant) is at `path`, or an image is named `name`. */
export async function storedPathTaken(db: Executor, path: string, name: string): Promise<boolean> {
  const [image] = await db
    .select({ id: images.id })
    .from(images)
    .where(or(eq(images.path, path), eq(images.thumbnailPath, path), eq(images.name, name)))
    .limit(1);
  if (image) return true;
  const [variant] = await db.select({ id: imageVariants.id }).from(imageVariants).where(eq(imageVariants.path, path)).limit(1);
  return variant !== undefined;
}

export async function imageKeyTaken(db: Executor, key: string): Promise<boolean> {
  const [row] = await db.select({ id: images.id }).from(images).where(eq(images.key, key)).limit(1);
  return row !== undefined;
}

export async function tokenHashTaken(db: Executor, secretHash: string): Promise<boolean> {
  const [row] = await db.select({ id: tokens.id }).from(tokens).where(eq(tokens.secretHash, secretHash)).limit(1);
  return row !== undefined;
}

/** Unrevoked, unexpired permanent tokens of the account. */
export async function livePermanentTokens(db: Executor, userId: number, now: Date): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(tokens)
    .where(
      and(
        eq(tokens.userId, userId),
        eq(tokens.kind, "permanent"),
        sql`${tokens.revokedAt} is null`,
        sql`(${tokens.expiredAt} is null or ${tokens.expiredAt} > ${now.toISOString()}::timestamptz)`,
      ),
    );
  return row?.n ?? 0;
}

/** The account using this email or username (case-insensitive), if any. */
export async function accountTaken(db: Executor, by: { email: string } | { username: string }): Promise<boolean> {
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where("email" in by ? sql`lower(${users.email}) = lower(${by.email})` : sql`lower(${users.username}) = lower(${by.username})`)
    .limit(1);
  return row !== undefined;
}

/**
 * Records an imported image and charges its bytes to its owner and its strategy, as an upload's record does, in the
 * caller's transaction (with the mapping row). Nothing is refused for quota or capacity: the source held the image.
 */
export async function insertImportedImage(tx: Executor, row: typeof images.$inferInsert): Promise<number> {
  const [inserted] = await tx.insert(images).values(row).returning({ id: images.id });
  if (row.userId != null) {
    await tx
      .update(users)
      .set({ usedBytes: sql`${users.usedBytes} + ${row.size}`, imageNum: sql`${users.imageNum} + 1` })
      .where(eq(users.id, row.userId));
  }
  await tx
    .update(strategies)
    .set({ usedBytes: sql`${strategies.usedBytes} + ${row.size}` })
    .where(eq(strategies.id, row.strategyId));
  return inserted!.id;
}

/** The value a table's id sequence gives next, less one (at least its largest id; 1 when it is empty and unused). */
const sequenceFloor = (table: string) =>
  `greatest(coalesce((select max(id) from ${table}), 1), coalesce((select last_value from pg_sequences where schemaname = current_schema() and sequencename = '${table}_id_seq'), 1))`;

/**
 * Inserts a record under the source's own id when ours is free (clients name strategies, albums and tokens by id:
 * PicGo's strategy and album, a Lsky token's `ID|`), else under the next id. The table is locked against other
 * inserts until the caller's transaction ends and its sequence never goes back, so no later insert collides.
 */
export async function insertKeepingId(
  tx: Executor,
  table: "strategies" | "albums" | "tokens",
  sourceId: number,
  insert: (id: number | undefined) => Promise<number>,
): Promise<number> {
  await tx.execute(sql.raw(`lock table ${table} in share row exclusive mode`));
  const found = (await tx.execute(sql`select 1 from ${sql.raw(table)} where id = ${sourceId}`)) as unknown as unknown[];
  const free = sourceId > 0 && sourceId <= 2_147_483_647 && found.length === 0;
  const id = await insert(free ? sourceId : undefined);
  if (free) await tx.execute(sql.raw(`select setval('${table}_id_seq', ${sequenceFloor(table)})`));
  return id;
}

/**
 * Moves a table's id sequence past the source's largest id, once before an import's records of that kind: a record
 * whose own id is taken then gets one beyond every source id, never one a later record would have kept.
 */
export async function reserveIdsUpTo(db: Executor, table: "strategies" | "albums" | "tokens", maxSourceId: number) {
  const upTo = Math.min(Math.max(0, Math.trunc(maxSourceId)), 2_147_483_647);
  await db.execute(sql.raw(`select setval('${table}_id_seq', greatest(${sequenceFloor(table)}, ${upTo}))`));
}

/** A strategy of ours with exactly this driver and configuration (a twin of what an import would create), if any. */
export async function findTwinStrategy(db: Executor, driver: "local" | "s3", config: Record<string, unknown>): Promise<number | null> {
  const [row] = await db
    .select({ id: strategies.id })
    .from(strategies)
    .where(and(eq(strategies.driver, driver), sql`${strategies.config} = ${JSON.stringify(config)}::jsonb`))
    .orderBy(strategies.id)
    .limit(1);
  return row?.id ?? null;
}
