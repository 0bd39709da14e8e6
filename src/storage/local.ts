import { lstat, mkdir, open, readdir, rename, rm } from "node:fs/promises";
import { dirname, resolve, sep } from "node:path";
import { localIdentity } from "./location.ts";
import { type Storage, StorageError, type StoredObject } from "./storage.ts";

interface LocalConfig {
  root: string;
  /** Public prefix, e.g. https://img.example.com/i */
  publicUrl: string;
}

const TEMPORARY_SUFFIX = ".part";

export class LocalStorage implements Storage {
  readonly root: string;
  /** Directories whose own entry (and their parents', up to the root's) this storage has synced. */
  private readonly durableDirectories = new Set<string>();
  constructor(private readonly config: LocalConfig) {
    this.root = resolve(config.root);
  }

  /** Read afresh each time: the root may be created, or a link in its path changed, after the storage was built. */
  identify() {
    return localIdentity(this.root);
  }

  /** The absolute file for a relative path, or null when the path would leave the root. */
  private resolve(path: string): string | null {
    if (!path || path.includes("\0") || path.includes("\\")) return null;
    const full = resolve(this.root, path);
    return full.startsWith(this.root + sep) ? full : null;
  }

  /**
   * Write then rename, so a reader never sees a half-written object. The file, then the directory entry of the
   * rename, reach the disk before this resolves; so do the entries of the directories above it, once each (a
   * directory another put created may not be synced yet: each storage syncs every ancestor it relies on itself).
   */
  async put(path: string, bytes: Uint8Array) {
    const full = this.mustResolve(path);
    const temp = `${full}.${process.pid}.${crypto.randomUUID()}${TEMPORARY_SUFFIX}`;
    try {
      const firstCreated = await mkdir(dirname(full), { recursive: true });
      const file = await open(temp, "wx");
      try {
        await file.writeFile(bytes);
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(temp, full);
      await this.syncDirectories(dirname(full), firstCreated);
    } catch (e) {
      // best effort: under a root that is not a directory Bun's rm fails too (EFAULT), which would hide the cause
      await rm(temp, { force: true }).catch(() => {});
      throw new StorageError(`local write failed: ${(e as Error).message}`, false, e);
    }
  }

  private async syncDirectories(dir: string, firstCreated: string | undefined) {
    if (firstCreated) for (let d = dir; d.length >= firstCreated.length; d = dirname(d)) this.durableDirectories.delete(d);
    const changed = new Set([dir]);
    const entries: string[] = [];
    for (let d = dir; !this.durableDirectories.has(d) && d !== dirname(this.root); d = dirname(d)) {
      changed.add(dirname(d));
      entries.push(d);
    }
    await Promise.all([...changed].map(syncPath));
    for (const d of entries) this.durableDirectories.add(d);
  }

  async delete(path: string) {
    try {
      await rm(this.mustResolve(path), { force: true });
    } catch (e) {
      throw new StorageError(`local delete failed: ${(e as Error).message}`);
    }
  }

  /** A rename inside the root (one filesystem: atomic), its directories synced like a put's. */
  async move(from: string, to: string) {
    const source = this.mustResolve(from);
    const target = this.mustResolve(to);
    try {
      const firstCreated = await mkdir(dirname(target), { recursive: true });
      try {
        await rename(source, target);
      } catch (e) {
        if (isMissing(e)) return false;
        throw e;
      }
      await this.syncDirectories(dirname(target), firstCreated);
      await syncPath(dirname(source));
      return true;
    } catch (e) {
      throw new StorageError(`local move failed: ${(e as Error).message}`);
    }
  }

  async exists(path: string) {
    const full = this.resolve(path);
    return full !== null && (await Bun.file(full).exists());
  }

  async read(path: string) {
    try {
      return await Bun.file(this.mustResolve(path)).bytes();
    } catch (e) {
      if (e instanceof StorageError) throw e;
      throw new StorageError(`local read failed: ${(e as Error).message}`, isMissing(e));
    }
  }

  /** Walks the directories under the root (from the deepest one the prefix names); files vanishing meanwhile are left out. */
  async *list(prefix = ""): AsyncIterable<StoredObject> {
    const start = prefix.includes("/") ? this.resolve(prefix.slice(0, prefix.lastIndexOf("/"))) : this.root;
    if (!start) return;
    const pending = [start];
    while (pending.length > 0) {
      const dir = pending.pop()!;
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if (isMissing(e)) continue;
        throw new StorageError(`local listing failed: ${(e as Error).message}`);
      }
      for (const entry of entries) {
        const full = `${dir}${sep}${entry.name}`;
        if (entry.isDirectory()) {
          pending.push(full);
          continue;
        }
        const path = full
          .slice(this.root.length + 1)
          .split(sep)
          .join("/");
        if (!path.startsWith(prefix)) continue;
        const stats = await lstat(full).catch((e) => {
          if (isMissing(e)) return null;
          throw new StorageError(`local listing failed: ${(e as Error).message}`);
        });
        if (stats) yield { path, size: stats.size, modifiedAt: stats.mtime, temporary: path.endsWith(TEMPORARY_SUFFIX) };
      }
    }
  }

  readableFile(path: string) {
    const full = this.resolve(path);
    return full ? Bun.file(full) : null;
  }

  url(path: string) {
    return `${this.config.publicUrl}/${path.split("/").map(encodeURIComponent).join("/")}`;
  }

  private mustResolve(path: string) {
    const full = this.resolve(path);
    if (!full) throw new StorageError("path escapes the storage root");
    return full;
  }
}

const isMissing = (e: unknown) => (e as NodeJS.ErrnoException).code === "ENOENT";

/** fsync of a file or a directory (the entry a rename made durable). */
export async function syncPath(path: string) {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
