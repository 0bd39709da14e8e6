/** Where the CLI writes, and the shapes it prints: JSON under --json, else key/value lists and tables. */

export interface Io {
  out(s: string): void;
  err(s: string): void;
  /**
   * Reads a secret (a password) from standard input: typed at a prompt without echo on a terminal, else the first
   * line of what is piped in. On a terminal, `repeat` asks a second time and the two must agree. Never from the
   * command line, where the process list and the shell history would keep it.
   */
  readSecret?(prompt: string, repeat?: string): Promise<string>;
}

function formatValue(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(Math.round(v * 100) / 100);
  if (Array.isArray(v)) return v.map(formatValue).join(",");
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/** A table cell: absent values show as `-`. */
export const cell = (v: unknown) => (v === null || v === undefined ? "-" : formatValue(v));

export class Output {
  constructor(
    private readonly io: Io,
    private readonly json: boolean,
  ) {}

  /** Prints the response data as JSON under --json; otherwise runs `human`, which prints with the methods below. */
  result(data: unknown, human: () => void) {
    if (this.json) this.io.out(JSON.stringify(data, null, 2));
    else human();
  }

  line(text: string) {
    this.io.out(text);
  }

  /** `key: value` lines, values aligned. */
  keyValues(obj: object) {
    const width = Math.max(0, ...Object.keys(obj).map((k) => k.length));
    for (const [k, v] of Object.entries(obj)) this.io.out(`${`${k}:`.padEnd(width + 1)} ${formatValue(v)}`);
  }

  /** Columns padded to their widest cell; the last column is not padded. */
  table(headers: string[], rows: string[][]) {
    if (rows.length === 0) {
      this.io.out("(none)");
      return;
    }
    const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
    this.io.out(line(headers));
    for (const r of rows) this.io.out(line(r));
  }
}
