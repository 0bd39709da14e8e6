/** Reading an archive: each entry written where it belongs in the staging directories, and hashed. */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import type { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import tar from "tar-stream";
import { ADMIN_TOKEN, BackupError, isSafeRelativePath, MANIFEST, type Manifest, OBJECT_LIST, type ObjectList } from "./format.ts";
import { checkManifest } from "./manifest.ts";
import { assertEmpty, type Staged, stageDirectory } from "./staging.ts";

export interface Extracted {
  manifest: Manifest;
  objects: ObjectList;
  /** Every entry written, by name: its size and sha256. */
  entries: Map<string, { bytes: number; sha256: string }>;
  /** Directories objects were written to (synced before the rename). */
  targets: Set<string>;
}

/** Reads the archive once, writing every entry where it belongs in the staging directories and hashing it. */
export async function extract(file: string, dataDir: string, main: Staged, others: Map<string, Staged>, work: string): Promise<Extracted> {
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
  let objects: ObjectList | undefined;
  const entries = new Map<string, { bytes: number; sha256: string }>();
  const targets = new Set<string>();
  /** Archive prefix (`uploads`, `roots/0`) → directory the objects go to. */
  const rootDirs = new Map<string, string>();
  const createdDirs = new Set<string>();

  try {
    for await (const entry of extractor) {
      const { name, type } = entry.header;
      if (type !== "file") throw new BackupError(`the archive holds ${name} of type ${type}: not an archive of this tool`);
      if (entries.has(name) || name === MANIFEST && manifest) throw new BackupError(`the archive holds ${name} twice`);
      if (!manifest) {
        if (name !== MANIFEST) throw new BackupError(`${file} is not a backup of this service (its first entry is ${name}, not ${MANIFEST})`);
        manifest = checkManifest(JSON.parse((await collect(entry)).toString("utf8")));
        for (const root of manifest.storage.roots) rootDirs.set(root.prefix, await rootDirectory(root, dataDir, main, others));
        continue;
      }
      if (name === OBJECT_LIST) {
        objects = JSON.parse((await collect(entry)).toString("utf8")) as ObjectList;
        continue;
      }
      if (objects) throw new BackupError(`the archive holds ${name} after ${OBJECT_LIST}`);
      let target: string | undefined;
      let mode = 0o644;
      const table = manifest.database.tables.find((t) => t.file === name);
      if (table) {
        target = join(work, `${table.name}.copy`);
        mode = 0o600;
      } else if (name === ADMIN_TOKEN && manifest.files.some((f) => f.name === ADMIN_TOKEN)) {
        target = join(main.path, ADMIN_TOKEN);
        mode = 0o600;
      } else {
        const root = [...rootDirs.keys()].find((prefix) => name.startsWith(`${prefix}/`));
        const path = root === undefined ? "" : name.slice(root.length + 1);
        if (root === undefined || !isSafeRelativePath(path)) throw new BackupError(`the archive holds an unexpected entry: ${name}`);
        target = join(rootDirs.get(root)!, ...path.split("/"));
      }
      const dir = dirname(target);
      if (!createdDirs.has(dir)) {
        await mkdir(dir, { recursive: true });
        createdDirs.add(dir);
      }
      if (!table && name !== ADMIN_TOKEN) targets.add(dir);
      entries.set(name, await writeEntry(entry, target, mode));
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
  return { manifest, objects, entries, targets };
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

/** Writes one entry to `target` (fsynced), hashing it. */
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

/**
 * Where the objects of a root go: DATA_DIR/uploads for the default root; for a root of its own, its configured
 * directory (resolved as the server resolves it), inside the staging directory when it lies within DATA_DIR,
 * otherwise staged on its own; it must be empty or absent.
 */
async function rootDirectory(root: Manifest["storage"]["roots"][number], dataDir: string, main: Staged, others: Map<string, Staged>) {
  if (root.config_root === null) return join(main.path, "uploads");
  const dir = resolve(root.config_root);
  if (dir === dataDir) throw new BackupError(`a local strategy's root is DATA_DIR itself (${dir}): restore its objects by hand`);
  if (dir.startsWith(dataDir + sep)) return join(main.path, dir.slice(dataDir.length + 1));
  const existing = others.get(dir);
  if (existing) return existing.path;
  await assertEmpty(dir, `the root of local strategies ${root.strategy_ids.join(", ")}`);
  const staged = await stageDirectory(dir);
  others.set(dir, staged);
  return staged.path;
}

