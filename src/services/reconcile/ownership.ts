/** Whose storage a location is (its marker), and which listed objects a record names. */
import { findRecordsNaming, findVariantsNaming } from "../../db/repositories/stored-objects.ts";
import type { Deps } from "../../deps.ts";
import type { StoredObject } from "../../storage/index.ts";
import { describeIdentity, translatePath } from "../../storage/location.ts";
import { MARKER, readMarker } from "../../storage/marker.ts";
import { BATCH, OBJECT_NAME, QUARANTINE_PREFIX } from "./names.ts";
import type { Location, Overlap, Run } from "./report.ts";

/** Whose storage a location is, as far as this database can tell (see `ownership`). */
export type Ownership =
  | { kind: "ours" }
  /** No marker, and nothing in it says it is another database's: marked as this database's, then reconciled. */
  | { kind: "adopt" }
  /** No marker, and the only objects no record names are young (uploads in flight?): reported, nothing changed. */
  | { kind: "undecided" }
  /**
   * Another database's, or unknowable: nothing is moved or deleted anywhere in this run. `remember`: an unmarked
   * storage judged by its objects gets the `unknown` marker (unless a dry run), so that the refusal holds when this
   * database's own uploads later outnumber the foreign objects there.
   */
  | { kind: "refused"; error: string; remember?: boolean };

/**
 * Whether the location's objects answer to this database's records (docs/decisions/storage-database-marker.md):
 *  - its marker names this database: yes;
 *  - its marker names another one, or nothing readable: no;
 *  - no marker (a storage from before markers, or never used): the objects decide. Every object named as this
 *    service names them that no record of this database names, once past the grace period, is evidence against it:
 *    when there is none, the storage is this database's (or empty) and is marked; when the database names none of
 *    the storage's objects, or the unknown ones outnumber those it names and some are older than every one it
 *    names, they were not written by it (a DATA_DIR or a bucket pointed at a new database) — refused, never moved,
 *    and the refusal is remembered (the `unknown` marker), so it holds when that database's own uploads later
 *    outnumber them; otherwise they are its own leftovers (what the reconciler exists for), and the storage is
 *    marked as its own;
 *  - its marker says `unknown` (such a refusal): no, until an operator names the database.
 * A storage that cannot be read is an error of its location alone, as a failed listing always was.
 */
export async function ownership(
  deps: Deps,
  location: Location,
  overlapping: Overlap[],
  databaseId: string,
  run: Run,
): Promise<Ownership | { kind: "error"; error: string }> {
  const where = describeIdentity(location.identity);
  const claim = `write the line "image-host-database: ${databaseId}" into ${MARKER} at the root of ${where}`;
  let marker;
  try {
    marker = await readMarker(location.storage);
  } catch (e) {
    return { kind: "error", error: `cannot read its ${MARKER} (${(e as Error).message}): nothing was moved or deleted there` };
  }
  if (marker.kind === "names") {
    if (marker.id === databaseId) return { kind: "ours" };
    return {
      kind: "refused",
      error:
        `this storage belongs to a different database: its ${MARKER} names database ${marker.id}, and this server's database is ${databaseId}. ` +
        "Nothing was moved or deleted anywhere. If this database is that one moved or restored without its identity, or its objects are to be this database's " +
        `from now on, ${claim}; otherwise give this strategy a storage of its own (see docs/backups.md).`,
    };
  }
  if (marker.kind === "unknown") {
    return {
      kind: "refused",
      error:
        `its ${MARKER} says its objects belong to an unknown database (a reconciler found objects there that its records did not name): nothing was moved or deleted anywhere. ` +
        `If they are this database's, ${claim}; to serve them from a new database, copy their records into it first (bun run cli database move; see docs/backups.md).`,
    };
  }
  if (marker.kind === "unreadable") {
    return {
      kind: "refused",
      error: `its ${MARKER} names no database (${JSON.stringify(marker.text.slice(0, 80))}): nothing was moved or deleted anywhere. If this storage is this database's, ${claim}.`,
    };
  }

  let named = 0;
  let oldestNamed = Number.POSITIVE_INFINITY;
  let unnamedOld = 0;
  let oldestUnnamed = Number.POSITIVE_INFINITY;
  let unnamedYoung = 0;
  let batch: StoredObject[] = [];
  const judge = async () => {
    const owned = await ownedPaths(deps, batch, overlapping, run.allStrategyIds);
    for (const object of batch) {
      const at = object.modifiedAt.getTime();
      if (owned.has(object.path)) {
        named++;
        oldestNamed = Math.min(oldestNamed, at);
      } else if (object.modifiedAt >= run.cutoff) unnamedYoung++;
      else {
        unnamedOld++;
        oldestUnnamed = Math.min(oldestUnnamed, at);
      }
    }
    batch = [];
  };
  try {
    for await (const object of location.storage.list()) {
      if (run.signal?.aborted) return { kind: "undecided" };
      if (object.temporary || object.path.startsWith(QUARANTINE_PREFIX) || !OBJECT_NAME.test(object.path)) continue;
      batch.push(object);
      if (batch.length >= BATCH) await judge();
    }
    await judge();
  } catch (e) {
    return { kind: "error", error: `cannot list it to learn whose objects it holds (${(e as Error).message}): nothing was moved or deleted there` };
  }
  if (unnamedOld === 0) return unnamedYoung === 0 ? { kind: "adopt" } : { kind: "undecided" };
  const tail =
    "they look like a different database's (the same DATA_DIR or bucket used with a new DATABASE_URL?). Nothing was moved or deleted anywhere. " +
    "To serve them from a new database, copy the records they belong to into it (bun run cli database move; see docs/backups.md); " +
    `if they really are this database's own leftovers, ${claim}.`;
  if (named === 0) {
    return {
      kind: "refused",
      remember: true,
      error: `this storage has no ${MARKER} and holds ${unnamedOld} objects that no record of this database names, and none that one does: ${tail}`,
    };
  }
  if (oldestUnnamed < oldestNamed && unnamedOld > named) {
    return {
      kind: "refused",
      remember: true,
      error:
        `this storage has no ${MARKER} and holds ${unnamedOld} objects that no record of this database names, more than the ${named} it names, some older ` +
        `(from ${new Date(oldestUnnamed).toISOString()}) than every object it names (the oldest from ${new Date(oldestNamed).toISOString()}): ${tail}`,
    };
  }
  return { kind: "adopt" };
}

/**
 * The paths of the batch's objects (all named as this service names objects) that some record names:
 *  - on a strategy of a related location (the same place, or one nested in or around it), at the object's path as
 *    seen from there: an object under a nested location belongs to the records of both;
 *  - on ANY strategy, by the object's name alone (`YYYY/MM/DD/<random>.<ext>`, with or without `thumbnails/`),
 *    whatever its location: a second net for aliases no identity shows.
 */
export async function ownedPaths(deps: Deps, batch: StoredObject[], overlapping: Overlap[], allStrategyIds: number[]): Promise<Set<string>> {
  if (batch.length === 0) return new Set();
  const owned = new Set<string>();
  // per related location: the batch's paths as that location sees them, back to the batch's path
  const views = overlapping.map((o) => {
    const back = new Map<string, string>();
    for (const object of batch) {
      const there = translatePath(object.path, o.relation);
      if (there !== null) back.set(there, object.path);
    }
    return { strategyIds: new Set(o.location.strategies.map((s) => s.id)), back };
  });
  const byName = new Map<string, string[]>();
  for (const object of batch) {
    const name = object.path.replace(/^thumbnails\//, "");
    for (const candidate of [name, `thumbnails/${name}`]) byName.set(candidate, [...(byName.get(candidate) ?? []), object.path]);
  }
  const lookups = [
    ...views.map((v) => ({ strategyIds: [...v.strategyIds], paths: [...v.back.keys()] })),
    { strategyIds: allStrategyIds, paths: [...byName.keys()] },
  ];
  for (const record of await findRecordsNaming(deps.db, lookups)) {
    for (const named of [record.path, record.thumbnailPath]) {
      if (named === null) continue;
      for (const v of views) if (v.strategyIds.has(record.strategyId) && v.back.has(named)) owned.add(v.back.get(named)!);
      for (const path of byName.get(named) ?? []) owned.add(path);
    }
  }
  // variants are named by their rows: as seen from a related location, or by their own path anywhere
  const variantLookups = [
    ...views.map((v) => ({ strategyIds: [...v.strategyIds], paths: [...v.back.keys()].filter((p) => p.startsWith("variants/")) })),
    { strategyIds: allStrategyIds, paths: batch.map((o) => o.path).filter((p) => p.startsWith("variants/")) },
  ];
  for (const variant of await findVariantsNaming(deps.db, variantLookups)) {
    for (const v of views) if (v.strategyIds.has(variant.strategyId) && v.back.has(variant.path)) owned.add(v.back.get(variant.path)!);
    if (batch.some((o) => o.path === variant.path)) owned.add(variant.path);
  }
  return owned;
}
