import { join } from "node:path";
import { z } from "zod";
import type { Strategy } from "../db/repositories/strategies.ts";
import { LocalStorage } from "./local.ts";
import { S3Storage } from "./s3.ts";
import type { Storage } from "./storage.ts";

export type { LocationIdentity, Relation } from "./location.ts";
export type { Storage, StoredObject } from "./storage.ts";
export { StorageError } from "./storage.ts";
export { isMarkerPath, MARKER, type MarkerState, markerText, readMarker, writeMarker } from "./marker.ts";

export const localConfigSchema = z.object({
  root: z.string().min(1).optional().describe("Directory of the objects; default DATA_DIR/uploads"),
  url: z.url().optional().describe("Public address prefix; default BASE_URL/i (served by this server)"),
  legacy_url: z.url().optional().describe("A former public address prefix of these objects (such as Lsky Pro's): its addresses answer 301 to the current ones"),
});

export const s3ConfigSchema = z.object({
  bucket: z.string().min(1),
  endpoint: z.url().optional(),
  region: z.string().optional(),
  access_key_id: z.string().optional(),
  secret_access_key: z.string().optional(),
  prefix: z.string().optional(),
  url: z.url().describe("Public address prefix of the bucket"),
  legacy_url: z.url().optional().describe("A former public address prefix of these objects (such as Lsky Pro's): its addresses answer 301 to the current ones"),
});

interface StorageContext {
  dataDir: string;
  baseUrl: string;
}

/** Builds (and caches) the driver of a strategy from its stored configuration. */
export class StorageRegistry {
  private readonly cache = new Map<string, Storage>();
  constructor(private readonly ctx: StorageContext) {}

  get defaultLocalRoot() {
    return join(this.ctx.dataDir, "uploads");
  }

  for(strategy: Pick<Strategy, "id" | "driver" | "config">): Storage {
    const cacheKey = `${strategy.id}:${JSON.stringify(strategy.config)}`;
    let storage = this.cache.get(cacheKey);
    if (!storage) {
      storage = this.build(strategy);
      this.cache.set(cacheKey, storage);
    }
    return storage;
  }

  private build(strategy: Pick<Strategy, "driver" | "config">): Storage {
    if (strategy.driver === "s3") {
      const c = s3ConfigSchema.parse(strategy.config);
      return new S3Storage({
        bucket: c.bucket,
        endpoint: c.endpoint,
        region: c.region,
        accessKeyId: c.access_key_id,
        secretAccessKey: c.secret_access_key,
        prefix: c.prefix,
        publicUrl: c.url,
      });
    }
    const c = localConfigSchema.parse(strategy.config);
    return new LocalStorage({
      root: c.root ?? this.defaultLocalRoot,
      publicUrl: (c.url ?? `${this.ctx.baseUrl}/i`).replace(/\/+$/, ""),
    });
  }
}
