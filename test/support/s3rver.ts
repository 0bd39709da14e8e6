/**
 * s3rver, an S3 implementation, running in the test's own process on loopback with one bucket ("images"): what the
 * S3 suites store to, and the strategy configuration that points at it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { S3Client } from "bun";
// @ts-expect-error s3rver ships no types
import S3rver from "s3rver";

export interface LocalS3 {
  endpoint: string;
  /** The bucket, as the tests read it (with s3rver's fixed credentials). */
  bucket: S3Client;
  /** An S3 strategy's `config` on this bucket. */
  strategyConfig(prefix: string, url: string): Record<string, string>;
  close(): Promise<void>;
}

export async function startLocalS3(name: string): Promise<LocalS3> {
  const dir = mkdtempSync(join(tmpdir(), `imghost-${name}-`));
  const server = new S3rver({ port: 0, address: "127.0.0.1", silent: true, directory: dir, configureBuckets: [{ name: "images" }] });
  const { port } = (await server.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${port}`;
  const credentials = { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" };
  return {
    endpoint,
    bucket: new S3Client({ bucket: "images", endpoint, region: "us-east-1", ...credentials }),
    strategyConfig: (prefix, url) => ({
      bucket: "images",
      endpoint,
      region: "us-east-1",
      access_key_id: credentials.accessKeyId,
      secret_access_key: credentials.secretAccessKey,
      prefix,
      url,
    }),
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
