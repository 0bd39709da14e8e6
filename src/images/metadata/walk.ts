/** What every container walk of the metadata surgery shares: the verification's findings, and a few byte helpers. */
import type { StripPolicy } from "./tiff.ts";

/**
 * Where the verification found location: units containing one of `at` are dropped whole; `covered` collects the
 * positions that fell in a unit that could be dropped.
 */
export interface Drop {
  at: number[];
  covered: Set<number>;
  /** Only walk, under the caps: nothing is built (checkContainer). */
  check?: boolean;
}
export const noDrop = (): Drop => ({ at: [], covered: new Set() });
/** Whether [start, end) holds a finding; marks it covered. */
export function holdsFinding(drop: Drop, start: number, end: number): boolean {
  let hit = false;
  for (const at of drop.at) {
    if (at >= start && at < end) {
      drop.covered.add(at);
      hit = true;
    }
  }
  return hit;
}

export type Stripper = (b: Uint8Array, policy: StripPolicy, removed: Set<string>, drop: Drop) => Uint8Array;
export const checking = (drop: Drop) => drop.check === true;

/** Latin-1 text of a few bytes (a chunk type, a keyword): without a Buffer per call, which a walk over thousands of chunks would feel. */
export function ascii(b: Uint8Array, start: number, length: number): string {
  const end = Math.min(b.length, start + length);
  if (end - start > 64) return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("latin1", start, end);
  let text = "";
  for (let i = start; i < end; i++) text += String.fromCharCode(b[i]!);
  return text;
}
export const startsWith = (b: Uint8Array, start: number, text: string) => b.length >= start + text.length && ascii(b, start, text.length) === text;

export function concat(parts: Uint8Array[]): Uint8Array {
  const total = parts.reduce((n, p) => n + p.byteLength, 0);
  // not zero-filled: every byte is written below (a few MB of zeroes cost more than the whole walk)
  const out = new Uint8Array(Buffer.allocUnsafeSlow(total).buffer, 0, total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
