/**
 * Hostile containers against the real server (src/server.ts as a process, its embedded database): every file of the
 * hostile corpus (test/support/hostile-corpus.ts: many segments, chunks, items; extents over one range; deep and
 * looping IFD chains; huge declared counts, in JPEG, PNG, WebP, GIF and AVIF) is uploaded, one at a time, under
 * each metadata policy, while a probe on another connection asks GET /health back to back and times each answer.
 * Reported: the probe's max and p99 wait, and per file and per class the outcome (stored or refused) and the CPU
 * it cost per MB — the server process's own CPU plus its decode processes' (by /proc; reaped children included).
 *
 *   bun run scripts/bench/hostile.ts          prints the figures
 * test/hostile-containers.test.ts asserts on the same figures (runHostileProbe).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { cpuSecondsOf, DecoderPool } from "../../src/images/decoder.ts";
import { decodeAndThumbnail } from "../../src/images/inspect.ts";
import { applyMetadataPolicy } from "../../src/images/metadata.ts";
import { phonePhoto } from "../../test/support/metadata-fixtures.ts";
import { admin, multipartFile, type ServerHandle, seedUser, startServer, upload } from "../hardening-bench.ts";
import { type HostileFile, hostileCorpus } from "../../test/support/hostile-corpus.ts";

const ROOT = join(import.meta.dir, "..", "..");
const TICKS_PER_SECOND = 100;
const MB = 1024 * 1024;

/** utime + stime (+ the reaped children's, when `children`) of a process, in ms; 0 when it is gone. */
function cpuOf(pid: number, children: boolean): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(f[11]) + Number(f[12]) + (children ? Number(f[13]) + Number(f[14]) : 0);
    return (ticks * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** The server's decode processes (its children running decode-worker.ts). */
function decodeProcesses(server: number): number[] {
  const found: number[] = [];
  for (const task of readdirSync(`/proc/${server}/task`)) {
    let children = "";
    try {
      children = readFileSync(`/proc/${server}/task/${task}/children`, "utf8");
    } catch {}
    for (const pid of children.split(" ").filter(Boolean).map(Number)) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, "latin1").includes("decode-worker")) found.push(pid);
      } catch {}
    }
  }
  return found;
}

/**
 * CPU of the server and its decode processes, in ms. A decode process killed and reaped adds its CPU to the
 * server's children's time, which is counted; the embedded database's processes are not reaped while it runs.
 */
export function serverCpuMs(server: number): number {
  return cpuOf(server, true) + decodeProcesses(server).reduce((sum, pid) => sum + cpuOf(pid, false), 0);
}

export interface FileFigure {
  name: string;
  kind: HostileFile["kind"];
  format: HostileFile["format"];
  policy: string;
  mb: number;
  status: number;
  message: string;
  cpuMs: number;
  cpuMsPerMb: number;
}

export interface HostileFigures {
  files: FileFigure[];
  probe: { count: number; maxMs: number; p99Ms: number };
  /** Per class (kind): the worst CPU per MB, files stored and refused. */
  classes: Record<string, { files: number; stored: number; refused: number; worstCpuMsPerMb: number }>;
}

const quantile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]! : 0;
};

/**
 * Runs the probe against `server` (started here when not given): each corpus file uploaded under each policy,
 * while GET /health is timed on another connection.
 */
export async function runHostileProbe(options: { server?: ServerHandle; policies?: string[]; target?: number; repeat?: number } = {}): Promise<HostileFigures> {
  const repeat = options.repeat ?? 5;
  const server = options.server ?? (await startServer(ROOT));
  try {
    const corpus = await hostileCorpus(options.target ?? MB);
    await admin(server, "PATCH", "/api/admin/groups/1", { max_file_size_kb: 8 * 1024 });
    const user = await seedUser(server, `hostile_${Date.now().toString(36)}`);
    // warm: a decode process exists and has answered once, so its start is not charged to the first file
    const warm = corpus.find((f) => f.kind === "many-units" && f.format === "gif")!;
    await upload(server.port, user.token, multipartFile(warm.bytes, warm.filename, warm.mimetype), "127.0.0.1");

    const waits: number[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const started = performance.now();
        const res = await fetch(`http://127.0.0.1:${server.port}/health`).catch(() => null);
        await res?.arrayBuffer();
        waits.push(performance.now() - started);
        await Bun.sleep(5);
      }
    })();

    const files: FileFigure[] = [];
    for (const policy of options.policies ?? ["strip_location", "keep"]) {
      await admin(server, "PATCH", "/api/admin/groups/1", { metadata: policy });
      for (const f of corpus) {
        // /proc counts CPU in ticks of 10 ms: each file is sent once to warm (not counted), then `repeat` times, and
        // the mean taken
        const body = multipartFile(f.bytes, f.filename, f.mimetype);
        await upload(server.port, user.token, body, "127.0.0.1");
        await Bun.sleep(20);
        const before = serverCpuMs(server.pid);
        let res!: Awaited<ReturnType<typeof upload>>;
        for (let i = 0; i < repeat; i++) res = await upload(server.port, user.token, body, "127.0.0.1");
        // the decode process's tick counters lag a little behind its answer
        await Bun.sleep(20);
        const cpu = (serverCpuMs(server.pid) - before) / repeat;
        const mb = f.bytes.byteLength / MB;
        let message = "";
        try {
          message = JSON.parse(res.body).message ?? "";
        } catch {}
        files.push({ name: f.name, kind: f.kind, format: f.format, policy, mb, status: res.status, message, cpuMs: cpu, cpuMsPerMb: cpu / Math.max(mb, 1) });
      }
    }
    probing = false;
    await probe;
    const classes: HostileFigures["classes"] = {};
    for (const f of files) {
      const c = (classes[f.kind] ??= { files: 0, stored: 0, refused: 0, worstCpuMsPerMb: 0 });
      c.files++;
      if (f.status === 200) c.stored++;
      else c.refused++;
      c.worstCpuMsPerMb = Math.max(c.worstCpuMsPerMb, f.cpuMsPerMb);
    }
    return { files, probe: { count: waits.length, maxMs: Math.max(...waits), p99Ms: quantile(waits, 0.99) }, classes };
  } finally {
    if (!options.server) await server.stop("SIGKILL");
  }
}

export interface HopFigure {
  image: string;
  bytes: number;
  /** The policy and the decode in-process: CPU and wall ms per upload. */
  inProcessCpuMs: number;
  inProcessWallMs: number;
  /** The same in one decode-process job: the server's CPU, the decode process's, and the wall time. */
  hopParentCpuMs: number;
  hopWorkerCpuMs: number;
  hopWallMs: number;
}

/**
 * What a round trip to the decode process would add to an upload that today strips and decodes in-process (an
 * image within the thumbnail box, a file of at most STRIP_IN_PROCESS_BYTES): the policy (strip_location) and the
 * decode, in-process and as one job, `rounds` times each.
 */
export async function measureWorkerHop(rounds = 200): Promise<HopFigure[]> {
  const screenshot = new Uint8Array(await sharp({ create: { width: 256, height: 256, channels: 3, background: "#468", noise: { type: "gaussian", mean: 128, sigma: 10 } } }).png().toBuffer());
  const phone = await phonePhoto("jpeg", 320, 240);
  const cases = [
    { image: "PNG screenshot 256×256", bytes: screenshot, mimetype: "image/png", size: { width: 256, height: 256 } },
    { image: "phone JPEG 320×240 (EXIF, XMP, GPS)", bytes: phone, mimetype: "image/jpeg", size: { width: 240, height: 320 } },
  ];
  const pool = new DecoderPool(1);
  const figures: HopFigure[] = [];
  for (const c of cases) {
    const job = { size: c.size, mimetype: c.mimetype, maxPixels: 1e8, policy: "strip_location" as const };
    const here = async () => {
      const r = applyMetadataPolicy(c.bytes, c.mimetype, "strip_location");
      await decodeAndThumbnail(r.bytes, c.size, c.mimetype, 1e8);
    };
    for (let i = 0; i < 20; i++) {
      await here();
      await pool.prepare(c.bytes, job);
    }
    const pid = pool.pids()[0]!;
    let cpu = process.cpuUsage();
    let wall = performance.now();
    for (let i = 0; i < rounds; i++) await here();
    let used = process.cpuUsage(cpu);
    const inProcessCpuMs = (used.user + used.system) / 1000 / rounds;
    const inProcessWallMs = (performance.now() - wall) / rounds;
    cpu = process.cpuUsage();
    const worker = cpuSecondsOf(pid)!;
    wall = performance.now();
    for (let i = 0; i < rounds; i++) await pool.prepare(c.bytes, job);
    used = process.cpuUsage(cpu);
    figures.push({
      image: c.image,
      bytes: c.bytes.byteLength,
      inProcessCpuMs,
      inProcessWallMs,
      hopParentCpuMs: (used.user + used.system) / 1000 / rounds,
      hopWorkerCpuMs: ((cpuSecondsOf(pid)! - worker) * 1000) / rounds,
      hopWallMs: (performance.now() - wall) / rounds,
    });
  }
  return figures;
}

export function formatHopFigures(figures: HopFigure[]): string {
  const lines = ["Small uploads: the policy + decode in-process, against one job in the decode process (per upload)", ""];
  for (const f of figures) {
    const hop = f.hopParentCpuMs + f.hopWorkerCpuMs;
    lines.push(
      `${f.image.padEnd(38)} ${(f.bytes / 1024).toFixed(0).padStart(4)} KB  in-process ${f.inProcessCpuMs.toFixed(2)} ms CPU (${f.inProcessWallMs.toFixed(2)} ms wall)  ` +
        `worker ${hop.toFixed(2)} ms CPU = ${f.hopParentCpuMs.toFixed(2)} server + ${f.hopWorkerCpuMs.toFixed(2)} decode process (${f.hopWallMs.toFixed(2)} ms wall)  added ${(hop - f.inProcessCpuMs).toFixed(2)} ms CPU`,
    );
  }
  return lines.join("\n");
}

export interface UploadCostFigure {
  image: string;
  uploads: number;
  /** CPU of the server and its decode processes per upload, ms; and uploads per second at `concurrency`. */
  cpuMsPerUpload: number;
  perSecond: number;
}

/**
 * The upload hot path of the server in `src` (this tree, or another checkout to compare with): small uploads (a
 * 256×256 PNG screenshot, a 320×240 phone JPEG with EXIF, XMP and GPS) under strip_location, `uploads` of each at
 * `concurrency`, after a warm-up; CPU of the server and its decode processes per upload.
 */
export async function measureUploadCost(src = ROOT, uploads = 400, concurrency = 4): Promise<UploadCostFigure[]> {
  const server = await startServer(src);
  try {
    await admin(server, "PATCH", "/api/admin/groups/1", { metadata: "strip_location" });
    const user = await seedUser(server, `cost_${Date.now().toString(36)}`);
    const screenshot = new Uint8Array(await sharp({ create: { width: 256, height: 256, channels: 3, background: "#468", noise: { type: "gaussian", mean: 128, sigma: 10 } } }).png().toBuffer());
    const phone = await phonePhoto("jpeg", 320, 240);
    const figures: UploadCostFigure[] = [];
    for (const [image, bytes, name, type] of [
      ["PNG screenshot 256×256", screenshot, "shot.png", "image/png"],
      ["phone JPEG 320×240", phone, "phone.jpg", "image/jpeg"],
    ] as const) {
      const body = multipartFile(bytes, name, type);
      const round = async (n: number) => {
        let next = 0;
        await Promise.all(
          Array.from({ length: concurrency }, async (_, k) => {
            while (next < n) {
              next++;
              const res = await upload(server.port, user.token, body, `127.0.0.${10 + k}`);
              if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${res.body.slice(0, 200)}`);
            }
          }),
        );
      };
      await round(50);
      const before = serverCpuMs(server.pid);
      const started = performance.now();
      await round(uploads);
      const seconds = (performance.now() - started) / 1000;
      figures.push({ image, uploads, cpuMsPerUpload: (serverCpuMs(server.pid) - before) / uploads, perSecond: uploads / seconds });
    }
    return figures;
  } finally {
    await server.stop("SIGKILL");
  }
}

/** The figures as text: one line per file, one per class, the probe. */
export function formatHostileFigures(figures: HostileFigures): string {
  const lines = ["Hostile containers (one upload at a time; CPU = server + decode processes, per MB of the file)", ""];
  for (const f of figures.files) {
    lines.push(`${f.policy.padEnd(15)} ${f.name.padEnd(58)} ${f.mb.toFixed(2)} MB  ${String(f.status)}  ${f.cpuMsPerMb.toFixed(0).padStart(4)} ms/MB  ${f.message.slice(0, 70)}`);
  }
  lines.push("", "class         files stored refused  worst CPU/MB");
  for (const [kind, c] of Object.entries(figures.classes)) {
    lines.push(`${kind.padEnd(14)}${String(c.files).padStart(5)}${String(c.stored).padStart(7)}${String(c.refused).padStart(8)}  ${c.worstCpuMsPerMb.toFixed(0).padStart(8)} ms`);
  }
  lines.push("", `probe GET /health: ${figures.probe.count} answers, max wait ${figures.probe.maxMs.toFixed(1)} ms, p99 ${figures.probe.p99Ms.toFixed(1)} ms`);
  return lines.join("\n");
}

if (import.meta.main) {
  console.log(formatHostileFigures(await runHostileProbe()));
  console.log("");
  console.log(formatHopFigures(await measureWorkerHop()));
  // `--compare DIR`: the same small uploads against another checkout's server, alternating
  const compare = process.argv.indexOf("--compare");
  const trees = compare > 0 ? [ROOT, process.argv[compare + 1]!, ROOT, process.argv[compare + 1]!] : [ROOT];
  console.log("\nSmall uploads under strip_location (server + decode processes CPU per upload)");
  for (const tree of trees) {
    for (const f of await measureUploadCost(tree)) console.log(`${tree.padEnd(12)} ${f.image.padEnd(24)} ${f.cpuMsPerUpload.toFixed(2)} ms CPU/upload, ${f.perSecond.toFixed(0)} uploads/s`);
  }
  process.exit(0);
}
