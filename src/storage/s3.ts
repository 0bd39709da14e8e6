import { S3Client } from "bun";
import { normaliseKeyPrefix, s3Identity } from "./location.ts";
import { type Storage, StorageError, type StoredObject } from "./storage.ts";

interface S3Config {
  bucket: string;
  endpoint?: string;
  region?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Public prefix of the bucket, e.g. https://cdn.example.com */
  publicUrl: string;
  /** Optional key prefix inside the bucket. */
  prefix?: string;
  /** Keys per listing request (S3 answers at most 1,000). */
  listPageSize?: number;
}

/** S3-compatible object storage through Bun's built-in client. */
export class S3Storage implements Storage {
  private readonly client: S3Client;
  /** Prepended to every path: the configured prefix with one trailing slash, or nothing. */
  private readonly keyPrefix: string;
  constructor(private readonly config: S3Config) {
    this.client = new S3Client({
      bucket: config.bucket,
      endpoint: config.endpoint,
      region: config.region,
      accessKeyId: config.accessKeyId,
      secretAccessKey: config.secretAccessKey,
    });
    this.keyPrefix = normaliseKeyPrefix(config.prefix);
  }

  async identify() {
    return s3Identity(this.config);
  }

  private key(path: string) {
    return this.keyPrefix + path;
  }

  async put(path: string, bytes: Uint8Array, contentType: string) {
    try {
      await this.client.write(this.key(path), bytes, { type: contentType });
    } catch (e) {
      throw new StorageError(`s3 write failed: ${(e as Error).message}`, false, e);
    }
  }

  async delete(path: string) {
    try {
      await this.client.delete(this.key(path));
    } catch (e) {
      if ((e as { code?: string }).code === "NoSuchKey") return;
      throw new StorageError(`s3 delete failed: ${(e as Error).message}`);
    }
  }

  /**
   * Copy then delete (Bun's client has no server-side copy; objects are images, bounded by the upload limit): the
   * copy is complete and of the same size before the original goes.
   */
  async move(from: string, to: string) {
    try {
      const source = this.client.file(this.key(from));
      let info;
      try {
        info = await source.stat();
      } catch (e) {
        if ((e as { code?: string }).code === "NoSuchKey" || /not ?found|404/i.test((e as Error).message)) return false;
        throw e;
      }
      const bytes = new Uint8Array(await source.arrayBuffer());
      if (bytes.length !== info.size) throw new Error(`read ${bytes.length} of ${info.size} bytes`);
      await this.client.write(this.key(to), bytes, { type: info.type });
      const copied = await this.client.stat(this.key(to));
      if (copied.size !== info.size) throw new Error(`the copy holds ${copied.size} of ${info.size} bytes`);
      await this.client.delete(this.key(from));
      return true;
    } catch (e) {
      throw new StorageError(`s3 move failed: ${(e as Error).message}`);
    }
  }

  async exists(path: string) {
    try {
      return await this.client.exists(this.key(path));
    } catch (e) {
      throw new StorageError(`s3 request failed: ${(e as Error).message}`);
    }
  }

  /** GetObject with the strategy's credentials: the bucket need not be public, nor its public address reachable from here. */
  async read(path: string) {
    try {
      return await this.client.file(this.key(path)).bytes();
    } catch (e) {
      const missing = (e as { code?: string }).code === "NoSuchKey" || /not ?found|404/i.test((e as Error).message);
      throw new StorageError(`s3 read failed: ${(e as Error).message}`, missing);
    }
  }

  /** ListObjectsV2, page after page; keys outside the configured prefix are never listed. */
  async *list(prefix = ""): AsyncIterable<StoredObject> {
    let continuationToken: string | undefined;
    do {
      let page;
      try {
        page = await this.client.list({ prefix: this.key(prefix), maxKeys: this.config.listPageSize, continuationToken });
      } catch (e) {
        throw new StorageError(`s3 listing failed: ${(e as Error).message}`);
      }
      for (const object of page.contents ?? []) {
        const path = object.key.slice(this.keyPrefix.length);
        if (!object.key.startsWith(this.keyPrefix) || !path) continue;
        // an object without a date counts as just written: it is never judged old
        const modifiedAt = object.lastModified ? new Date(object.lastModified) : new Date();
        yield { path, size: object.size ?? 0, modifiedAt, temporary: false };
      }
      continuationToken = page.isTruncated ? page.nextContinuationToken : undefined;
    } while (continuationToken);
  }

  readableFile() {
    return null;
  }

  url(path: string) {
    return `${this.config.publicUrl.replace(/\/+$/, "")}/${this.key(path).split("/").map(encodeURIComponent).join("/")}`;
  }
}
