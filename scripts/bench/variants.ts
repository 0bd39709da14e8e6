/**
 * The image cells of issue 17 §4: variants (cached and cold), the lossless metadata strip, memory while cold variants
 * are made, the thumbnail study, and the AVIF settings (what each AVIF effort costs: scripts/bench/avif-settings.ts).
 * Prints figures, never asserts; benchmarks are not tests.
 *
 *   bun run scripts/bench/variants.ts [--quick] [--markdown FILE]   these cells alone (FILE: its section is replaced)
 *   bun run scripts/bench/variants.ts --avif-settings [--quick] [--photo FILE]…
 *                                                                   the AVIF settings cell alone, in this process, no
 *                                                                   server (~1 min; --quick ~20 s); FILE: more photos
 *   bun run bench --only images [--quick]                           the same through scripts/bench.ts (writes BENCHMARKS.md)
 *   bun run bench                                                   the full bench runs them at its end
 *
 * One server (`bun run src/server.ts`, as package.json's "server" script starts it: the embedded default, a fresh
 * DATA_DIR, TRUST_PROXY=1 so that each cold request names its own address in X-Forwarded-For and the cold budget
 * of 30 generations a minute per address never interferes), on 127.0.0.1. The floor is a process of its own (this
 * file run with --floor-worker, over IPC): the same sharp pipelines in-process (`encodeVariant` of
 * src/images/inspect.ts on the server's stored file; the study's four decodes), with libvips' cache off as in the
 * server's decode processes. Server CPU: user + system time of the server process and of every process below it
 * (decode processes, the embedded PostgreSQL), from /proc, around each operation. Everything is stopped and every
 * temporary directory removed at the end, on failure and on SIGINT/SIGTERM too.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import sharp from "sharp";
import { AVIF_EFFORT } from "../../src/images/avif.ts";
import { encodeVariant } from "../../src/images/inspect.ts";
import { jpegSegments, SOS } from "../../src/images/jpeg.ts";
import { applyMetadataPolicy } from "../../src/images/metadata.ts";
import { PHONE_EXIF, PHONE_XMP } from "../../test/support/metadata-fixtures.ts";
import { cpuMs, descendants, pssKb, rssKb } from "./procfs.ts";
import { type Account, admin, type AppServer, createAccount, serverScriptEnv, startAppServer } from "./servers.ts";
import { ensureTools, type Tools } from "./tools.ts";
import { cleanup, fmt, interrupted, markdownTable, median, onCleanup, percentile, ROOT, run, standaloneSection, writeSection } from "./util.ts";
import { Wrk } from "./wrk.ts";
import { type AvifSettingsResult, avifSettingsSection, measureAvifSettings } from "./avif-settings.ts";

export const IMAGES_HEADING = "## Images: variants, metadata strip, thumbnails (issue 17)";
/** Seconds the cells may take (the watchdog's share): measured ~4 min full, ~1.5 min quick on 2 idle cores. */
export const IMAGE_CELLS_BUDGET_S = { full: 540, quick: 180 };

const configFor = (quick: boolean) =>
  quick
    ? { wrkRounds: 2, wrkSeconds: 1, coldN: 3, stripRounds: 2, stripPer: 3, memClients: 16, memJobs: 16, extra: 4, studyIters: 8, uploadN: 3 }
    : { wrkRounds: 5, wrkSeconds: 3, coldN: 8, stripRounds: 4, stripPer: 4, memClients: 16, memJobs: 32, extra: 6, studyIters: 30, uploadN: 8 };
type Config = ReturnType<typeof configFor>;

const EMBEDDED_PLAN_MB = 400; // docs/operations.md: "plan for 400 MB" for the embedded default's whole process tree
const MAX_PIXELS = 100_000_000; // the default group's
const QUALITY = { webp: 80, avif: 50, jpeg: 82 } as const;
type Fmt = keyof typeof QUALITY;

// ---------------------------------------------------------------- images

/** A photo-like JPEG: gradients with per-pixel noise of `amp` levels (so it compresses like a photo), distinct per seed. */
async function photoRaw(width: number, height: number, seed: number, amp: number): Promise<Buffer> {
  const buf = Buffer.alloc(width * height * 3);
  let s = (seed * 2654435761) | 0 || 1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      const base = (x / width) * 160 + (y / height) * 60 + 20 + (seed % 17);
      buf[i] = (base + (((s & 0xff) * amp) >> 8)) & 0xff;
      buf[i + 1] = (base * 0.8 + ((((s >>> 8) & 0xff) * amp) >> 8)) & 0xff;
      buf[i + 2] = (base * 0.6 + ((((s >>> 16) & 0xff) * amp) >> 8)) & 0xff;
    }
  }
  return buf;
}

/** 2000×1500 at quality 90: ~1 MB. */
const photo2000 = async (seed: number) =>
  new Uint8Array(await sharp(await photoRaw(2000, 1500, seed, 44), { raw: { width: 2000, height: 1500, channels: 3 } }).jpeg({ quality: 90 }).toBuffer());
/** 4000×3000 at quality 92: ~4 MB, as a 12 MP phone writes. */
const photo4000 = async (seed: number) =>
  new Uint8Array(await sharp(await photoRaw(4000, 3000, seed, 36), { raw: { width: 4000, height: 3000, channels: 3 } }).jpeg({ quality: 92 }).toBuffer());
/** The AVIF settings cell's inputs besides its camera-like photo: a noise-textured 1600×1200 JPEG (as the other cells use), and any files given. */
async function avifInputs(files: string[]): Promise<{ label: string; bytes: Uint8Array }[]> {
  const noisy = new Uint8Array(await sharp(await photoRaw(1600, 1200, 5, 44), { raw: { width: 1600, height: 1200, channels: 3 } }).jpeg({ quality: 90 }).toBuffer());
  return [
    { label: "noise-textured 1600×1200 JPEG (generated, as in the cells above; a worst case for AVIF)", bytes: noisy },
    ...files.map((file) => ({ label: file.split("/").pop()!, bytes: new Uint8Array(readFileSync(file)) })),
  ];
}

/** The same, with what test/support/metadata-fixtures.ts's phonePhoto writes: EXIF with GPS, XMP with a location, orientation 6, Display P3. */
const phone4000 = async (seed: number) =>
  new Uint8Array(
    await sharp(await photoRaw(4000, 3000, seed, 36), { raw: { width: 4000, height: 3000, channels: 3 } })
      .withIccProfile("p3")
      .withExif(PHONE_EXIF)
      .withXmp(PHONE_XMP)
      .withMetadata({ orientation: 6 })
      .jpeg({ quality: 92 })
      .toBuffer(),
  );

/** The JPEG with 4 KB in the middle of its entropy-coded data overwritten by pseudo-random bytes (no 0xFF: the markers stay). */
function corruptScan(bytes: Uint8Array): Uint8Array {
  const out = bytes.slice();
  const sos = [...jpegSegments(bytes)].find((s) => s.marker === SOS);
  if (!sos) throw new Error("no SOS");
  const mid = sos.end + Math.floor((bytes.length - sos.end) / 2);
  let s = 12345;
  for (let i = 0; i < 4096; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[mid + i] = (s >>> 0) % 255; // 0..254
  }
  return out;
}

// ---------------------------------------------------------------- /proc: the server's process tree

type Kind = "server" | "decoder" | "database" | "other";
const kinds = new Map<number, Kind>();
function kindOf(pid: number, root: number): Kind {
  if (pid === root) return "server";
  const known = kinds.get(pid);
  if (known) return known;
  let cmd = "";
  try {
    cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
  } catch {}
  const kind: Kind = /decode-worker/.test(cmd) ? "decoder" : /postgres|postmaster|unshare|setpriv|pg_ctl/.test(cmd) ? "database" : "other";
  if (cmd) kinds.set(pid, kind);
  return kind;
}

/** The last CPU ms seen of every process of the tree: a process that exits (a decode process killed over its budget) keeps its last reading. */
const lastCpu = new Map<number, { kind: Kind; ms: number }>();
type TreeCpu = Map<number, { kind: Kind; ms: number }>;

/** CPU ms of the server and of the processes below it, per process (and remembered in lastCpu). */
function treeCpu(root: number): TreeCpu {
  const out: TreeCpu = new Map();
  for (const pid of [root, ...descendants(root)]) {
    const ms = cpuMs(pid);
    if (!Number.isFinite(ms)) continue;
    const entry = { kind: kindOf(pid, root), ms };
    out.set(pid, entry);
    lastCpu.set(pid, entry);
  }
  return out;
}
/** The start of a CPU reading: forgets the processes gone before it. */
function cpuBegin(root: number): TreeCpu {
  lastCpu.clear();
  return treeCpu(root);
}
/** CPU spent between two readings, by kind: every process seen since `a` counts up to its last reading (so one gone meanwhile still counts). */
function cpuDiff(a: TreeCpu, _b: TreeCpu) {
  const out = { total: 0, server: 0, decoder: 0, database: 0, other: 0 };
  for (const [pid, last] of lastCpu) {
    const d = last.ms - (a.get(pid)?.ms ?? 0);
    if (d <= 0) continue;
    out[last.kind] += d;
    out.total += d;
  }
  return out;
}

interface MemSample {
  t: number;
  serverRss: number;
  pss: Record<Kind, number>;
  total: number;
  processes: number;
}
function memSample(root: number, withCpu = false): MemSample {
  const pss = { server: pssKb(root), decoder: 0, database: 0, other: 0 };
  const below = descendants(root);
  if (withCpu) for (const pid of [root, ...below]) {
    const ms = cpuMs(pid);
    if (Number.isFinite(ms)) lastCpu.set(pid, { kind: kindOf(pid, root), ms });
  }
  for (const pid of below) {
    const kb = pssKb(pid);
    if (Number.isFinite(kb)) pss[kindOf(pid, root)] += kb;
  }
  return { t: performance.now(), serverRss: rssKb(root), pss, total: pss.server + pss.decoder + pss.database + pss.other, processes: below.length + 1 };
}

// ---------------------------------------------------------------- the floor process

export type FloorJob =
  | { op: "variant"; file: string; width: number; format: Fmt }
  | { op: "study"; file: string; iterations: number }
  | { op: "detect"; files: { label: string; file: string }[] }
  | { op: "strip"; file: string; iterations: number }
  | { op: "avif"; quick: boolean; photos: { label: string; file: string }[] };

const STUDY_OPS = {
  a: (buf: Buffer) =>
    sharp(buf, { failOn: "error", pages: 1 }).rotate().resize(400, 400, { fit: "inside", withoutEnlargement: true }).webp({ quality: 80 }).toBuffer(),
  b: (buf: Buffer) => sharp(buf, { failOn: "error", pages: 1 }).raw().toBuffer(),
  c: async (buf: Buffer) => {
    await sharp(buf).metadata();
    return Buffer.alloc(0);
  },
  d: (buf: Buffer) => sharp(buf, { failOn: "error" }).resize(400, 400, { fit: "inside" }).raw().toBuffer(),
} as const;
type StudyOp = keyof typeof STUDY_OPS;

async function floorWorker() {
  sharp.cache(false); // as the server's decode processes (decode-worker.ts)
  const processCpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  async function handle(job: FloorJob): Promise<unknown> {
    if (job.op === "variant") {
      const c0 = processCpu();
      const t0 = performance.now();
      const out = await encodeVariant(job.file, { width: job.width, format: job.format, quality: QUALITY[job.format], maxPixels: MAX_PIXELS, animated: false });
      return { ms: performance.now() - t0, cpu: processCpu() - c0, bytes: out.byteLength };
    }
    if (job.op === "study") {
      const buf = readFileSync(job.file);
      const ops = Object.keys(STUDY_OPS) as StudyOp[];
      const cpu: Record<string, number[]> = {};
      const wall: Record<string, number[]> = {};
      const size: Record<string, number> = {};
      for (const op of ops) await STUDY_OPS[op](buf); // warm-up
      for (let i = 0; i < job.iterations; i++) {
        for (let k = 0; k < ops.length; k++) {
          const op = ops[(i + k) % ops.length]!; // rotated: none always runs first
          Bun.gc(true);
          const c0 = processCpu();
          const t0 = performance.now();
          const out = await STUDY_OPS[op](buf);
          (wall[op] ??= []).push(performance.now() - t0);
          (cpu[op] ??= []).push(processCpu() - c0);
          size[op] = out.byteLength;
        }
      }
      return { cpu, wall, size };
    }
    if (job.op === "detect") {
      const out: Record<string, Record<string, string>> = {};
      for (const { label, file } of job.files) {
        const buf = readFileSync(file);
        out[label] = {};
        for (const op of Object.keys(STUDY_OPS) as StudyOp[]) {
          try {
            await STUDY_OPS[op](buf);
            out[label]![op] = "accepted";
          } catch (e) {
            out[label]![op] = `rejected: ${(e as Error).message.split("\n")[0]!.slice(0, 90)}`;
          }
        }
      }
      return out;
    }
    if (job.op === "avif") {
      const photos = job.photos.map(({ label, file }) => ({ label, bytes: new Uint8Array(readFileSync(file)) }));
      return measureAvifSettings({ quick: job.quick, photos });
    }
    if (job.op === "strip") {
      const bytes = new Uint8Array(readFileSync(job.file));
      applyMetadataPolicy(bytes, "image/jpeg", "strip_location");
      const c0 = processCpu();
      for (let i = 0; i < job.iterations; i++) applyMetadataPolicy(bytes, "image/jpeg", "strip_location");
      return { cpu: (processCpu() - c0) / job.iterations };
    }
    throw new Error(`unknown job ${(job as { op: string }).op}`);
  }
  process.on("message", async (job: FloorJob) => {
    try {
      process.send!({ ok: true, result: await handle(job) });
    } catch (e) {
      process.send!({ ok: false, error: (e as Error).stack ?? String(e) });
    }
  });
  process.on("disconnect", () => process.exit(0));
  process.send!({ ready: true });
}

class FloorProcess {
  private proc!: ReturnType<typeof Bun.spawn>;
  private pending: ((m: any) => void) | null = null;
  async start() {
    let ready!: () => void;
    const isReady = new Promise<void>((r) => (ready = r));
    this.proc = Bun.spawn([process.execPath, import.meta.path, "--floor-worker"], {
      cwd: ROOT,
      env: { ...process.env, ...serverScriptEnv() }, // UV_THREADPOOL_SIZE as the server's (and its decode processes')
      stdout: "inherit",
      stderr: "inherit",
      ipc: (m: any) => {
        if (m?.ready) ready();
        else this.pending?.(m);
      },
    });
    onCleanup(`image floor (pid ${this.proc.pid})`, async () => {
      this.proc.kill("SIGKILL");
      await this.proc.exited;
    });
    await Promise.race([isReady, Bun.sleep(30_000).then(() => Promise.reject(new Error("the floor process did not start")))]);
  }
  ask<T>(job: FloorJob): Promise<T> {
    return new Promise((resolve, reject) => {
      this.pending = (m) => {
        this.pending = null;
        if (m.ok) resolve(m.result as T);
        else reject(new Error(`floor: ${m.error}`));
      };
      this.proc.send(job);
    });
  }
}

// ---------------------------------------------------------------- HTTP

let addressSeq = 0;
/** A fresh client address per cold request: the cold budget (30 a minute per address) never applies. */
const freshAddress = () => {
  addressSeq++;
  return `10.1.${(addressSeq >> 8) & 255}.${addressSeq & 255}`;
};

interface Uploaded {
  pathname: string;
  size: number;
  width: number;
  height: number;
}

async function uploadBytes(server: AppServer, token: string, bytes: Uint8Array, filename = "photo.jpg") {
  const form = new FormData();
  form.append("file", new Blob([bytes as Uint8Array<ArrayBuffer>], { type: "image/jpeg" }), filename);
  const t0 = performance.now();
  const res = await fetch(`${server.base}/api/v1/upload`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form });
  const text = await res.text();
  const ms = performance.now() - t0;
  let body: any = null;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, ms, body, text };
}

async function uploadOk(server: AppServer, token: string, bytes: Uint8Array): Promise<Uploaded> {
  const r = await uploadBytes(server, token, bytes);
  if (r.status !== 200) throw new Error(`upload → ${r.status} ${r.text.slice(0, 300)}`);
  const d = r.body.data;
  return { pathname: d.pathname, size: Math.round(d.size * 1024), width: d.width, height: d.height };
}

async function get(url: string, headers: Record<string, string> = {}) {
  const t0 = performance.now();
  const res = await fetch(url, { headers });
  const body = await res.arrayBuffer();
  return {
    status: res.status,
    ms: performance.now() - t0,
    bytes: body.byteLength,
    etag: res.headers.get("etag"),
    type: res.headers.get("content-type"),
    text: res.status >= 400 ? new TextDecoder().decode(body) : "",
  };
}

/** A cold variant, made now: wall ms at the client, and the server tree's CPU. */
async function coldVariant(server: AppServer, pathname: string, width: number, format: Fmt) {
  const c0 = cpuBegin(server.pid);
  const r = await get(`${server.base}/i/${pathname}?w=${width}&format=${format}`, { "x-forwarded-for": freshAddress() });
  await Bun.sleep(20); // the decode process's and the database's last ticks
  const cpu = cpuDiff(c0, treeCpu(server.pid));
  if (r.status !== 200) throw new Error(`cold ${pathname}?w=${width}&format=${format} → ${r.status} ${r.text.slice(0, 300)}`);
  if (r.type !== `image/${format}`) throw new Error(`cold ${pathname}?w=${width}&format=${format} → a fallback (${r.type}): the variant was not made`);
  return { ms: r.ms, cpu, bytes: r.bytes };
}

// ---------------------------------------------------------------- report helpers

const ms = (x: number) => `${fmt(x)} ms`;
const ratio = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : "–");
const MB = (kb: number) => (Number.isFinite(kb) ? `${(kb / 1024).toFixed(0)} MB` : "–");
const bytesMB = (b: number) => `${(b / 1048576).toFixed(2)} MB`;
const kB = (b: number) => `${Math.round(b / 1024).toLocaleString("en-US")} KB`;
/** "met (0.97×)" or "missed by 0.08× (0.82×, 9 % short of 0.90×)". */
function verdictAtLeast(x: number, target: number): string {
  if (!Number.isFinite(x)) return "not measured";
  return x >= target ? `**met** (${x.toFixed(3)}× ≥ ${ratio(target)})` : `**missed** by ${(target - x).toFixed(3)}× (${x.toFixed(3)}×: ${(((target - x) / target) * 100).toFixed(1)} % short of ${ratio(target)})`;
}
function verdictAtMost(x: number, target: number): string {
  if (!Number.isFinite(x)) return "not measured";
  return x <= target ? `**met** (${x.toFixed(3)}× ≤ ${ratio(target)})` : `**missed** by ${(x - target).toFixed(3)}× (${x.toFixed(3)}×: ${(((x - target) / target) * 100).toFixed(1)} % over ${ratio(target)})`;
}
const la = (l: number[]) => l.map((x) => x.toFixed(2)).join(" / ");
const loadavg = () => readFileSync("/proc/loadavg", "utf8").trim();

async function describeSource(): Promise<string> {
  const head = await run(["git", "-C", ROOT, "log", "-1", "--format=%h %s"]);
  if (head.code !== 0) return "not a git checkout";
  const dirty = (await run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "package.json", "bun.lock", "drizzle"])).stdout.trim();
  const subject = head.stdout.trim();
  return `commit ${subject.length > 90 ? `${subject.slice(0, 87)}…` : subject}${dirty ? ` + uncommitted changes in ${dirty.split("\n").length} files of src/, drizzle/ or the package files` : ""}`;
}

export const writeImagesSection = (file: string, section: string) => writeSection(file, IMAGES_HEADING, section);

// ---------------------------------------------------------------- the cells

export interface ImageCellsResult {
  section: string;
  seconds: number;
  /** The AVIF settings cell's figures (CPU, bytes, PSNR, SSIM per effort and for WebP). */
  avifSettings: AvifSettingsResult;
}

/**
 * Runs the five cells on a server of their own and returns the BENCHMARKS.md section (heading included). Registers
 * its servers, processes and temporary directory with util.ts's cleanup; the caller runs `cleanup()` at the end.
 */
export async function runImageCells(opts: { quick: boolean; command: string; log?: (msg: string) => void; tools?: Tools }): Promise<ImageCellsResult> {
  const cfg: Config = configFor(opts.quick);
  const started = performance.now();
  const log = opts.log ?? ((m: string) => console.log(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${m}`));
  const load0 = os.loadavg();
  const loadLine0 = loadavg();
  log(`image cells${opts.quick ? " (--quick)" : ""}: /proc/loadavg at start: ${loadLine0}`);
  const tools = opts.tools ?? (await ensureTools());
  const source = await describeSource();

  const dir = mkdtempSync(join(os.tmpdir(), "imghost-images-"));
  chmodSync(dir, 0o755); // an embedded PostgreSQL run for root runs as the user postgres, who must reach DATA_DIR
  onCleanup(`remove ${dir}`, () => rmSync(dir, { recursive: true, force: true }));

  // ---- images (deterministic, distinct bytes per seed)
  log("making images…");
  const servedImg = await photo2000(1);
  const big = await Promise.all(Array.from({ length: cfg.coldN }, (_, i) => photo4000(100 + i)));
  const extra = await Promise.all(Array.from({ length: cfg.extra }, (_, i) => photo2000(200 + i)));
  const studyImgs = await Promise.all(Array.from({ length: cfg.uploadN }, (_, i) => photo2000(300 + i)));
  const phone = await phone4000(400);
  const phoneMeta = await sharp(phone).metadata();
  const studyFile = join(dir, "study.jpg");
  writeFileSync(studyFile, studyImgs[0]!);
  const truncated = studyImgs[0]!.slice(0, Math.floor(studyImgs[0]!.length * 0.6));
  const corrupted = corruptScan(studyImgs[0]!);
  writeFileSync(join(dir, "truncated.jpg"), truncated);
  writeFileSync(join(dir, "corrupted.jpg"), corrupted);
  const phoneFile = join(dir, "phone.jpg");
  writeFileSync(phoneFile, phone);

  // ---- the server (embedded default) and the floor
  const previousTrust = process.env.TRUST_PROXY;
  process.env.TRUST_PROXY = "1"; // startAppServer passes process.env on to the server
  let server: AppServer;
  try {
    server = await startAppServer({
      label: "images (embedded)",
      dataDir: join(dir, "data"),
      adminToken: Buffer.from(crypto.getRandomValues(new Uint8Array(30))).toString("base64url"),
    });
  } finally {
    if (previousTrust === undefined) delete process.env.TRUST_PROXY;
    else process.env.TRUST_PROXY = previousTrust;
  }
  const floor = new FloorProcess();
  await floor.start();
  const acct: Account = await createAccount(server, "images");
  const groups = await admin<{ groups: any[] }>(server, "GET", "/api/admin/groups");
  const group = groups.groups.find((g) => g.is_default);
  if (!group) throw new Error("no default group");
  const groupLine = `default group: metadata ${group.metadata}, max_file_size_kb ${group.max_file_size_kb}, max_pixels ${group.max_pixels}, convert_format ${group.convert_format ?? "null"}, uploads_per_minute ${group.uploads_per_minute ?? "null"}, concurrent_uploads ${group.concurrent_uploads ?? "null"}`;
  log(`server pid ${server.pid} on ${server.base}; ${groupLine}`);
  await Bun.sleep(1000);
  const idleFresh = memSample(server.pid);

  // ---- setup uploads (not measured)
  log("uploading…");
  const served = await uploadOk(server, acct.token, servedImg);
  const bigUp: Uploaded[] = [];
  for (const b of big) bigUp.push(await uploadOk(server, acct.token, b));
  const extraUp: Uploaded[] = [];
  for (const b of extra) extraUp.push(await uploadOk(server, acct.token, b));
  const storedFile = (u: Uploaded) => join(server.dataDir, "uploads", u.pathname);
  for (const u of bigUp) if (!existsSync(storedFile(u))) throw new Error(`stored file not found: ${storedFile(u)}`);
  // warm-up: a decode process is started, sharp loaded on both sides
  await coldVariant(server, extraUp[0]!.pathname, 160, "webp");
  await floor.ask({ op: "variant", file: storedFile(extraUp[0]!), width: 160, format: "webp" });
  await floor.ask({ op: "variant", file: storedFile(extraUp[0]!), width: 160, format: "avif" });
  await coldVariant(server, extraUp[0]!.pathname, 160, "avif");

  const sections: string[] = [];

  // ================================================================ 1. cached variant
  log("cell 1: cached variant vs original (wrk, 16 connections)…");
  const wrk = new Wrk(tools.wrk, dir);
  const origUrl = `${server.base}/i/${served.pathname}`;
  const varUrl = `${origUrl}?w=640&format=webp`;
  const made = await get(varUrl, { "x-forwarded-for": freshAddress() });
  if (made.status !== 200) throw new Error(`variant → ${made.status} ${made.text}`);
  const vAgain = await get(varUrl);
  const oAgain = await get(origUrl);
  if (vAgain.status !== 200 || oAgain.status !== 200 || !vAgain.etag || !oAgain.etag) throw new Error("cell 1: the original or the variant did not answer 200 with an ETag");
  const cell1Targets = [
    { key: "orig200", label: "original", url: origUrl, headers: {} as Record<string, string>, file: oAgain.bytes },
    { key: "var200", label: "cached variant", url: varUrl, headers: {}, file: vAgain.bytes },
    { key: "orig304", label: "original, If-None-Match (304)", url: origUrl, headers: { "If-None-Match": oAgain.etag }, file: 0 },
    { key: "var304", label: "cached variant, If-None-Match (304)", url: varUrl, headers: { "If-None-Match": vAgain.etag }, file: 0 },
  ];
  type W = { rate: number; p50: number; p99: number; bytes: number; errors: number; cpuUs: number };
  const w1: Record<string, W[]> = {};
  // warm-up (not recorded)
  for (const t of cell1Targets) await wrk.run({ url: t.url, connections: 16, seconds: 1, headers: t.headers });
  for (let round = 0; round < cfg.wrkRounds; round++) {
    for (const pair of [
      [cell1Targets[0]!, cell1Targets[1]!],
      [cell1Targets[2]!, cell1Targets[3]!],
    ]) {
      for (const t of round % 2 ? [pair[1]!, pair[0]!] : pair) {
        const c0 = cpuMs(server.pid);
        const r = await wrk.run({ url: t.url, connections: 16, seconds: cfg.wrkSeconds, headers: t.headers });
        await Bun.sleep(100);
        const accepted = r.requests - r.statusErrors;
        (w1[t.key] ??= []).push({
          rate: accepted / r.seconds,
          p50: r.p50ms,
          p99: r.p99ms,
          bytes: r.bytesPerRequest,
          errors: r.errors,
          cpuUs: ((cpuMs(server.pid) - c0) * 1000) / Math.max(1, accepted),
        });
      }
    }
  }
  const med1 = (k: string, f: keyof W) => median(w1[k]!.map((x) => x[f]));
  const roundRatios = (a: string, b: string) => w1[a]!.map((x, i) => x.rate / w1[b]![i]!.rate);
  // each round's pair ran back to back: the median of the per-round ratios is the headline (a busy spell hits both sides)
  const ratio200 = median(roundRatios("var200", "orig200"));
  const ratio304 = median(roundRatios("var304", "orig304"));
  const rows1 = cell1Targets.map((t) => [
    t.label,
    fmt(med1(t.key, "rate")),
    ms(med1(t.key, "p50")),
    ms(med1(t.key, "p99")),
    fmt(med1(t.key, "bytes")),
    t.file ? kB(t.file) : "–",
    `${fmt(med1(t.key, "cpuUs"))} µs`,
    w1[t.key]!.map((x) => fmt(x.rate)).join(" · ") + (w1[t.key]!.some((x) => x.errors) ? ` (! ${w1[t.key]!.reduce((s, x) => s + x.errors, 0)} errors)` : ""),
  ]);
  sections.push(`### 1. Cached variant: GET of a stored \`?w=640&format=webp\` variant vs GET of its original

A ${kB(servedImg.byteLength)} 2000×1500 photo-like JPEG uploaded, its \`?w=640&format=webp\` variant made once; then wrk, 16 connections, 2 threads, ${cfg.wrkSeconds} s per run, ${cfg.wrkRounds} rounds, original and variant interleaved (the order alternates each round); medians over rounds.

${markdownTable(["GET", "req/s", "p50", "p99", "bytes/answer (wrk, headers included)", "file", "server CPU/answer", "req/s per round"], rows1)}

- variant ÷ original, req/s, median of the per-round ratios (each round's two runs back to back): 200 **${ratio(ratio200)}** (rounds: ${roundRatios("var200", "orig200").map(ratio).join(", ")}; ratio of the medians ${ratio(med1("var200", "rate") / med1("orig200", "rate"))}); 304 **${ratio(ratio304)}** (rounds: ${roundRatios("var304", "orig304").map(ratio).join(", ")}; ratio of the medians ${ratio(med1("var304", "rate") / med1("orig304", "rate"))}).
- Target: cached variant ≥ 0.9× the original's req/s — 200: ${verdictAtLeast(ratio200, 0.9)}; 304: ${verdictAtLeast(ratio304, 0.9)}. The variant's answers are smaller (${kB(vAgain.bytes)} vs ${kB(oAgain.bytes)}), so bytes moved per second differ much more than requests.`);
  log(`cell 1: variant/original ${ratio(ratio200)} (200), ${ratio(ratio304)} (304)`);

  // ================================================================ 2. cold variant
  log(`cell 2: cold 1280-px variants of ${cfg.coldN} 4000×3000 JPEGs, server vs floor, interleaved…`);
  type Cold = { ms: number; cpu: number; decoder: number; bytes: number };
  const cold: Record<Fmt | string, { server: Cold[]; floor: Cold[]; serverWall: number; floorWall: number }> = {};
  for (const format of ["webp", "avif"] as const) {
    const c = (cold[format] = { server: [] as Cold[], floor: [] as Cold[], serverWall: 0, floorWall: 0 });
    for (let i = 0; i < bigUp.length; i++) {
      const u = bigUp[i]!;
      for (const side of i % 2 ? (["floor", "server"] as const) : (["server", "floor"] as const)) {
        if (side === "server") {
          const r = await coldVariant(server, u.pathname, 1280, format);
          c.server.push({ ms: r.ms, cpu: r.cpu.total, decoder: r.cpu.decoder, bytes: r.bytes });
          c.serverWall += r.ms;
        } else {
          const r = await floor.ask<{ ms: number; cpu: number; bytes: number }>({ op: "variant", file: storedFile(u), width: 1280, format });
          c.floor.push({ ms: r.ms, cpu: r.cpu, decoder: NaN, bytes: r.bytes });
          c.floorWall += r.ms;
        }
      }
    }
  }
  const rows2: string[][] = [];
  const coldRatio: Record<string, number> = {};
  for (const format of ["webp", "avif"] as const) {
    const c = cold[format]!;
    const sP50 = median(c.server.map((x) => x.ms));
    const fP50 = median(c.floor.map((x) => x.ms));
    coldRatio[format] = fP50 / sP50;
    rows2.push([
      `${format} (q${QUALITY[format]}${format === "avif" ? `, effort ${AVIF_EFFORT}` : ""}): server`,
      ms(sP50),
      ms(percentile(c.server.map((x) => x.ms), 100)),
      `${(c.server.length / (c.serverWall / 1000)).toFixed(2)}/s`,
      `${ms(median(c.server.map((x) => x.cpu)))} (decode process ${ms(median(c.server.map((x) => x.decoder)))})`,
      kB(median(c.server.map((x) => x.bytes))),
      "",
    ]);
    rows2.push([
      `${format}: floor (in-process encodeVariant)`,
      ms(fP50),
      ms(percentile(c.floor.map((x) => x.ms), 100)),
      `${(c.floor.length / (c.floorWall / 1000)).toFixed(2)}/s`,
      ms(median(c.floor.map((x) => x.cpu))),
      kB(median(c.floor.map((x) => x.bytes))),
      `**${ratio(fP50 / sP50)}** (by totals ${ratio(c.floorWall / c.serverWall)})`,
    ]);
  }
  sections.push(`### 2. Cold variant: a 4000×3000 JPEG to a 1280-px variant, first request

${cfg.coldN} distinct 4000×3000 photo-like JPEGs (${bytesMB(median(big.map((b) => b.byteLength)))} median, quality 92) uploaded; each one's \`?w=1280&format=webp\` then \`?w=1280&format=avif\` requested once, one request at a time (each from its own X-Forwarded-For address), timed end to end at the client. Server CPU: the server process + everything below it (the decode process, the embedded PostgreSQL) per generation. The floor: a separate process running \`encodeVariant\` (src/images/inspect.ts: \`sharp(file,{limitInputPixels, failOn:"error", pages:1}).rotate().resize({width:1280, withoutEnlargement:true}).keepIccProfile()\` then WebP q80 / AVIF q50 effort ${AVIF_EFFORT}) on the server's stored file, sequentially, interleaved with the server's requests image by image (the order alternates).

${markdownTable(["1280-px variant", "p50", "max", "rate (sequential)", "CPU/generation (p50)", "output", "floor time ÷ server time (p50)"], rows2)}

- Target: the server's cold rate ≥ 0.8× the floor's (floor time ÷ server time) — WebP: ${verdictAtLeast(coldRatio.webp!, 0.8)}; AVIF: ${verdictAtLeast(coldRatio.avif!, 0.8)}.
- Per request the server adds, beyond the floor's encode: the queue, a temporary-free read of the stored file by a decode process, the answer over IPC, the variant written and recorded (a pending-removal lease, a row), then served from the file.`);
  log(`cell 2: floor/server webp ${ratio(coldRatio.webp!)}, avif ${ratio(coldRatio.avif!)}`);

  // ================================================================ 3. lossless strip
  log(`cell 3: ${bytesMB(phone.byteLength)} phone JPEG, strip_location vs keep…`);
  type Up = { cpu: number; ms: number; size: number };
  const strip: Record<"keep" | "strip_location", Up[]> = { keep: [], strip_location: [] };
  await uploadOk(server, acct.token, phone); // warm-up
  for (let round = 0; round < cfg.stripRounds; round++) {
    for (const policy of round % 2 ? (["strip_location", "keep"] as const) : (["keep", "strip_location"] as const)) {
      await admin(server, "PATCH", `/api/admin/groups/${group.id}`, { metadata: policy });
      for (let k = 0; k < cfg.stripPer; k++) {
        Bun.gc(true);
        const c0 = cpuBegin(server.pid);
        const r = await uploadBytes(server, acct.token, phone);
        await Bun.sleep(30);
        const cpu = cpuDiff(c0, treeCpu(server.pid));
        if (r.status !== 200) throw new Error(`cell 3 upload → ${r.status} ${r.text.slice(0, 300)}`);
        strip[policy].push({ cpu: cpu.total, ms: r.ms, size: Math.round(r.body.data.size * 1024) }); // the answer's size is in KB
      }
    }
  }
  await admin(server, "PATCH", `/api/admin/groups/${group.id}`, { metadata: group.metadata });
  const stripAlone = await floor.ask<{ cpu: number }>({ op: "strip", file: phoneFile, iterations: 20 });
  const keepCpu = median(strip.keep.map((x) => x.cpu));
  const stripCpu = median(strip.strip_location.map((x) => x.cpu));
  const stripRatio = stripCpu / keepCpu;
  const rows3 = (["keep", "strip_location"] as const).map((p) => [
    p,
    ms(median(strip[p].map((x) => x.cpu))),
    strip[p].map((x) => fmt(x.cpu)).join(" · "),
    ms(median(strip[p].map((x) => x.ms))),
    `${strip[p][0]!.size.toLocaleString("en-US")} B`,
  ]);
  sections.push(`### 3. Lossless strip: upload of a 4000×3000 phone JPEG with GPS, \`strip_location\` vs \`keep\`

A ${bytesMB(phone.byteLength)} (${phone.byteLength.toLocaleString("en-US")} B) 4000×3000 JPEG at quality 92 with the phone fixture's EXIF (GPS), XMP (location), orientation 6 and Display P3 profile; the default group's \`metadata\` switched between rounds (${cfg.stripRounds} rounds, the order alternates, ${cfg.stripPer} uploads per round and policy, c=1, the same bytes each time). CPU: server process + decode process + embedded PostgreSQL, per upload.

${markdownTable(["policy", "CPU/upload (median)", "CPU/upload, each", "wall p50", "stored size"], rows3)}

- strip_location ÷ keep, CPU per upload: **${ratio(stripRatio)}**; target ≤ 1.15×: ${verdictAtMost(stripRatio, 1.15)}. The strip alone, in-process (\`applyMetadataPolicy\`, floor process, mean of 20): ${ms(stripAlone.cpu)} CPU; stored ${(strip.keep[0]!.size - strip.strip_location[0]!.size).toLocaleString("en-US")} B smaller.
- The upload's cost is the decode that proves the image and makes its thumbnail; the strip is a segment copy and does not decode.`);
  log(`cell 3: strip/keep ${ratio(stripRatio)}`);

  // ================================================================ 4. memory
  const combos: { u: Uploaded; width: number; format: Fmt }[] = [];
  // AVIF at large widths is the heaviest encode of these noise-textured images: one of each heavy kind only, since a
  // queued request waits for every one before it and the burst must end well within the server's idle timeout (60 s)
  const bigCombos = bigUp.flatMap((u, i) => [
    { u, width: 1920, format: "webp" as Fmt },
    { u, width: 640, format: "avif" as Fmt },
    ...(i === 0 ? [{ u, width: 1920, format: "avif" as Fmt }] : []),
  ]);
  const smallCombos = extraUp.slice(1).flatMap((u, i) => [
    { u, width: 640, format: "avif" as Fmt },
    { u, width: 1920, format: "webp" as Fmt },
    { u, width: 1280, format: "webp" as Fmt },
    ...(i === 0 ? [{ u, width: 1280, format: "avif" as Fmt }] : []),
  ]);
  for (let i = 0; combos.length < cfg.memJobs && (i < bigCombos.length || i < smallCombos.length); i++) {
    if (i < bigCombos.length) combos.push(bigCombos[i]!);
    if (combos.length < cfg.memJobs && i < smallCombos.length) combos.push(smallCombos[i]!);
  }
  const uniq = new Map(combos.map((c) => [`${c.u.pathname}|${c.width}|${c.format}`, c]));
  const jobs = [...uniq.values()];
  log(`cell 4: memory, ${cfg.memClients} clients, ${jobs.length} distinct cold variants…`);
  const idleSamples: MemSample[] = [];
  for (let i = 0; i < 10; i++) {
    idleSamples.push(memSample(server.pid));
    await Bun.sleep(50);
  }
  const idleBefore = idleSamples[idleSamples.length - 1]!;
  const samples: MemSample[] = [];
  const timer = setInterval(() => samples.push(memSample(server.pid, true)), 50);
  onCleanup("image cells' memory sampler", () => clearInterval(timer));
  const answers: { status: number; ms: number; text: string; what: string }[] = [];
  let next = 0;
  const m0 = performance.now();
  const c4 = cpuBegin(server.pid);
  await Promise.all(
    Array.from({ length: cfg.memClients }, async () => {
      while (next < jobs.length) {
        const j = jobs[next++]!;
        const r = await get(`${server.base}/i/${j.u.pathname}?w=${j.width}&format=${j.format}`, { "x-forwarded-for": freshAddress() }).catch((e: Error) => ({
          status: 0,
          ms: NaN,
          text: `connection: ${(e as { code?: string }).code ?? e.message.slice(0, 60)}`,
        }));
        answers.push({ status: r.status, ms: r.ms, text: r.text, what: `${bigUp.includes(j.u) ? "4000×3000" : "2000×1500"} → ${j.width} ${j.format}` });
      }
    }),
  );
  const burstS = (performance.now() - m0) / 1000;
  const burstCpu = cpuDiff(c4, treeCpu(server.pid));
  await Bun.sleep(1000);
  clearInterval(timer);
  const after = memSample(server.pid);
  const peakTree = samples.reduce((a, b) => (b.total > a.total ? b : a), samples[0]!);
  const peakRss = Math.max(...samples.map((s) => s.serverRss));
  const statusCount = Object.entries(answers.reduce<Record<number, number>>((m, a) => ((m[a.status] = (m[a.status] ?? 0) + 1), m), {}))
    .map(([s, n]) => `${n}×${s === "0" ? "no answer" : s}`)
    .join(" ");
  const memRow = (label: string, s: MemSample, rss = s.serverRss) => [
    label,
    MB(rss),
    MB(s.total),
    MB(s.pss.server),
    MB(s.pss.decoder),
    MB(s.pss.database),
    String(s.processes),
  ];
  const peakMB = peakTree.total / 1024;
  sections.push(`### 4. Memory: ${cfg.memClients} clients asking for cold variants at once

${jobs.length} distinct cold variants (${jobs.filter((j) => bigUp.includes(j.u)).length} of 4000×3000 JPEGs, the rest of 2000×1500 ones; widths 640 / 1280 / 1920, WebP and AVIF; AVIF at 1920 px of one 4000×3000 image only, and at 1280 px of one 2000×1500 one: the heaviest encodes), ${cfg.memClients} clients each taking the next one as soon as its previous answer arrived, each request from its own address. Sampled every 50 ms: the server process's VmRSS, and the PSS (/proc/PID/smaps_rollup) of its whole process tree summed: the server, its decode processes (at most 2 on 2 cores: the work queue runs that many decodes at once, the rest wait), the embedded PostgreSQL's processes. Answers: ${statusCount}${answers.some((a) => a.status !== 200) ? ` (${[...new Set(answers.filter((a) => a.status !== 200).map((a) => `${a.what}: ${a.status} ${(() => { try { return JSON.parse(a.text).message; } catch { return a.text.slice(0, 100); } })()}`))].join("; ")})` : ""} in ${burstS.toFixed(1)} s (p50 ${ms(median(answers.map((a) => a.ms)))}, max ${ms(Math.max(...answers.map((a) => a.ms).filter(Number.isFinite)))}); ${fmt(burstCpu.total / 1000)} s of CPU in the tree (decode processes ${fmt(burstCpu.decoder / 1000)} s).

${markdownTable(["moment", "server RSS", "tree PSS", "server PSS", "decode processes PSS", "database PSS", "processes"], [
    memRow("idle, fresh server (no decode process yet)", idleFresh),
    memRow("idle before the burst (decode processes alive)", idleBefore),
    memRow(`peak during the burst (server RSS: its own peak)`, peakTree, peakRss),
    memRow("1 s after the burst", after),
  ])}

- Peak of the whole tree: **${peakMB.toFixed(0)} MB** against docs/operations.md's "plan for ${EMBEDDED_PLAN_MB} MB" for the embedded default's process tree: ${peakMB <= EMBEDDED_PLAN_MB ? `**within** it (${((peakMB / EMBEDDED_PLAN_MB) * 100).toFixed(0)} %, ${(EMBEDDED_PLAN_MB - peakMB).toFixed(0)} MB to spare)` : `**over** it by ${(peakMB - EMBEDDED_PLAN_MB).toFixed(0)} MB`}. The peak row is the sample with the highest tree PSS; the server's own RSS peak (${MB(peakRss)}) may fall on another sample. The decode processes keep what they grew to until they exit, after 5 idle minutes (src/images/decoder.ts IDLE_EXIT_MS): the row after the burst. That figure was measured with uploads only (scripts/memory-plan.ts); AVIF variants grow the decode processes further.`);
  log(`cell 4: peak tree PSS ${peakMB.toFixed(0)} MB, server RSS peak ${MB(peakRss)}`);

  // ================================================================ 5. thumbnails study
  log("cell 5: thumbnail study…");
  const study = await floor.ask<{ cpu: Record<StudyOp, number[]>; wall: Record<StudyOp, number[]>; size: Record<StudyOp, number> }>({
    op: "study",
    file: studyFile,
    iterations: cfg.studyIters,
  });
  const detect = await floor.ask<Record<string, Record<StudyOp, string>>>({
    op: "detect",
    files: [
      { label: "truncated at 60 %", file: join(dir, "truncated.jpg") },
      { label: "corrupted scan (4 KB overwritten)", file: join(dir, "corrupted.jpg") },
      { label: "intact", file: studyFile },
    ],
  });
  // the server: upload CPU of such images today, then first views of thumbnail-sized variants
  const ups: { cpu: number; decoder: number; ms: number; u: Uploaded }[] = [];
  for (const img of studyImgs) {
    Bun.gc(true);
    const c0 = cpuBegin(server.pid);
    const r = await uploadBytes(server, acct.token, img);
    await Bun.sleep(30);
    const cpu = cpuDiff(c0, treeCpu(server.pid));
    if (r.status !== 200) throw new Error(`cell 5 upload → ${r.status} ${r.text.slice(0, 300)}`);
    const d = r.body.data;
    ups.push({ cpu: cpu.total, decoder: cpu.decoder, ms: r.ms, u: { pathname: d.pathname, size: Math.round(d.size * 1024), width: d.width, height: d.height } });
  }
  const firstView: Record<number, { ms: number; cpu: number; bytes: number }[]> = { 320: [], 640: [] };
  const cachedView: Record<number, number[]> = { 320: [], 640: [] };
  for (const [i, up] of ups.entries()) {
    for (const width of i % 2 ? [640, 320] : [320, 640]) {
      const r = await coldVariant(server, up.u.pathname, width, "webp");
      firstView[width]!.push({ ms: r.ms, cpu: r.cpu.total, bytes: r.bytes });
    }
  }
  for (let k = 0; k < 3; k++) {
    for (const up of ups) {
      for (const width of [320, 640]) {
        const r = await get(`${server.base}/i/${up.u.pathname}?w=${width}&format=webp`);
        if (r.status !== 200) throw new Error(`cached view → ${r.status}`);
        cachedView[width]!.push(r.ms);
      }
    }
  }
  const origView: number[] = [];
  for (let k = 0; k < 3; k++) for (const up of ups) origView.push((await get(`${server.base}/i/${up.u.pathname}`)).ms);
  const badUploads: string[][] = [];
  for (const [label, bytes] of [
    ["truncated at 60 %", truncated],
    ["corrupted scan (4 KB overwritten)", corrupted],
  ] as const) {
    const r = await uploadBytes(server, acct.token, bytes);
    badUploads.push([label, String(r.status), r.status === 200 ? `stored (${Math.round((r.body?.data?.size ?? 0) * 1024).toLocaleString("en-US")} B)` : String(r.body?.message ?? r.text).slice(0, 120)]);
  }
  const sc = (op: StudyOp) => median(study.cpu[op]);
  const sw = (op: StudyOp) => median(study.wall[op]);
  const uploadCpu = median(ups.map((x) => x.cpu));
  const opLabel: Record<StudyOp, string> = {
    a: "(a) today: full decode + 400-px WebP thumbnail",
    b: "(b) full decode, no thumbnail (`.raw().toBuffer()`)",
    c: "(c) header only (`metadata()`)",
    d: "(d) shrink-on-load decode to 400 px (`.resize(400,400,{fit:\"inside\"}).raw()`)",
  };
  const ops: StudyOp[] = ["a", "b", "c", "d"];
  const rows5 = ops.map((op) => [
    opLabel[op],
    ms(sc(op)),
    ms(sw(op)),
    op === "a" ? "–" : `${fmt(sc("a") - sc(op))} ms (${(((sc("a") - sc(op)) / uploadCpu) * 100).toFixed(0)} % of the upload)`,
    detect["truncated at 60 %"]![op],
    detect["corrupted scan (4 KB overwritten)"]![op],
  ]);
  const fv = (w: number) => median(firstView[w]!.map((x) => x.ms));
  const fvCpu = (w: number) => median(firstView[w]!.map((x) => x.cpu));
  const rows5b = [
    ["upload today (server tree CPU, median)", ms(uploadCpu), `decode process ${ms(median(ups.map((x) => x.decoder)))}`, `wall p50 ${ms(median(ups.map((x) => x.ms)))}`],
    ["first view, cold `?w=320&format=webp`", ms(fv(320)), `CPU ${ms(fvCpu(320))}`, `${kB(median(firstView[320]!.map((x) => x.bytes)))}`],
    ["first view, cold `?w=640&format=webp`", ms(fv(640)), `CPU ${ms(fvCpu(640))}`, `${kB(median(firstView[640]!.map((x) => x.bytes)))}`],
    ["later views, cached `?w=320&format=webp`", ms(median(cachedView[320]!)), "", ""],
    ["later views, cached `?w=640&format=webp`", ms(median(cachedView[640]!)), "", ""],
    ["the original (~1 MB), for scale", ms(median(origView)), "", ""],
  ];
  const saving = (op: StudyOp) => sc("a") - sc(op);
  const pct = (x: number) => `${((x / uploadCpu) * 100).toFixed(0)} %`;
  const detectWord = (label: string, op: StudyOp) => (detect[label]![op].startsWith("rejected") ? "rejects" : "accepts");
  const reading =
    `**Reading.** Today an upload of this 1 MB 2000×1500 JPEG costs ${ms(uploadCpu)} of server-tree CPU (median; HTTP, multipart, sniff and header, hashes, the decode process's job, files, database), of which the decode + thumbnail (a) is ${ms(sc("a"))} in-process. ` +
    `sharp already shrinks a JPEG on load when it resizes (libjpeg DCT scaling), so (d) is (a)'s own decode without the rotate and the 400-px WebP encode: the thumbnail itself costs (a) − (d) = ${ms(saving("d"))} per upload (${pct(saving("d"))} of the upload's CPU) — the saving of making no thumbnail while still proving the image whole with a shrink-on-load decode. ` +
    `A full-size decode without thumbnail (b) ${saving("b") >= 0 ? `saves ${ms(saving("b"))} (${pct(saving("b"))})` : `costs ${ms(-saving("b"))} more than (a)`}, ${sc("b") >= sc("d") ? "no cheaper than (d)" : "cheaper than (d) in this run"}; header only (c) saves ${ms(saving("c"))} (${pct(saving("c"))}) but proves nothing about the pixels. ` +
    `Detection with failOn "error": the truncated file — (a) ${detectWord("truncated at 60 %", "a")}, (b) ${detectWord("truncated at 60 %", "b")}, (c) ${detectWord("truncated at 60 %", "c")}, (d) ${detectWord("truncated at 60 %", "d")}; the corrupted scan — (a) ${detectWord("corrupted scan (4 KB overwritten)", "a")}, (b) ${detectWord("corrupted scan (4 KB overwritten)", "b")}, (c) ${detectWord("corrupted scan (4 KB overwritten)", "c")}, (d) ${detectWord("corrupted scan (4 KB overwritten)", "d")} (libjpeg reports damaged entropy data as a warning, which failOn "error" lets through; the server stores it today). ` +
    `Costs of the thumbnail as a variant made on its first request: a first view of ${ms(fv(320))} (320 px) / ${ms(fv(640))} (640 px) at p50 against ${ms(median(cachedView[320]!))} / ${ms(median(cachedView[640]!))} cached, and ${ms(fvCpu(320))} / ${ms(fvCpu(640))} of server-tree CPU per cold variant — ${fvCpu(320) > saving("d") ? "more" : "less"} than the ${ms(saving("d"))} saved at upload, but paid once per image viewed (not per upload) by its first viewer, within the cold budget of 30 a minute per address.`;
  sections.push(`### 5. Thumbnails study (decision input): what the upload's thumbnail costs, and the alternatives

The ${kB(studyImgs[0]!.byteLength)} 2000×1500 photo-like JPEG (quality 90), in a separate process (libvips cache off), ${cfg.studyIters} iterations of each, the four rotated within each iteration, a full GC before each; process CPU (user + system, all threads) and wall per operation, medians. Saving = (a) − this, against the end-to-end upload CPU below.

${markdownTable(["decode", "CPU (median)", "wall (median)", "saving vs (a) per upload", "JPEG truncated at 60 %", "scan corrupted (4 KB in the middle)"], rows5)}

On the server (${cfg.uploadN} distinct such JPEGs, uploaded one at a time; then each one's 320- and 640-px WebP variants asked for once (cold) and 3 times more (cached)):

${markdownTable(["server", "p50 / median", "CPU", "size / wall"], rows5b)}

Upload of the damaged files to the server today (\`POST /api/v1/upload\`):

${markdownTable(["file", "status", "answer"], badUploads, "left")}

${reading}`);
  log("cell 5 done");

  // ================================================================ 6. AVIF settings
  log("cell 6: AVIF settings (each effort and WebP: CPU, bytes, PSNR, SSIM)…");
  const avifPhotos = (await avifInputs([])).map((p, i) => {
    const file = join(dir, `avif-input-${i}.jpg`);
    writeFileSync(file, p.bytes);
    return { label: p.label, file };
  });
  const avifSettings = await floor.ask<AvifSettingsResult>({ op: "avif", quick: opts.quick, photos: avifPhotos });
  sections.push(avifSettingsSection(avifSettings, "### 6. AVIF settings: the effort, chosen by measurement"));
  log(`cell 6: ${avifSettingsLine(avifSettings)}`);

  const load1 = os.loadavg();
  const loadLine1 = loadavg();
  const seconds = (performance.now() - started) / 1000;
  log(`image cells: /proc/loadavg at end: ${loadLine1}; ${seconds.toFixed(0)} s`);
  const cpus = os.cpus();
  const section = `${IMAGES_HEADING}

Generated by \`${opts.command}\` (scripts/bench/variants.ts) — rewritten by each run. Benchmarks print figures; nothing here is asserted.

| | |
|---|---|
| date | ${new Date().toISOString()} |
| command | \`${opts.command}\`${opts.quick ? " (quick: fewer rounds and images, shorter runs)" : ""} |
| code measured | ${source.replace(/\|/g, "\\|")} |
| machine | ${os.availableParallelism()} cores, ${cpus[0]?.model.trim() ?? "?"}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.platform()} ${os.release()} |
| load average (/proc/loadavg: 1 / 5 / 15 min) | ${la(load0)} at start, ${la(load1)} at the end${Math.max(load0[0]!, load1[0]!) > os.availableParallelism() ? " — **busy machine: absolute figures low and noisy; the interleaved ratios hold better**" : ""} |
| software | Bun ${Bun.version}, sharp ${sharp.versions.sharp} / libvips ${sharp.versions.vips}, ${tools.wrkVersion} |
| server | \`${Object.entries(serverScriptEnv()).map(([k, v]) => `${k}=${v} `).join("")}bun run src/server.ts\`, embedded default (PostgreSQL in DATA_DIR), fresh DATA_DIR, local strategy, \`TRUST_PROXY=1\` (each cold request from its own X-Forwarded-For address), \`LOG_OBJECT_REQUESTS=false\`; ${groupLine} |
| run time | ${seconds.toFixed(0)} s |

${sections.join("\n\n")}

### Noise

One run on a 2-core machine shared with other engineers' test suites (load average above). Each ratio's two sides were measured interleaved in the same run (rounds or images alternating, the order swapped each time), so a busy period hits both; absolute milliseconds and req/s still move by 10–30 % between runs, and CPU times are read from /proc in 10 ms ticks (a few ms of error per operation). Cold-variant and upload figures are medians over ${cfg.coldN} / ${cfg.stripRounds * cfg.stripPer} / ${cfg.uploadN} operations: take differences under ~10 % as noise.
`;
  return { section, seconds, avifSettings };
}

// ---------------------------------------------------------------- standalone

const standalone = () => standaloneSection({ name: "variants", budgets: IMAGE_CELLS_BUDGET_S, run: runImageCells, write: writeImagesSection });

/** One line per image: CPU and bytes of WebP and of each AVIF effort. */
function avifSettingsLine(r: AvifSettingsResult): string {
  return r.images
    .map((image) => `${image.label.split(" (")[0]}: ${image.rows.map((row) => `${row.effort === null ? "webp" : `e${row.effort}`} ${Math.round(row.cpuMs)} ms ${Math.round(row.bytes / 1024)} KB ${row.psnr.toFixed(1)} dB`).join(", ")}`)
    .join("; ");
}

/** `--avif-settings`: the AVIF settings cell alone, in this process (no server); prints its table and returns its figures. */
export async function avifSettingsAlone(argv: string[]): Promise<AvifSettingsResult> {
  sharp.cache(false); // as in the decode processes
  const files = argv.flatMap((a, i) => (a === "--photo" && argv[i + 1] ? [argv[i + 1]!] : []));
  const result = await measureAvifSettings({ quick: argv.includes("--quick"), photos: await avifInputs(files), log: (m) => console.error(m) });
  console.log(avifSettingsSection(result));
  return result;
}

if (import.meta.main) {
  if (process.argv.includes("--floor-worker")) await floorWorker();
  else if (process.argv.includes("--avif-settings")) {
    await avifSettingsAlone(process.argv.slice(2));
    process.exit(0);
  }
  else await standalone();
}
