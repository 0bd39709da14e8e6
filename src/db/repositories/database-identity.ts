/**
 * The database's identity: a random id, written at first use, that each storage's marker names (storage/marker.ts),
 * so that a storage knows which database its objects belong to. Kept in the comment of the `settings` table — the
 * schema has no key/value table, and a comment needs no migration: pg_dump dumps it with the table (and pg_restore
 * restores it), CREATE DATABASE … TEMPLATE copies it, and the backup archive carries it. PostgreSQL's own
 * system_identifier would not do: a dump restored elsewhere gets the new cluster's. See
 * docs/decisions/storage-database-marker.md.
 */
import { sql } from "drizzle-orm";
import type { Executor } from "../client.ts";

const PREFIX = "image-host-database: ";
const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The advisory lock that makes the first writes of concurrent instances agree (beside reconcile's 7_340_002). */
const IDENTITY_LOCK = 7_340_003;

/** The id a comment holds, or null. */
export function parseDatabaseId(comment: string | null | undefined): string | null {
  const found = comment?.match(/image-host-database: ([0-9a-f-]{36})/)?.[1];
  return found && ID.test(found) ? found : null;
}

/** The comment statement for `id` (checked first: it is written into the statement, comments take no parameters). */
function commentStatement(id: string): string {
  if (!ID.test(id)) throw new Error(`not a database id: ${JSON.stringify(id)}`);
  return (
    `comment on table public.settings is '${PREFIX}${id} ` +
    `(the identity of this image host database, named by the .image-host-database file of each storage it uses: keep it)'`
  );
}

/** The statement that reads the comment (column `comment`). */
export const READ_COMMENT = "select obj_description('public.settings'::regclass, 'pg_class') as comment";

const rowsOf = <T>(result: unknown): T[] => (Array.isArray(result) ? result : ((result as { rows?: T[] }).rows ?? [])) as T[];

export async function readDatabaseId(db: Executor): Promise<string | null> {
  const [row] = rowsOf<{ comment: string | null }>(await db.execute(sql.raw(READ_COMMENT)));
  return parseDatabaseId(row?.comment);
}

/** The database's id, written now when it has none (one writer at a time: instances starting together agree). */
export async function ensureDatabaseId(db: Executor): Promise<string> {
  const known = await readDatabaseId(db);
  if (known) return known;
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${IDENTITY_LOCK})`);
    const again = await readDatabaseId(tx);
    if (again) return again;
    const id = crypto.randomUUID();
    await tx.execute(sql.raw(commentStatement(id)));
    return id;
  });
}

/** Gives the database this id (a restore, a move: the copy is the same database to its storage). */
export async function setDatabaseId(db: Executor, id: string): Promise<void> {
  await db.execute(sql.raw(commentStatement(id)));
}
