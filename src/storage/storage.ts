import type { BunFile } from "bun";
import type { LocationIdentity } from "./location.ts";

/** An entry of a storage listing. */
export interface StoredObject {
  /** Relative to the storage, like the paths `put` takes. */
  path: string;
  size: number;
  modifiedAt: Date;
  /** A write's temporary file (local `*.part`, renamed into place when complete), not an object. */
  temporary: boolean;
}

/** Where a strategy keeps its objects. Paths are relative, '/'-separated, produced by the service only. */
export interface Storage {
  /**
   * What the location is (real path and device/inode, or normalised endpoint, bucket and prefix), to compare with
   * other strategies' locations: equal or nested identities see each other's objects (see location.ts).
   */
  identify(): Promise<LocationIdentity>;
  /** Resolves once the object is durable: a record may name it from then on. */
  put(path: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /** Removing an absent object is not an error. */
  delete(path: string): Promise<void>;
  /**
   * Moves an object to another path of the same storage (the reconciler's quarantine), replacing what is there;
   * false when there was no object at `from`.
   */
  move(from: string, to: string): Promise<boolean>;
  exists(path: string): Promise<boolean>;
  /**
   * The object's bytes (objects are images, bounded by the upload limit): how the service reads an original on any
   * storage, S3 included, without going through its public address. A StorageError with `missing` when there is none.
   */
  read(path: string): Promise<Uint8Array>;
  /** Every object (and temporary file) whose path starts with `prefix`, in no particular order. */
  list(prefix?: string): AsyncIterable<StoredObject>;
  /** The public address of an object. */
  url(path: string): string;
  /** The object as a file this server sends itself, or null where the storage serves its own addresses (S3). */
  readableFile(path: string): BunFile | null;
}

export class StorageError extends Error {
  constructor(
    message: string,
    /** The object is not there (as opposed to a storage that failed). */
    readonly missing = false,
    /** The driver's own error (its code says what failed: EACCES, AccessDenied…). */
    cause?: unknown,
  ) {
    super(message, { cause });
  }
}
