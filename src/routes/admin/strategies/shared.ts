import type { z } from "@hono/zod-openapi";
import type { Strategy } from "../../../db/repositories/strategies.ts";
import { validationError } from "../../../errors.ts";
import { envelope } from "../../../http/schemas.ts";
import { fieldErrors } from "../../../http/validation.ts";
import { localConfigSchema, s3ConfigSchema } from "../../../storage/index.ts";
import { AdminStrategy } from "../common.ts";

export const StrategyResponse = envelope(AdminStrategy, "AdminStrategyResponse");

export function toOutput(s: Strategy): z.infer<typeof AdminStrategy> {
  const config = { ...s.config };
  if (config.secret_access_key) config.secret_access_key = "********";
  return { id: s.id, name: s.name, driver: s.driver, config, quota_kb: s.quotaKb, used_kb: s.usedBytes / 1024, enabled: s.enabled };
}

export function checkConfig(driver: "local" | "s3", config: unknown) {
  const parsed = (driver === "s3" ? s3ConfigSchema : localConfigSchema).strict().safeParse(config ?? {});
  if (!parsed.success) {
    const errors = fieldErrors(parsed.error);
    throw validationError(Object.fromEntries(Object.entries(errors).map(([k, v]) => [`config.${k}`, v])));
  }
  return parsed.data as Record<string, unknown>;
}
