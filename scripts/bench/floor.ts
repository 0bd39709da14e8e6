/**
 * The upload floor, in a process of its own (started by scripts/bench.ts over IPC): the work an upload cannot
 * avoid, done by the same functions the upload service calls — sniff and header (inspectImage), one decode with
 * the thumbnail (decodeAndThumbnail), md5 + sha1 (Bun.CryptoHasher), and the object and its thumbnail written and
 * fsynced (as the local storage does before the record commits). No HTTP, no database, no queue.
 */
import { mkdirSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { decodeAndThumbnail, inspectImage } from "../../src/images/inspect.ts";

export interface FloorRequest {
  bodyOf: string; // the image file
  extension: string;
  concurrency: number;
  seconds: number;
  dir: string;
}
export interface FloorResult {
  ops: number;
  seconds: number;
  rate: number;
  p50ms: number;
  p99ms: number;
  cpuMs: number;
}

const MAX_PIXELS = 100_000_000; // the default group's limit

async function writeDurable(path: string, bytes: Uint8Array) {
  const file = await open(path, "wx");
  try {
    await file.writeFile(bytes);
    await file.sync();
  } finally {
    await file.close();
  }
}

async function once(bytes: Uint8Array, dir: string, name: string, extension: string) {
  const inspection = await inspectImage(bytes);
  if (!inspection) throw new Error("inspectImage refused the benchmark image");
  const thumbnail = await decodeAndThumbnail(bytes, inspection, inspection.sniffedMime ?? "", MAX_PIXELS);
  new Bun.CryptoHasher("md5").update(bytes).digest("hex");
  new Bun.CryptoHasher("sha1").update(bytes).digest("hex");
  await writeDurable(join(dir, `${name}.${extension}`), bytes);
  if (thumbnail) await writeDurable(join(dir, `${name}.webp`), thumbnail);
}

const pct = (s: number[], p: number) => (s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : NaN);

async function measure(req: FloorRequest): Promise<FloorResult> {
  const bytes = new Uint8Array(await Bun.file(req.bodyOf).arrayBuffer());
  const dir = join(req.dir, `floor-${process.pid}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  let seq = 0;
  const latencies: number[] = [];
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const deadline = t0 + req.seconds * 1000;
  await Promise.all(
    Array.from({ length: req.concurrency }, async () => {
      while (performance.now() < deadline) {
        const s = performance.now();
        await once(bytes, dir, String(seq++), req.extension);
        latencies.push(performance.now() - s);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  rmSync(dir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  return {
    ops: latencies.length,
    seconds,
    rate: latencies.length / seconds,
    p50ms: pct(latencies, 50),
    p99ms: pct(latencies, 99),
    cpuMs: (cpu.user + cpu.system) / 1000 / Math.max(1, latencies.length),
  };
}

if (import.meta.main) {
  process.on("message", async (msg: FloorRequest) => {
    try {
      process.send!({ ok: true, result: await measure(msg) });
    } catch (e) {
      process.send!({ ok: false, error: (e as Error).stack ?? String(e) });
    }
  });
  process.send!({ ready: true });
}
