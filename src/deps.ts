import type { BodyGateLimits } from "./http/body-gate.ts";
import type { ThrottleLimits } from "./http/throttle.ts";
import type { Db } from "./db/client.ts";
import type { StorageRegistry } from "./storage/index.ts";
import type { Logger } from "./observability/log.ts";
import type { PoolReader } from "./observability/metrics.ts";
import type { WebhookSettings } from "./webhooks/settings.ts";
import type { SmtpConfig } from "./services/mail/config.ts";

export interface Config {
  baseUrl: string;
  dataDir: string;
  adminToken: string;
  /**
   * How many proxies of yours stand in front of the server: the client address is the entry that many places
   * from the right of X-Forwarded-For (the one your outermost proxy appended). 0: the socket's address.
   */
  trustedProxies: number;
  /** Failed authentications allowed per client address (default: 30 at once, 30 a minute). */
  authFailures?: ThrottleLimits;
  /** Upload bodies received at once, per client address and in total (default 4 and 64). */
  uploadBodies?: Partial<BodyGateLimits>;
  /** Seconds an upload body may take to arrive (default 60). */
  uploadReadTimeoutSeconds?: number;
  /** How long any other request body (API JSON, user-center forms) may take to arrive (408 beyond). */
  bodyReadTimeoutSeconds?: number;
  /** When set, GET /metrics needs `Authorization: Bearer <metricsToken>`; otherwise it answers loopback clients only. */
  metricsToken?: string;
  /** The database in use, as the admin overview names it (absent in tests that build their own). */
  database?: { kind: "embedded" | "external"; detail: string };
  /** The webhooks' secret key, allow list and delivery bounds. */
  webhooks?: WebhookSettings;
  /** The SMTP server the environment gives (SMTP_HOST…); it wins over the admin Settings' (services/mail/config.ts). */
  mail?: SmtpConfig;
}

export interface Deps {
  db: Db;
  storage: StorageRegistry;
  config: Config;
  clock: () => Date;
  /** The service's logger (default: one from LOG_FORMAT and LOG_LEVEL, writing to standard output). */
  log?: Logger;
  /** Reads how many connections of this instance's pool are open and in use (for /metrics). */
  pool?: PoolReader;
}
