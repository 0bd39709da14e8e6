/** The restored cluster's rows: the archive's schema level, its tables copied in, this build's newer migrations. */
import { createReadStream } from "node:fs";
import { copyFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { eq, sql as sqlTag } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { type Connection, migrationsFolder, openPostgres } from "../../db/client.ts";
import { setDatabaseId } from "../../db/repositories/database-identity.ts";
import { deleteImageAndRelease } from "../../db/repositories/images.ts";
import { DELIVER_JOB } from "../../webhooks/outbox.ts";
import { installQueue } from "../../webhooks/queue.ts";
import * as schema from "../../db/schema.ts";
import { BackupError, DERIVED_TABLES, type Manifest, type ObjectList, quoteIdent, readJournal, type TableEntry } from "./format.ts";

/** Tables ordered so that each comes after the tables it references (self-references need no order). */
async function foreignKeyOrder(sql: postgres.Sql, tables: TableEntry[]): Promise<TableEntry[]> {
  const edges = await sql<{ from: string; to: string }[]>`
    select c.conrelid::regclass::text as from, c.confrelid::regclass::text as to
    from pg_constraint c join pg_namespace n on n.oid = c.connamespace
    where c.contype = 'f' and n.nspname = 'public'`;
  const unquote = (n: string) => n.replace(/^public\./, "").replace(/^"(.*)"$/, "$1");
  const needs = new Map(tables.map((t) => [t.name, new Set<string>()]));
  for (const e of edges) if (unquote(e.from) !== unquote(e.to)) needs.get(unquote(e.from))?.add(unquote(e.to));
  const ordered: TableEntry[] = [];
  const placed = new Set<string>();
  while (ordered.length < tables.length) {
    const next = tables.filter((t) => !placed.has(t.name) && [...needs.get(t.name)!].every((n) => placed.has(n) || !needs.has(n)));
    if (next.length === 0) throw new BackupError("the tables' foreign keys form a cycle: cannot order the copy");
    for (const t of next) {
      ordered.push(t);
      placed.add(t.name);
    }
  }
  return ordered;
}

/**
 * Brings the new cluster to the archive's schema level, copies every table in (one transaction, foreign keys
 * checked), sets the sequences, deletes the images the backup left out as the service deletes an image, then
 * applies this build's newer migrations, gives the database the archive's identity (the storage's markers name it)
 * and a job to every pending webhook delivery (graphile-worker's schema is not archived: without its job a
 * delivery would wait for the next start's overdue sweep, at best). Returns the archive's level when it was older
 * than this build's. `withDerived` loads the rows of derived tables too (`database move`, whose variants' objects
 * stay where they are); a restore never does.
 */
export async function loadDatabase(
  connection: Connection,
  manifest: Manifest,
  objects: ObjectList,
  work: string,
  options: { withDerived?: boolean } = {},
): Promise<string | null> {
  const emptied = (name: string) => DERIVED_TABLES.has(name) && !options.withDerived;
  // drizzle's migrator, on a copy of drizzle/ whose journal stops at the archive's level
  const partial = join(work, "migrations");
  await mkdir(join(partial, "meta"), { recursive: true });
  const journal = readJournal();
  const level = manifest.database.migrations.length;
  const entries = journal.entries.slice(0, level);
  for (const e of entries) await copyFile(join(migrationsFolder, `${e.tag}.sql`), join(partial, `${e.tag}.sql`));
  await writeFile(join(partial, "meta/_journal.json"), JSON.stringify({ ...journal, entries }));

  const sql = typeof connection === "string" ? postgres(connection, { max: 1, onnotice: () => {} }) : postgres({ ...connection, max: 1, onnotice: () => {} });
  try {
    await migrate(drizzle(sql, { schema }), { migrationsFolder: partial });
    const applied = await sql<
      { hash: string; created_at: string }[]
    >`select hash, created_at::text as created_at from drizzle.__drizzle_migrations order by created_at, id`;
    if (applied.length !== level || applied.some((a, i) => a.hash !== manifest.database.migrations[i]!.hash)) {
      throw new BackupError("the migrations applied to the new database differ from the archive's");
    }
    const present = (await sql<{ name: string }[]>`select tablename as name from pg_tables where schemaname = 'public' order by 1`).map((r) => r.name);
    const archived = manifest.database.tables.map((t) => t.name).sort();
    if (present.join(",") !== archived.join(",")) {
      throw new BackupError(`the archive's tables (${archived.join(", ")}) are not those of its schema level (${present.join(", ")})`);
    }

    const ordered = await foreignKeyOrder(sql, manifest.database.tables);
    await sql.begin(async (tx) => {
      // derived tables (variants) are left empty, even from an archive that holds their rows: their objects are not
      // in any archive, and a row without its object would name nothing (made again on demand instead)
      for (const t of ordered) {
        if (t.rows === 0 || emptied(t.name)) continue;
        const sink = await tx.unsafe(`copy public.${quoteIdent(t.name)} (${t.columns.map(quoteIdent).join(", ")}) from stdin`).writable();
        await pipeline(createReadStream(join(work, `${t.name}.copy`)), sink);
      }
      // an album's image_num is kept by triggers on images (drizzle/0013), which fired for the images copied in on top
      // of the archived counts: counted again from the rows
      if (manifest.database.tables.some((t) => t.name === "albums" && t.columns.includes("image_num"))) {
        await tx.unsafe(`update public.albums a set image_num = (select count(*)::int from public.images i where i.album_id = a.id)`);
      }
      for (const t of ordered) {
        const [{ n }] = await tx.unsafe<{ n: number }[]>(`select count(*)::int as n from public.${quoteIdent(t.name)}`);
        if (n !== (emptied(t.name) ? 0 : t.rows)) throw new BackupError(`restoring ${t.name}: ${t.rows} rows in the archive, ${n} in the table`);
      }
      for (const s of manifest.database.sequences) {
        if (!manifest.database.tables.some((t) => t.name === s.table)) continue;
        const [{ max }] = await tx.unsafe<{ max: string | null }[]>(`select max(${quoteIdent(s.column)})::text as max from public.${quoteIdent(s.table)}`);
        const value = Math.max(s.last_value ?? 0, Number(max ?? 0));
        if (value > 0) await tx`select setval(pg_get_serial_sequence(${`public.${quoteIdent(s.table)}`}, ${s.column}), ${value}::bigint, true)`;
      }
      for (const s of manifest.database.standalone_sequences ?? []) {
        const [{ present }] = await tx<{ present: boolean }[]>`select to_regclass(${`public.${quoteIdent(s.sequence)}`}) is not null as present`;
        if (present && s.last_value !== null) await tx`select setval(${`public.${quoteIdent(s.sequence)}`}::regclass, ${s.last_value}::bigint, true)`;
      }
    });
  } finally {
    await sql.end({ timeout: 5 });
  }

  const database = openPostgres(connection, { max: 1 });
  try {
    if (objects.dropped_images.length > 0) {
      await database.db.transaction(async (tx) => {
        for (const dropped of objects.dropped_images) {
          const [image] = await tx.select().from(schema.images).where(eq(schema.images.id, dropped.id)).for("update");
          if (image) await deleteImageAndRelease(tx, image);
        }
      });
    }
    await database.migrate(installQueue); // this build's newer migrations, if the archive is older
    if (manifest.database.database_id) await setDatabaseId(database.db, manifest.database.database_id);
    await database.db.execute(sqlTag`
      select graphile_worker.add_job(${DELIVER_JOB}::text, json_build_object('id', d.id), run_at => greatest(coalesce(d.next_attempt_at, now()), now()),
        job_key => 'webhook-delivery:' || d.id::text, job_key_mode => 'preserve_run_at', max_attempts => 10)
      from webhook_deliveries d where d.status = 'pending'`);
  } finally {
    await database.close();
  }
  const known = readMigrationFiles({ migrationsFolder }).length;
  return level < known ? (manifest.database.migrations.at(-1)?.tag ?? String(level)) : null;
}
