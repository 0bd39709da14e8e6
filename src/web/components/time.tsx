/** Times and sizes as every page writes them. */
import { formatUtc } from "../../http/time.ts";
import { num } from "../i18n/index.ts";

/**
 * An instant as `<time datetime="ISO">YYYY-MM-DD HH:MM UTC</time>`: the same text in every language, which the pages'
 * script (app.js) rewrites to the viewer's own time zone.
 */
export const UtcTime = ({ at }: { at: Date }) => <time datetime={at.toISOString()}>{formatUtc(at)}</time>;

const UNITS = ["B", "KB", "MB", "GB", "TB", "PB"];

/** 1536 → "1.5 KB" (units of 1024, as the API's KB), the number in the page's locale. */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = unit === 0 || value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${num(Number(value.toFixed(digits)), { maximumFractionDigits: digits, useGrouping: false })} ${UNITS[unit]}`;
}

export const Bytes = ({ bytes }: { bytes: number }) => <>{formatBytes(bytes)}</>;
