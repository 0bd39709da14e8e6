/** The load generator: wrk in its own process, reporting through a Lua `done` hook as one JSON line. */
import { join } from "node:path";
import { run } from "./run.ts";

export interface WrkResult {
  requests: number;
  seconds: number;
  /** Requests answered per second (every status). */
  rate: number;
  bytesPerRequest: number;
  /** Socket errors and answers ≥ 400. */
  errors: number;
  statusErrors: number;
  p50ms: number;
  p90ms: number;
  p99ms: number;
  maxMs: number;
}

const REPORT = join(import.meta.dir, "report.lua");
const UPLOAD = join(import.meta.dir, "upload.lua"); // its own `done` hook included

export class Wrk {
  constructor(private readonly bin: string) {}

  /** Two threads (one when there is one connection): the machine's other core, whatever the target. */
  async run(opts: {
    url: string;
    connections: number;
    seconds: number;
    headers?: Record<string, string>;
    upload?: { bodyFile: string; contentType: string; tokens: string[] };
  }): Promise<WrkResult> {
    const threads = Math.min(2, opts.connections);
    const cmd = [this.bin, "-t", String(threads), "-c", String(opts.connections), "-d", `${opts.seconds}s`, "--timeout", "10s"];
    for (const [k, v] of Object.entries(opts.headers ?? {})) cmd.push("-H", `${k}: ${v}`);
    cmd.push("-s", opts.upload ? UPLOAD : REPORT, opts.url);
    if (opts.upload) cmd.push("--", opts.upload.bodyFile, opts.upload.contentType, ...opts.upload.tokens);
    const r = await run(cmd, { timeoutMs: (opts.seconds + 30) * 1000 });
    const line = r.stdout.split("\n").find((l) => l.startsWith("WRKJSON "));
    if (r.code !== 0 || !line) throw new Error(`wrk failed (${r.code}): ${r.stderr || r.stdout}`.slice(0, 2000));
    const j = JSON.parse(line.slice(8)) as Record<string, number>;
    const seconds = j.duration_us! / 1e6;
    const errors = j.connect! + j.read! + j.write! + j.status! + j.timeout!;
    return {
      requests: j.requests!,
      seconds,
      rate: j.requests! / seconds,
      bytesPerRequest: j.requests! ? j.bytes! / j.requests! : NaN,
      errors,
      statusErrors: j.status!,
      p50ms: j.p50! / 1000,
      p90ms: j.p90! / 1000,
      p99ms: j.p99! / 1000,
      maxMs: j.max! / 1000,
    };
  }
}
