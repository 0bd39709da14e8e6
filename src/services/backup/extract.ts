/**
 * Reading an archive, twice. The first pass (`inspectArchive`) writes nothing: it checks the manifest, names every
 * entry (a table's rows, DATA_DIR's admin token and webhook key, an object of a root the manifest declares, at a safe relative path),
 * and hashes every entry, so a restore refuses a crafted or damaged archive before it writes anything. The second
 * pass (`extractArchive`) writes each entry where the restore's plan puts it, hashing again: the file must still
 * be the one inspected (same manifest, same sha256 for every entry).
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { dirname } from "node:path";
import type { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import tar from "tar-stream";
import { BackupError, type DataDirFile, isSafeRelativePath, MANIFEST, type Manifest, OBJECT_LIST, type ObjectList, sha256Hex } from "./format.ts";
import { checkManifest, checkObjectList } from "./manifest.ts";

/** What an entry of the archive is. */
type EntryKind =
  | { kind: "table"; table: string }
  /** One of DATA_DIR's own files the manifest lists (`admin-token`, `webhook-secret-key`). */
  | { kind: "file"; name: DataDirFile }
  /** An object: `prefix` is a root the manifest declares, `path` a safe relative path ('/'-separated). */
  | { kind: "object"; prefix: string; path: string };

interface Inspected {
  manifest: Manifest;
  /** sha256 of the manifest entry's bytes: the second pass must read the same manifest. */
  manifestSha256: string;
  objects: ObjectList;
  /** Every entry but the two manifests, by name: its size and sha256. */
  entries: Map<string, { bytes: number; sha256: string }>;
}

/** Where the second pass writes an entry (absolute path), and with which mode. */
type Placement = (name: string, entry: EntryKind) => { target: string; mode: number };

/** An archive entry's name, as the manifest allows it; anything else is refused. */
function classify(name: string, manifest: Manifest): EntryKind {
  const table = manifest.database.tables.find((t) => t.file === name);
  if (table) return { kind: "table", table: table.name };
  const file = manifest.files.find((f) => f.name === name);
  if (file) return { kind: "file", name: file.name };
  const root = manifest.storage.roots.find((r) => name.startsWith(`${r.prefix}/`));
  const path = root ? name.slice(root.prefix.length + 1) : "";
  if (!root || !isSafeRelativePath(path)) throw new BackupError(`the archive holds an unexpected entry: ${JSON.stringify(name)}`);
  return { kind: "object", prefix: root.prefix, path };
}

/**
 * Walks the archive: the manifest first, then each entry (`onEntry` consumes its bytes), then the object list last.
 * Refuses an entry that is not a plain file, a name given twice, and an entry after the object list.
 */
async function walk(
  file: string,
  onManifest: (bytes: Buffer) => Manifest,
  onEntry: (name: string, kind: EntryKind, manifest: Manifest, source: AsyncIterable<unknown>) => Promise<{ bytes: number; sha256: string }>,
) {
  const head = Buffer.alloc(2);
  const fd = await open(file, "r");
  try {
    await fd.read(head, 0, 2, 0);
  } finally {
    await fd.close();
  }
  const gzip = head[0] === 0x1f && head[1] === 0x8b;
  const extractor = tar.extract();
  // tar-stream's streams are streamx streams, which node's pipeline drives (its types know only node's Writable)
  const destination = extractor as unknown as Writable;
  const feeding = gzip ? pipeline(createReadStream(file), createGunzip(), destination) : pipeline(createReadStream(file), destination);
  feeding.catch(() => {});

  let manifest: Manifest | undefined;
  let manifestSha256 = "";
  let objects: ObjectList | undefined;
  const entries = new Map<string, { bytes: number; sha256: string }>();
  try {
    for await (const entry of extractor) {
      const { name, type } = entry.header;
      if (type !== "file") throw new BackupError(`the archive holds ${JSON.stringify(name)} of type ${type}: not an archive of this tool`);
      if (entries.has(name) || (name === MANIFEST && manifest)) throw new BackupError(`the archive holds ${name} twice`);
      if (!manifest) {
        if (name !== MANIFEST) throw new BackupError(`${file} is not a backup of this service (its first entry is ${name}, not ${MANIFEST})`);
        const bytes = await collect(entry);
        manifestSha256 = sha256Hex(bytes);
        manifest = onManifest(bytes);
        continue;
      }
      if (objects) throw new BackupError(`the archive holds ${name} after ${OBJECT_LIST}`);
      if (name === OBJECT_LIST) {
        objects = checkObjectList(JSON.parse((await collect(entry)).toString("utf8")));
        continue;
      }
      entries.set(name, await onEntry(name, classify(name, manifest), manifest, entry));
    }
    await feeding;
  } catch (e) {
    extractor.destroy();
    await feeding.catch(() => {});
    if (e instanceof SyntaxError) throw new BackupError(`${file} is damaged: a manifest is not valid JSON (${e.message})`);
    if (e instanceof BackupError) throw e;
    const message = (e as Error).message;
    if (/unexpected end/i.test(message)) throw new BackupError(`${file} is incomplete: it ends in the middle of an entry (an interrupted copy?)`);
    throw new BackupError(`${file} cannot be read as a backup archive (${message})`);
  }
  if (!manifest) throw new BackupError(`${file} is empty or not a tar archive`);
  if (!objects) throw new BackupError(`${file} is incomplete: it ends before ${OBJECT_LIST} (an interrupted copy?)`);
  return { manifest, manifestSha256, objects, entries };
}

/** The first pass: every check, every sha256, nothing written. */
export function inspectArchive(file: string): Promise<Inspected> {
  return walk(
    file,
    (bytes) => checkManifest(JSON.parse(bytes.toString("utf8"))),
    (_name, _kind, _manifest, source) => hashEntry(source),
  );
}

/**
 * The second pass: each entry written where `place` says (directories created as needed), hashed. Returns what
 * it read, to verify again; refuses an archive whose manifest is not the inspected one.
 */
export async function extractArchive(file: string, inspected: Inspected, place: Placement): Promise<Inspected & { directories: Set<string> }> {
  const directories = new Set<string>();
  const read = await walk(
    file,
    (bytes) => {
      if (sha256Hex(bytes) !== inspected.manifestSha256) throw new BackupError(`${file} changed during the restore: its manifest is not the one checked`);
      return inspected.manifest;
    },
    async (name, kind, _manifest, source) => {
      const { target, mode } = place(name, kind);
      const dir = dirname(target);
      if (!directories.has(dir)) {
        await mkdir(dir, { recursive: true });
        directories.add(dir);
      }
      return writeEntry(source, target, mode);
    },
  );
  return { ...read, directories };
}

async function collect(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    if (!(chunk instanceof Uint8Array)) throw new BackupError("the archive yields an unexpected chunk");
    size += chunk.length;
    if (size > 512 * 1024 * 1024) throw new BackupError("a manifest of more than 512 MB: not an archive of this tool");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function hashEntry(source: AsyncIterable<unknown>): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash("sha256");
  let bytes = 0;
  for await (const chunk of source) {
    if (!(chunk instanceof Uint8Array)) throw new BackupError("the archive yields an unexpected chunk");
    hash.update(chunk);
    bytes += chunk.length;
  }
  return { bytes, sha256: hash.digest("hex") };
}

/** Writes one entry to `target` (a new file: never through an existing one; fsynced), hashing it. */
async function writeEntry(source: AsyncIterable<unknown>, target: string, mode: number): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash("sha256");
  let bytes = 0;
  const handle = await open(target, "wx", mode);
  try {
    for await (const chunk of source) {
      if (!(chunk instanceof Uint8Array)) throw new BackupError("the archive yields an unexpected chunk");
      hash.update(chunk);
      bytes += chunk.length;
      await handle.write(chunk);
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  return { bytes, sha256: hash.digest("hex") };
}
