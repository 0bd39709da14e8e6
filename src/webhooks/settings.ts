import type { Deps } from "../deps.ts";
import type { AllowList, Resolver } from "./address-guard.ts";
import type { SecretBox } from "./secret-box.ts";

/**
 * The retry schedule: the first attempt at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h:
 * 8 attempts over 27 h 35 min. An endpoint whose attempts have all failed for a day is disabled.
 */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
export const DISABLE_AFTER_MS = 24 * 3_600_000;

export interface WebhookSettings {
  box: SecretBox;
  /**
   * WEBHOOK_ALLOW: hosts and ranges a webhook may reach although they are loopback, private or link-local. Site-wide
   * endpoints only, and a user's own endpoints where the user's group has webhook_allow_internal.
   */
  allow: AllowList;
  /** Delays before the 2nd, 3rd… attempt (default RETRY_DELAYS_MS). */
  retryDelaysMs?: number[];
  /** Failing this long disables an endpoint (default a day). */
  disableAfterMs?: number;
  /** An attempt's whole time: connect, answer and (bounded) body (default 10 s). */
  timeoutMs?: number;
  /** Deliveries at once to one endpoint from this instance (default 4). */
  perEndpoint?: number;
  /** Deliveries at once to one account's endpoints together from this instance (default deliver.ts PER_ACCOUNT). */
  perAccount?: number;
  /** Deliveries at once to all users' endpoints together from this instance (default deliver.ts USERS_IN_FLIGHT); site-wide ones apart. */
  usersInFlight?: number;
  /** Tests: DNS answers. */
  resolve?: Resolver;
}

export function webhookSettings(deps: Pick<Deps, "config">): WebhookSettings {
  const settings = deps.config.webhooks;
  if (!settings) throw new Error("webhooks are not configured (Config.webhooks)");
  return settings;
}
