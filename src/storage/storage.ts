import type { BunFile } from "bun";

/** An entry of a storage listing. */
export interface StoredObject {
  /** Relative to the storage, like the paths `put` takes. */
  path: string;
  size: number;
  modifiedAt: Date;
  /** A write's temporary file (local `*.part`, renamed into place when complete), not an object. */
  temporary: boolean;
}

/**
 * Where a storage keeps its objects: `prefix` + path is an object's full key inside `space` (a filesystem, a
 * bucket). Two strategies whose locations are equal or nested see each other's objects.
 */
export interface StorageLocation {
  space: string;
  prefix: string;
}

/** Where a strategy keeps its objects. Paths are relative, '/'-separated, produced by the service only. */
export interface Storage {
  readonly location: StorageLocation;
  /** Resolves once the object is durable: a record may name it from then on. */
  put(path: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /** Removing an absent object is not an error. */
  delete(path: string): Promise<void>;
  exists(path: string): Promise<boolean>;
  /** Every object (and temporary file) whose path starts with `prefix`, in no particular order. */
  list(prefix?: string): AsyncIterable<StoredObject>;
  /** The public address of an object. */
  url(path: string): string;
  /** The object as a file this server sends itself, or null where the storage serves its own addresses (S3). */
  readableFile(path: string): BunFile | null;
}

export class StorageError extends Error {}
