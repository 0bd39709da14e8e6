import type { BunFile } from "bun";

/** Where a strategy keeps its objects. Paths are relative, '/'-separated, produced by the service only. */
export interface Storage {
  put(path: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /** Removing an absent object is not an error. */
  delete(path: string): Promise<void>;
  /** The public address of an object. */
  url(path: string): string;
  /** The object as a file this server sends itself, or null where the storage serves its own addresses (S3). */
  readableFile(path: string): BunFile | null;
}

export class StorageError extends Error {}
