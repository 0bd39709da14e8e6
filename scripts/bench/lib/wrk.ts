/** The load generator: wrk in its own process, reporting through a Lua `done` hook as one JSON line. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { run } from "./run.ts";

const REPORT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
`;

/**
 * Uploads: args are the body file, its Content-Type and the bearer tokens. The requests are formatted once per
 * thread; each thread takes them in turn (round robin over the accounts), starting at its own offset.
 */
const UPLOAD = `
local requests = {}
local n = 0
local counter = 0
setup = function(thread)
  counter = counter + 1
  thread:set("offset", counter)
end
init = function(args)
  local f = assert(io.open(args[1], "rb"))
  local body = f:read("*a")
  f:close()
  for i = 3, #args do
    requests[#requests + 1] = wrk.format("POST", wrk.path, { ["Authorization"] = "Bearer " .. args[i], ["Content-Type"] = args[2] }, body)
  end
  n = (offset or 0) % #requests
end
request = function()
  n = n % #requests + 1
  return requests[n]
end
${REPORT}
`;

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

export class Wrk {
  private readonly reportScript: string;
  private readonly uploadScript: string;
  constructor(
    private readonly bin: string,
    dir: string,
  ) {
    this.reportScript = join(dir, "report.lua");
    this.uploadScript = join(dir, "upload.lua");
    writeFileSync(this.reportScript, REPORT);
    writeFileSync(this.uploadScript, UPLOAD);
  }

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
    cmd.push("-s", opts.upload ? this.uploadScript : this.reportScript, opts.url);
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
