import { S3Client } from "bun";
import { type Storage, StorageError } from "./storage.ts";

export interface S3Config {
  bucket: string;
  endpoint?: string;
  region?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Public prefix of the bucket, e.g. https://cdn.example.com */
  publicUrl: string;
  /** Optional key prefix inside the bucket. */
  prefix?: string;
}

/** S3-compatible object storage through Bun's built-in client. */
export class S3Storage implements Storage {
  private readonly client: S3Client;
  constructor(private readonly config: S3Config) {
    this.client = new S3Client({
      bucket: config.bucket,
      endpoint: config.endpoint,
      region: config.region,
      accessKeyId: config.accessKeyId,
      secretAccessKey: config.secretAccessKey,
    });
  }

  private key(path: string) {
    return (this.config.prefix ? `${this.config.prefix.replace(/\/+$/, "")}/` : "") + path;
  }

  async put(path: string, bytes: Uint8Array, contentType: string) {
    try {
      await this.client.write(this.key(path), bytes, { type: contentType });
    } catch (e) {
      throw new StorageError(`s3 write failed: ${(e as Error).message}`);
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

  readableFile() {
    return null;
  }

  url(path: string) {
    return `${this.config.publicUrl.replace(/\/+$/, "")}/${this.key(path).split("/").map(encodeURIComponent).join("/")}`;
  }
}
