const pad = (n: number) => String(n).padStart(2, "0");

/** `YYYY-MM-DD HH:MM:SS` in the server's time zone (TZ), the contract's date format. */
export function formatDateTime(d: Date): string {
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

const plain = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?$/;
const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i;

/** Accepts ISO 8601 with an offset, or `YYYY-MM-DD HH:MM[:SS]` in the server's time zone. */
export function parseDateTime(value: string): Date | null {
  const m = plain.exec(value.trim());
  if (m) {
    const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
    const date = new Date(y!, mo! - 1, d!, h!, mi!, s || 0);
    // reject 2026-02-31 and friends instead of rolling over
    return date.getMonth() === mo! - 1 && date.getDate() === d && date.getHours() === h ? date : null;
  }
  if (!iso.test(value.trim())) return null;
  const t = Date.parse(value.trim());
  return Number.isNaN(t) ? null : new Date(t);
}
