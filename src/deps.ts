import type { Db } from "./db/client.ts";
import type { StorageRegistry } from "./storage/index.ts";

export interface Config {
  baseUrl: string;
  dataDir: string;
  adminToken: string;
  /** Take the client address from X-Forwarded-For (only behind a proxy you control). */
  trustProxy: boolean;
}

export interface Deps {
  db: Db;
  storage: StorageRegistry;
  config: Config;
  clock: () => Date;
}
