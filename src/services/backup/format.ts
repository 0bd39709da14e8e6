/**
 * The archive format shared by `backup create` and `backup restore`: its entries' names, the manifest and the
 * object list, the refusal type, and the small helpers both sides use.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { migrationsFolder } from "../../db/client.ts";
import { syncPath } from "../../storage/local.ts";

export const BACKUP_FORMAT = "image-host-backup";
/** The version this build writes; it reads every version of READABLE_FORMAT_VERSIONS (1: no webhook key, no identity). */
export const BACKUP_FORMAT_VERSION = 2;
export const READABLE_FORMAT_VERSIONS: readonly number[] = [1, 2];

/** A refusal or failure to report as is (no stack trace). */
export class BackupError extends Error {
  constructor(
    message: string,
    readonly details: string[] = [],
  ) {
    super(message);
  }
}

export interface TableEntry {
  name: string;
  /** The archive entry holding its rows (COPY text format). */
  file: string;
  /** The columns copied, in this order (generated columns are not copied). */
  columns: string[];
  rows: number;
  bytes: number;
  sha256: string;
}

export interface Manifest {
  format: typeof BACKUP_FORMAT;
  format_version: number;
  created_at: string;
  app_version: string;
  source: { data_dir: string; server_running: boolean; postgres_version: string };
  database: {
    /** drizzle's journal of applied migrations (drizzle.__drizzle_migrations): the schema level of the rows. */
    migrations: { tag: string | null; hash: string; created_at: number }[];
    tables: TableEntry[];
    /** Each serial column's sequence as the backup read it (never below the largest id of the snapshot). */
    sequences: { table: string; column: string; sequence: string; last_value: number | null }[];
    /** Sequences of no column (`webhook_event_seq`, which orders webhook deliveries), as the backup read them (format 2). */
    standalone_sequences?: { sequence: string; last_value: number | null }[];
    /** The database's identity (db/repositories/database-identity.ts), given to the restored one (format 2). */
    database_id?: string | null;
  };
  /**
   * The keys the webhook signing secrets are sealed with (fingerprints, as secret-box.ts writes them) and the one of
   * DATA_DIR/webhook-secret-key when the archive holds it (format 2).
   */
  webhooks?: { sealed_with: string[]; key_file: string | null };
  storage: {
    /** Where the objects of local strategies go: `uploads/` is DATA_DIR/uploads, `roots/<n>/` a root of its own. */
    roots: { prefix: string; config_root: string | null; strategy_ids: number[] }[];
    /** Strategies whose objects are not in the archive (back up their bucket with the provider's tools). */
    s3_strategy_ids: number[];
    note: string;
  };
  /** DATA_DIR's own files: `admin-token`, `webhook-secret-key` (format 2), when DATA_DIR has them. */
  files: { name: DataDirFile; bytes: number; sha256: string }[];
}

export interface ObjectList {
  count: number;
  bytes: number;
  objects: { name: string; bytes: number; sha256: string }[];
  /** Images of the snapshot whose objects were gone when copied (deleted during the backup): restored as deleted. */
  dropped_images: { id: number; key: string; missing: string[] }[];
  /** Image records of S3 strategies: in the archive, their objects are not. */
  s3_images: number;
}

/** What an archive holds, as both summaries report it. */
interface ArchiveCounts {
  file: string;
  tables: number;
  records: number;
  objects: number;
  object_bytes: number;
  dropped_images: number;
  s3_images: number;
  duration_ms: number;
}

export interface BackupSummary extends ArchiveCounts {
  archive_bytes: number;
  gzip: boolean;
  server_running: boolean;
  /** Where the key of the webhook signing secrets is: in the archive, only in WEBHOOK_SECRET_KEY, or nowhere (no secret). */
  webhook_key: "archived" | "environment" | "missing" | "none";
  /** What a restore of this archive will need beside it (a WEBHOOK_SECRET_KEY kept elsewhere). */
  warnings: string[];
}

export interface RestoreSummary extends ArchiveCounts {
  data_dir: string;
  migrated_from: string | null;
  /** What the restored server must be started with for everything to work (the webhook key). */
  warnings: string[];
}

export const MANIFEST = "manifest.json";
export const OBJECT_LIST = "objects.json";
export const ADMIN_TOKEN = "admin-token";
/** DATA_DIR/webhook-secret-key (webhooks/secret-box.ts): without it no restored webhook secret can be opened. */
export const WEBHOOK_KEY = "webhook-secret-key";
/** DATA_DIR's files an archive holds, in this order. */
export const DATA_DIR_FILES = [ADMIN_TOKEN, WEBHOOK_KEY] as const;
export type DataDirFile = (typeof DATA_DIR_FILES)[number];
export const DEFAULT_ROOT_PREFIX = "uploads";
export const S3_NOTE = "Objects of S3 strategies are not in this archive (their records are): back up the bucket with the provider's tools.";

/**
 * Tables of derived data, made again on demand: variants. Their rows are not archived (the table's
 * entry holds none) and their objects are not copied, so a restored server makes each variant again on its first
 * request. Rows without their objects would be worse than none: on S3 a variant's address redirects to its object
 * without asking the bucket first. A restore loads none of these tables' rows, whatever an archive holds.
 */
export const DERIVED_TABLES: ReadonlySet<string> = new Set(["image_variants"]);

export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;
export const isGzipName = (file: string) => /\.(gz|tgz)$/i.test(file);
export const sha256Hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** A relative object path as the service writes them: '/'-separated, no empty, `.` or `..` segment. */
export function isSafeRelativePath(path: string): boolean {
  if (!path || path.startsWith("/") || path.includes("\\") || path.includes("\0")) return false;
  return path.split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..");
}

interface Journal {
  entries: { idx: number; when: number; tag: string }[];
}

/** drizzle/meta/_journal.json: the migrations of this build, in order (`when` is what the database records). */
export function readJournal(): Journal {
  return JSON.parse(readFileSync(join(migrationsFolder, "meta/_journal.json"), "utf8")) as Journal;
}

export const journalEntries = () => readJournal().entries;

export async function fsyncDirectory(path: string) {
  try {
    await syncPath(path);
  } catch {} // some filesystems refuse to sync a directory; the rename is then as durable as they make it
}
