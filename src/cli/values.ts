/** Parsers for argument and option values; `label` names the value in the error message. */
import { usageError } from "./errors.ts";

export function parseBool(value: string, label: string): boolean {
  const v = value.toLowerCase();
  if (v === "true") return true;
  if (v === "false") return false;
  throw usageError(`${label} must be true or false, got '${value}'`);
}

export function parseInteger(value: string, label: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw usageError(`${label} must be an integer, got '${value}'`);
  return Number(value.trim());
}

export const parseNullableInteger = (value: string, label: string) => (value === "null" ? null : parseInteger(value, label));

export function parseId(value: string, label: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw usageError(`${label} must be a positive integer id, got '${value}'`);
  return Number(value);
}

/** `--capacity`: kilobytes, or `default` (or `null`) for the group's default capacity. */
export const parseCapacity = (value: string) => (value === "default" || value === "null" ? null : parseInteger(value, "--capacity"));

export const splitList = (value: string) =>
  value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

export function parseJsonObject(value: string, label: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (e) {
    throw usageError(`${label} must be a JSON object: ${(e as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw usageError(`${label} must be a JSON object`);
  return parsed as Record<string, unknown>;
}
