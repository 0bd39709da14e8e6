const pad = (n: number) => String(n).padStart(2, "0");

/** `YYYY-MM-DD HH:MM:SS` in the server's time zone (TZ), the contract's date format. */
export function formatDateTime(d: Date): string {
  return (
    `${String(d.getFullYear()).padStart(4, "0")}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

const plain = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?$/;
const iso = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(?:Z|([+-])(\d{2}):?(\d{2}))$/i;

/** Whether the fields name a real day and time of day: Date would roll 2026-02-30 over to March 2 and 24:00 to the next day. */
function validFields(y: number, mo: number, d: number, h: number, mi: number, s: number): boolean {
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1];
  return days !== undefined && d >= 1 && d <= days && h <= 23 && mi <= 59 && s <= 59;
}

/** Accepts ISO 8601 with an offset, or `YYYY-MM-DD HH:MM[:SS]` in the server's time zone. */
export function parseDateTime(value: string): Date | null {
  const v = value.trim();
  const m = plain.exec(v);
  if (m) {
    const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
    if (!validFields(y!, mo!, d!, h!, mi!, s || 0)) return null;
    const date = new Date(2000, 0, 1);
    date.setFullYear(y!, mo! - 1, d!); // the Date constructor would read years 0–99 as 1900–1999
    date.setHours(h!, mi!, s || 0, 0);
    // a local time skipped by a daylight-saving change does not exist: Date moves it on instead
    return date.getDate() === d && date.getHours() === h && date.getMinutes() === mi ? date : null;
  }
  const i = iso.exec(v);
  if (!i) return null;
  const [, y, mo, d, h, mi, s] = i.slice(0, 7).map(Number) as number[];
  const [frac, sign, oh, om] = [i[7], i[8], Number(i[9] ?? 0), Number(i[10] ?? 0)];
  if (!validFields(y!, mo!, d!, h!, mi!, s || 0) || oh > 23 || om > 59) return null;
  const date = new Date(Date.UTC(2000, 0, 1));
  date.setUTCFullYear(y!, mo! - 1, d!);
  const offset = (sign === "-" ? -1 : 1) * (oh * 60 + om);
  const ms = frac ? Number(`${frac.slice(1)}00`.slice(0, 3)) : 0; // truncated to milliseconds
  date.setUTCHours(h!, mi! - offset, s || 0, ms);
  return date;
}

/**
 * `YYYY-MM-DD HH:MM UTC`: a date as the user center's pages write it inside `<time datetime="ISO">`, in UTC and
 * saying so; the pages' script rewrites it to the viewer's own time zone (app.js).
 */
export function formatUtc(d: Date): string {
  return `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 16)} UTC`;
}
