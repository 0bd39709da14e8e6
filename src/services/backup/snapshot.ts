/** One snapshot of the database for a backup or a move: the tables spooled to files, the sequences, the identity, the keys, the strategies. */
import { createHash } from "node:crypto";
import { createWriteStream, existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import type postgres from "postgres";
import packageJson from "../../../package.json" with { type: "json" };
import { parseDatabaseId, READ_COMMENT } from "../../db/repositories/database-identity.ts";
import {
  BACKUP_FORMAT,
  DATA_DIR_FILES,
  DERIVED_TABLES,
  BACKUP_FORMAT_VERSION,
  BackupError,
  DEFAULT_ROOT_PREFIX,
  journalEntries,
  type Manifest,
  quoteIdent,
  S3_NOTE,
  sha256Hex,
  type TableEntry,
  WEBHOOK_KEY,
} from "./format.ts";
import { fingerprint } from "./create.ts";

export type Tx = postgres.TransactionSql;

/**
 * Reads the schema level, the tables (spooled to files: a tar entry needs its size first), the sequences, the
 * database's identity, the webhook keys and the strategies. `withDerived` copies the rows of derived tables too
 * (`database move`, whose copy keeps the variants' objects where they are).
 */
export async function readSnapshot(tx: Tx, dataDir: string, spool: string, startedHere: boolean, withDerived = false): Promise<Manifest> {
  const tags = new Map(journalEntries().map((e) => [e.when, e.tag]));
  const [{ present }] = await tx<{ present: boolean }[]>`select to_regclass('drizzle.__drizzle_migrations') is not null as present`;
  const applied = present
    ? await tx<{ hash: string; created_at: string }[]>`
        select hash, created_at::text as created_at from drizzle.__drizzle_migrations order by created_at, id`
    : [];
  if (applied.length === 0) throw new BackupError("the database has no schema yet (no migration applied): start the server once first");
  const migrations = applied.map((m) => ({ tag: tags.get(Number(m.created_at)) ?? null, hash: m.hash, created_at: Number(m.created_at) }));

  const [{ version }] = await tx<{ version: string }[]>`select current_setting('server_version') as version`;
  const names = (await tx<{ name: string }[]>`select tablename as name from pg_tables where schemaname = 'public' order by 1`).map((r) => r.name);
  const tables: TableEntry[] = [];
  for (const name of names) {
    const columns = (
      await tx<{ c: string }[]>`
        select column_name as c from information_schema.columns
        where table_schema = 'public' and table_name = ${name} and is_generated = 'NEVER' order by ordinal_position`
    ).map((r) => r.c);
    const entry = `db/${name}.copy`;
    const target = join(spool, `${name}.copy`);
    const hash = createHash("sha256");
    let bytes = 0;
    let lines = 0;
    // a derived table's entry holds no rows (variants are made again on demand after a restore)
    const derived = DERIVED_TABLES.has(name) && !withDerived;
    const copy = derived
      ? `copy (select ${columns.map(quoteIdent).join(", ")} from public.${quoteIdent(name)} where false) to stdout`
      : `copy public.${quoteIdent(name)} (${columns.map(quoteIdent).join(", ")}) to stdout`;
    const source = await tx.unsafe(copy).readable();
    const sink = createWriteStream(target, { mode: 0o600 });
    await pipeline(
      source,
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          hash.update(chunk);
          bytes += chunk.length;
          for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
          yield chunk;
        }
      },
      sink,
    );
    const [{ n }] = derived ? [{ n: 0 }] : await tx.unsafe<{ n: number }[]>(`select count(*)::int as n from public.${quoteIdent(name)}`);
    if (n !== lines) throw new BackupError(`copying ${name}: ${n} rows in the table, ${lines} lines copied`);
    tables.push({ name, file: entry, columns, rows: n, bytes, sha256: hash.digest("hex") });
  }

  // sequences are not transactional: read now, each is at least the largest id the snapshot holds
  const serials = await tx<{ table: string; column: string; sequence: string }[]>`
    select table_name as table, column_name as column,
           pg_get_serial_sequence(format('public.%I', table_name), column_name) as sequence
    from information_schema.columns
    where table_schema = 'public' and pg_get_serial_sequence(format('public.%I', table_name), column_name) is not null
    order by 1, 2`;
  const sequences: Manifest["database"]["sequences"] = [];
  for (const s of serials) {
    const [{ v }] = await tx.unsafe<{ v: string | null }[]>(`select case when is_called then last_value::text end as v from ${s.sequence}`);
    sequences.push({ ...s, last_value: v === null ? null : Number(v) });
  }

  // sequences of no column (webhook_event_seq orders the deliveries of one subject: it must not start again at 1)
  const standalone = await tx<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind = 'S'
      and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype in ('a', 'i'))
    order by 1`;
  const standaloneSequences: NonNullable<Manifest["database"]["standalone_sequences"]> = [];
  for (const { name } of standalone) {
    const [{ v }] = await tx.unsafe<{ v: string | null }[]>(`select case when is_called then last_value::text end as v from public.${quoteIdent(name)}`);
    standaloneSequences.push({ sequence: name, last_value: v === null ? null : Number(v) });
  }
  const [{ comment }] = await tx.unsafe<{ comment: string | null }[]>(READ_COMMENT);
  const [{ endpoints }] = await tx<{ endpoints: boolean }[]>`select to_regclass('public.webhook_endpoints') is not null as endpoints`;
  const sealedWith = endpoints
    ? (
        await tx<{ id: string }[]>`select distinct split_part(secret_sealed, ':', 2) as id from webhook_endpoints where secret_sealed like 'v1:%' order by 1`
      ).map((r) => r.id)
    : [];

  const strategies = await tx<{ id: number; driver: string; config: Record<string, unknown> }[]>`
    select id, driver, config from strategies order by id`;
  const roots: Manifest["storage"]["roots"] = [];
  const s3: number[] = [];
  for (const s of strategies) {
    if (s.driver !== "local") {
      s3.push(s.id);
      continue;
    }
    const configRoot = typeof s.config?.root === "string" ? s.config.root : null;
    const same = roots.find((r) => r.config_root === configRoot);
    if (same) same.strategy_ids.push(s.id);
    else roots.push({ prefix: configRoot === null ? DEFAULT_ROOT_PREFIX : `roots/${roots.length}`, config_root: configRoot, strategy_ids: [s.id] });
  }

  const files: Manifest["files"] = [];
  let keyFile: string | null = null;
  for (const name of DATA_DIR_FILES) {
    const path = join(dataDir, name);
    if (!existsSync(path)) continue;
    const bytes = await readFile(path);
    files.push({ name, bytes: bytes.length, sha256: sha256Hex(bytes) });
    if (name === WEBHOOK_KEY) keyFile = fingerprint(bytes.toString("utf8").trim(), path);
  }

  return {
    format: BACKUP_FORMAT,
    format_version: BACKUP_FORMAT_VERSION,
    created_at: new Date().toISOString(),
    app_version: packageJson.version,
    source: { data_dir: dataDir, server_running: !startedHere, postgres_version: version },
    database: { migrations, tables, sequences, standalone_sequences: standaloneSequences, database_id: parseDatabaseId(comment) },
    webhooks: { sealed_with: sealedWith, key_file: keyFile },
    storage: { roots, s3_strategy_ids: s3, note: S3_NOTE },
    files,
  };
}

/** A key's fingerprint as sealed values name it; a file that holds no key has none (the server would refuse it too). */
