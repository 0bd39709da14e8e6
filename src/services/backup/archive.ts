/** The backup archive written as a tar stream: the manifest, the spooled tables, the admin token, the objects, the object list. */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { open, readFile } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import tar from "tar-stream";
import { StorageRegistry } from "../../storage/index.ts";
import { LocalStorage } from "../../storage/local.ts";
import { BackupError, isSafeRelativePath, MANIFEST, type Manifest, OBJECT_LIST, type ObjectList, sha256Hex } from "./format.ts";
import type { Tx } from "./snapshot.ts";

export async function writeArchive(
  tx: Tx,
  manifest: Manifest,
  o: { dataDir: string; spool: string; temp: string; gzip: boolean },
): Promise<{ manifest: Manifest; objects: ObjectList }> {
  const pack = tar.pack();
  const sink = createWriteStream(o.temp, { mode: 0o600 });
  const done = o.gzip ? pipeline(pack, createGzip(), sink) : pipeline(pack, sink);
  // a failure of the file (disk full) must end the waits on the pack
  const failed = done.then(
    () => new Promise<never>(() => {}),
    (e: unknown) => Promise.reject(e),
  );
  failed.catch(() => {});
  const guard = <T>(p: Promise<T>) => Promise.race([p, failed]);
  const now = new Date(manifest.created_at);

  await guard(addBuffer(pack, { name: MANIFEST, mode: 0o600, mtime: now }, Buffer.from(JSON.stringify(manifest, null, 2))));
  for (const t of manifest.database.tables) {
    const source = join(o.spool, `${t.name}.copy`);
    await guard(addStream(pack, { name: t.file, size: t.bytes, mode: 0o600, mtime: now }, createReadStream(source), guard));
  }
  for (const f of manifest.files) {
    const bytes = await readFile(join(o.dataDir, f.name));
    if (sha256Hex(bytes) !== f.sha256) throw new BackupError(`${f.name} changed during the backup: run it again`);
    await guard(addBuffer(pack, { name: f.name, mode: 0o600, mtime: now }, bytes));
  }

  const registry = new StorageRegistry({ dataDir: o.dataDir, baseUrl: "http://localhost" });
  const strategies = await tx<{ id: number; driver: string; config: Record<string, unknown> }[]>`select id, driver, config from strategies`;
  const locals = new Map<number, { storage: LocalStorage; prefix: string }>();
  for (const s of strategies) {
    if (s.driver !== "local") continue;
    const storage = registry.for({ id: s.id, driver: "local", config: s.config });
    const root = manifest.storage.roots.find((r) => r.strategy_ids.includes(s.id));
    if (storage instanceof LocalStorage && root) locals.set(s.id, { storage, prefix: root.prefix });
  }

  const list: ObjectList = { count: 0, bytes: 0, objects: [], dropped_images: [], s3_images: 0 };
  const images = tx<{ id: string; key: string; strategy_id: number; path: string; thumbnail_path: string | null }[]>`
    select id::text as id, key, strategy_id, path, thumbnail_path from images order by id`.cursor(500);
  for await (const rows of images) {
    for (const image of rows) {
      const local = locals.get(image.strategy_id);
      if (!local) {
        list.s3_images++;
        continue;
      }
      const paths = [...new Set([image.path, image.thumbnail_path].filter((p): p is string => p !== null))];
      // open every object of the image first: all of them are copied, or the image is left out
      const opened: { path: string; handle: Awaited<ReturnType<typeof open>> }[] = [];
      const missing: string[] = [];
      for (const path of paths) {
        const full = isSafeRelativePath(path) ? local.storage.readableFile(path)?.name : undefined;
        try {
          if (!full) throw Object.assign(new Error("not a path of this storage"), { code: "ENOENT" });
          opened.push({ path, handle: await open(full, "r") });
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "ENOENT") {
            await Promise.all(opened.map((f) => f.handle.close()));
            throw e;
          }
          missing.push(path);
        }
      }
      if (missing.length > 0) {
        await Promise.all(opened.map((f) => f.handle.close()));
        list.dropped_images.push({ id: Number(image.id), key: image.key, missing });
        continue;
      }
      for (const { path, handle } of opened) {
        try {
          const info = await handle.stat();
          const name = `${local.prefix}/${path}`;
          const sha256 = await guard(
            addStream(pack, { name, size: info.size, mode: 0o644, mtime: info.mtime }, handle.createReadStream({ autoClose: false }), guard),
          );
          list.objects.push({ name, bytes: info.size, sha256 });
          list.count++;
          list.bytes += info.size;
        } finally {
          await handle.close();
        }
      }
    }
  }
  await guard(addBuffer(pack, { name: OBJECT_LIST, mode: 0o600, mtime: new Date() }, Buffer.from(JSON.stringify(list, null, 2))));
  pack.finalize();
  await done;
  return { manifest, objects: list };
}

type TarHeader = { name: string; size?: number; mode: number; mtime: Date };

function addBuffer(pack: tar.Pack, header: TarHeader, bytes: Buffer): Promise<string> {
  return new Promise((done, fail) => {
    pack.entry({ ...header, size: bytes.length, type: "file" }, bytes, (e) => (e ? fail(e) : done(sha256Hex(bytes))));
  });
}

/** Streams `source` into a new entry of `header.size` bytes; resolves with its sha256. */
async function addStream(pack: tar.Pack, header: TarHeader, source: AsyncIterable<unknown>, guard: <T>(p: Promise<T>) => Promise<T>): Promise<string> {
  const hash = createHash("sha256");
  const { promise: finished, resolve: done, reject: fail } = Promise.withResolvers<void>();
  finished.catch(() => {});
  const entry = pack.entry({ ...header, type: "file" }, (err) => (err ? fail(err) : done()));
  let written = 0;
  try {
    for await (const chunk of source) {
      if (!(chunk instanceof Uint8Array)) throw new BackupError(`${header.name}: unexpected chunk`);
      hash.update(chunk);
      written += chunk.length;
      if (written > (header.size ?? 0)) throw new BackupError(`${header.name} grew while it was copied`);
      if (!entry.write(chunk)) await guard(new Promise<void>((drained) => entry.once("drain", () => drained())));
    }
    if (written !== header.size) throw new BackupError(`${header.name} shrank while it was copied`);
    entry.end(undefined);
    await guard(finished);
  } catch (e) {
    entry.destroy(e as Error);
    throw e;
  }
  return hash.digest("hex");
}
