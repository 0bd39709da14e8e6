/**
 * The storage's marker: `.image-host-database` at the root of each storage location (a local root, an S3 bucket and
 * prefix), naming the database whose records its objects answer to (db/repositories/database-identity.ts). The
 * reconciler writes it at first use and moves nothing from a location whose marker names another database: pointing
 * a DATA_DIR or a bucket full of images at another database never sends them to the quarantine. See
 * docs/decisions/storage-database-marker.md.
 */
import { type Storage, StorageError } from "./storage.ts";

export const MARKER = ".image-host-database";

/**
 * What a marker says: the id; `unknown` (written by a reconciler that found objects here no record of its database
 * names: their database is not known, and nothing moves until an operator names it); or nothing readable.
 */
export type MarkerState = { kind: "absent" } | { kind: "names"; id: string } | { kind: "unknown"; text: string } | { kind: "unreadable"; text: string };

/** The marker's text: one line an operator can also write by hand (`image-host-database: <id>`), and what it is for. */
export function markerText(id: string): string {
  return (
    `image-host-database: ${id}\n` +
    "# The objects here belong to the image host whose database has this id (the comment of its settings table).\n" +
    "# Its reconciler moves nothing from a storage whose marker names another database. See docs/backups.md.\n"
  );
}

/** The marker of a storage whose objects a database refused as not its own: their database is to be named by hand. */
function unknownMarkerText(refusedBy: string, at: Date): string {
  return (
    "image-host-database: unknown\n" +
    `# On ${at.toISOString()} the image host with database ${refusedBy} found objects here that its records do not name, and moved nothing.\n` +
    "# Nothing is moved from here until the line above names the database these objects belong to (image-host-database: <id>). See docs/backups.md.\n"
  );
}

function parseMarker(text: string): MarkerState {
  if (/^image-host-database: unknown\s*$/m.test(text)) return { kind: "unknown", text: text.slice(0, 400) };
  const id = text.match(/^image-host-database: ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\s*$/m)?.[1];
  return id ? { kind: "names", id } : { kind: "unreadable", text: text.slice(0, 200) };
}

/** The marker of `storage`; a storage failure (other than "absent") throws. */
export async function readMarker(storage: Storage): Promise<MarkerState> {
  try {
    const bytes = await storage.read(MARKER);
    if (bytes.length > 4096) return { kind: "unreadable", text: `(${bytes.length} bytes)` };
    return parseMarker(new TextDecoder().decode(bytes));
  } catch (e) {
    if (e instanceof StorageError && e.missing) return { kind: "absent" };
    throw e;
  }
}

export async function writeMarker(storage: Storage, id: string): Promise<void> {
  await storage.put(MARKER, new TextEncoder().encode(markerText(id)), "text/plain; charset=utf-8");
}

export async function writeUnknownMarker(storage: Storage, refusedBy: string, at: Date): Promise<void> {
  await storage.put(MARKER, new TextEncoder().encode(unknownMarkerText(refusedBy, at)), "text/plain; charset=utf-8");
}

/** Whether a listed path is a marker (the location's own, or a nested location's): never an object. */
export const isMarkerPath = (path: string) => path === MARKER || path.endsWith(`/${MARKER}`);
