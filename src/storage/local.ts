import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { dirname, resolve, sep } from "node:path";
import { type Storage, StorageError } from "./storage.ts";

export interface LocalConfig {
  root: string;
  /** Public prefix, e.g. https://img.example.com/i */
  publicUrl: string;
}

export class LocalStorage implements Storage {
  readonly root: string;
  constructor(private readonly config: LocalConfig) {
    this.root = resolve(config.root);
  }

  /** The absolute file for a relative path, or null when the path would leave the root. */
  private resolve(path: string): string | null {
    if (!path || path.includes("\0") || path.includes("\\")) return null;
    const full = resolve(this.root, path);
    return full.startsWith(this.root + sep) ? full : null;
  }

  async put(path: string, bytes: Uint8Array) {
    const full = this.mustResolve(path);
    // write then rename: a reader never sees a half-written object
    const temp = `${full}.${process.pid}.${crypto.randomUUID()}.part`;
    try {
      await mkdir(dirname(full), { recursive: true });
      await writeFile(temp, bytes, { flag: "wx" });
      await rename(temp, full);
    } catch (e) {
      await rm(temp, { force: true });
      throw new StorageError(`local write failed: ${(e as Error).message}`);
    }
  }

  async delete(path: string) {
    try {
      await rm(this.mustResolve(path), { force: true });
    } catch (e) {
      throw new StorageError(`local delete failed: ${(e as Error).message}`);
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
