import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { readFile, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import type { VariantEncoding } from "./inspect.ts";
import { MetadataRefused, type MetadataPolicy, type PolicyResult } from "./metadata/policy.ts";
import type { ProcessedImage, ProcessPlan } from "./process.ts";

/**
 * The CPU budget of one decode, in seconds of CPU time (all its threads). A decode runs in a process of its own;
 * the process's CPU time is read every CHECK_MS from /proc and past the budget it is killed (SIGKILL) and the
 * upload refused. Wall time is capped too (WALL_FACTOR × the budget), for a process that waits instead of
 * working and for systems without /proc. A 100 MP photo of 10 MB decodes in about 3 s of CPU on this hardware.
 */
export const DECODE_BUDGET_SECONDS = 8;
const CHECK_MS = 100;
const WALL_FACTOR = 3;
/** A decode process left idle this long exits; the next decode starts another (about 0.1 s). */
const IDLE_EXIT_MS = 5 * 60_000;

/**
 * The upload's decode: proves the image whole and makes its thumbnail (null when it is its own). With a `policy`,
 * the group's metadata policy is applied first, in this process and under the same budget, and the decode reads
 * the stripped bytes (one decode, never two).
 */
interface ThumbnailJob {
  kind?: "thumbnail";
  id: number;
  path: string;
  size: { width: number; height: number };
  mimetype: string;
  maxPixels: number;
  policy?: MetadataPolicy;
}

/** The metadata policy alone (`images strip-metadata` on stored objects). */
interface StripJob {
  kind: "strip";
  id: number;
  path: string;
  mimetype: string;
  policy: MetadataPolicy;
}

/** A variant: the image at `width` (never enlarged), encoded as `format` at `quality`. */
interface VariantJob {
  kind: "variant";
  id: number;
  path: string;
  width: number;
  format: VariantEncoding["format"];
  quality: number;
  maxPixels: number;
  /** Keep every frame (an animated GIF to an animated WebP or GIF); otherwise the first frame only. */
  animated: boolean;
}

/** Processing on upload: the stored image made from the upload by the group's plan. */
interface ProcessJob {
  kind: "process";
  id: number;
  path: string;
  plan: ProcessPlan;
  maxPixels: number;
  /** The metadata policy applied before processing (as for a thumbnail job), to the upload as `mimetype`. */
  policy?: MetadataPolicy;
  mimetype?: string;
}

export type DecodeJob = ThumbnailJob | VariantJob | ProcessJob | StripJob;
type WithoutId<T> = T extends unknown ? Omit<T, "id"> : never;

/**
 * `output`: the thumbnail (null when the image is its own) or the variant's bytes; `processed`: a process job's
 * result; `metadata`: what the policy made of the upload (`bytes` null when nothing changed). `refused`: the bytes
 * broke a cap of the metadata surgery or kept location that could not be removed (a 400 with `message`).
 */
export type DecodeAnswer =
  | { id: number; ok: true; output: Uint8Array | null; processed?: ProcessedImage; metadata?: StrippedBytes }
  | { id: number; ok: false; message: string; refused?: boolean };

/**
 * What a metadata policy made of an upload in the decode process: `bytes` null when nothing changed. Across IPC the
 * bytes travel in the job's file instead (`changed`: the process rewrote it), which costs less than serialising them.
 */
export interface StrippedBytes {
  bytes: Uint8Array | null;
  changed?: boolean;
  removed: string[];
}
type Output = Extract<DecodeAnswer, { ok: true }>;

/** The decode overran its budget and its process was killed. */
export class DecodeOverBudget extends Error {
  constructor(readonly seconds: number) {
    super(`decode over its budget of ${seconds} s`);
  }
}

/** The decoder refused the bytes, or its process died on them. */
export class DecodeFailed extends Error {}

interface Running {
  resolve: (answer: Output) => void;
  reject: (e: Error) => void;
  timer: ReturnType<typeof setInterval>;
}

const TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux architecture

/** User + system CPU seconds of a process, from /proc/PID/stat; null where there is no /proc. */
export function cpuSecondsOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // the command name (field 2) may hold spaces and parentheses: count fields after its closing parenthesis
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** Bytes that crossed IPC (a Buffer or a plain Uint8Array, by the serializer) as a Uint8Array. */
const bytesOf = (output: Uint8Array | null) => (output === null ? null : output instanceof Uint8Array ? output : new Uint8Array(output));
/** What the policy made of the upload: the stripped bytes read back from the job's file when the process rewrote it. */
async function strippedOf(m: StrippedBytes | undefined, path: string): Promise<StrippedBytes | null> {
  if (!m) return null;
  return { bytes: m.changed ? new Uint8Array(await readFile(path)) : bytesOf(m.bytes), removed: m.removed };
}

/** One decode process: one job at a time. */
class DecodeProcess {
  readonly process: Subprocess;
  readonly ready: Promise<void>;
  private running: Running | null = null;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  dead = false;

  constructor(
    script: string,
    private readonly onExit: (p: DecodeProcess) => void,
  ) {
    let markReady!: () => void;
    this.ready = new Promise((resolve) => (markReady = resolve));
    this.process = Bun.spawn([process.execPath, script], {
      stdio: ["ignore", "inherit", "inherit"],
      serialization: "advanced",
      ipc: (message: DecodeAnswer | { ready: true }) => {
        if ("ready" in message) return markReady();
        const job = this.running;
        if (!job) return;
        this.running = null;
        clearInterval(job.timer);
        if (message.ok) job.resolve(message);
        else job.reject(message.refused ? new MetadataRefused(message.message) : new DecodeFailed(message.message));
      },
      onExit: (_p, code, signal) => {
        this.dead = true;
        if (this.idleTimer) clearTimeout(this.idleTimer);
        const job = this.running;
        this.running = null;
        if (job) {
          clearInterval(job.timer);
          job.reject(new DecodeFailed(`the decode process exited (${signal ?? code})`));
        }
        markReady();
        this.onExit(this);
      },
    });
    this.process.unref();
  }

  async run(job: WithoutId<DecodeJob>, id: number, budgetSeconds: number): Promise<Output> {
    await this.ready;
    if (this.dead) throw new DecodeFailed("the decode process could not start");
    if (this.idleTimer) clearTimeout(this.idleTimer);
    return new Promise<Output>((resolve, reject) => {
      const started = Date.now();
      const cpuBefore = cpuSecondsOf(this.process.pid) ?? 0;
      const timer = setInterval(
        () => {
          const cpu = (cpuSecondsOf(this.process.pid) ?? cpuBefore) - cpuBefore;
          if (cpu <= budgetSeconds && Date.now() - started <= budgetSeconds * 1000 * WALL_FACTOR) return;
          clearInterval(timer);
          this.running = null;
          this.dead = true;
          this.process.kill("SIGKILL");
          reject(new DecodeOverBudget(budgetSeconds));
        },
        Math.min(CHECK_MS, budgetSeconds * 1000),
      );
      this.running = { resolve, reject, timer };
      try {
        this.process.send({ ...job, id });
      } catch (e) {
        clearInterval(timer);
        this.running = null;
        reject(new DecodeFailed(`the decode process is gone (${(e as Error).message})`));
      }
    }).finally(() => {
      if (!this.dead) this.idleTimer = setTimeout(() => this.process.kill(), IDLE_EXIT_MS);
      this.idleTimer?.unref?.();
    });
  }
}

/**
 * Decodes in processes that can be killed: the hard stop behind the checks that judge an image from its header
 * (pixel limit, JPEG scan count). The image reaches a process as a temporary file (in /dev/shm when there is one:
 * memory, no disk), which costs far less than copying it through IPC; the thumbnail comes back over IPC. At most
 * `size` processes; the fair work queue in front bounds how many decodes run, so a process is free for each.
 */
export class DecoderPool {
  private readonly idle: DecodeProcess[] = [];
  private readonly waiting: ((p: DecodeProcess) => void)[] = [];
  private live = 0;
  private nextId = 0;
  private dir: string | null = null;
  private readonly script = join(import.meta.dir, "decode-worker.ts");
  private readonly all = new Set<DecodeProcess>();

  constructor(
    private readonly size: number,
    private readonly budgetSeconds = DECODE_BUDGET_SECONDS,
  ) {}

  async decode(bytes: Uint8Array, job: Omit<ThumbnailJob, "id" | "path">): Promise<Uint8Array | null> {
    return (await this.prepare(bytes, job)).thumbnail;
  }

  /**
   * The upload's metadata policy (when `job.policy` is set) and its decode, in one job: the thumbnail, and the
   * stripped bytes when the policy changed them. MetadataRefused when the surgery refused the bytes.
   */
  async prepare(bytes: Uint8Array, job: Omit<ThumbnailJob, "id" | "path">): Promise<{ thumbnail: Uint8Array | null; metadata: StrippedBytes | null }> {
    return this.withFile(bytes, async (path) => {
      const answer = await this.runJob({ ...job, path });
      return { thumbnail: bytesOf(answer.output), metadata: await strippedOf(answer.metadata, path) };
    });
  }

  /** A metadata policy alone, under the same budget (MetadataRefused when it refuses the bytes). */
  async strip(bytes: Uint8Array, mimetype: string, policy: MetadataPolicy): Promise<PolicyResult> {
    return this.withFile(bytes, async (path) => {
      const metadata = await strippedOf((await this.runJob({ kind: "strip", path, mimetype, policy })).metadata, path);
      if (!metadata) throw new DecodeFailed("the decode process applied no policy");
      return { bytes: metadata.bytes ?? bytes, changed: metadata.bytes !== null, removed: metadata.removed };
    });
  }

  /**
   * Carries out an upload's processing plan under the same budget (the upload's bytes, copied to a temporary file),
   * after its metadata policy when `job.policy` is set: `metadata` is what the policy made of the upload.
   */
  async process(bytes: Uint8Array, job: Omit<ProcessJob, "id" | "path" | "kind">): Promise<ProcessedImage & { metadata: StrippedBytes | null }> {
    return this.withFile(bytes, async (path) => {
      const { processed, metadata } = await this.runJob({ ...job, kind: "process", path });
      if (!processed) throw new DecodeFailed("the decode process made no image");
      return { ...processed, bytes: new Uint8Array(processed.bytes), thumbnail: bytesOf(processed.thumbnail), metadata: await strippedOf(metadata, path) };
    });
  }

  private async withFile<T>(bytes: Uint8Array, use: (path: string) => Promise<T>): Promise<T> {
    const path = join(this.tempDir(), `${randomBytes(12).toString("hex")}.img`);
    await writeFile(path, bytes, { mode: 0o600 });
    try {
      return await use(path);
    } finally {
      await unlink(path).catch(() => {});
    }
  }

  /**
   * Makes a variant under the same budget: `input` is the original's bytes (copied to a temporary file) or the path
   * of a file holding them (a local strategy's object, read in place).
   */
  async variant(input: Uint8Array | { file: string }, job: Omit<VariantJob, "id" | "path" | "kind">): Promise<Uint8Array> {
    const temporary = input instanceof Uint8Array ? join(this.tempDir(), `${randomBytes(12).toString("hex")}.img`) : null;
    if (temporary) await writeFile(temporary, input as Uint8Array, { mode: 0o600 });
    try {
      const output = bytesOf((await this.runJob({ ...job, kind: "variant", path: temporary ?? (input as { file: string }).file })).output);
      if (!output) throw new DecodeFailed("the decode process made no variant");
      return output;
    } finally {
      if (temporary) await unlink(temporary).catch(() => {});
    }
  }

  private async runJob(job: WithoutId<DecodeJob>): Promise<Output> {
    const worker = await this.take();
    try {
      return await worker.run(job, ++this.nextId, this.budgetSeconds);
    } finally {
      this.give(worker);
    }
  }

  private take(): Promise<DecodeProcess> {
    const ready = this.idle.pop();
    if (ready) return Promise.resolve(ready);
    if (this.live < this.size) {
      this.live++;
      return Promise.resolve(this.spawn());
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private give(worker: DecodeProcess) {
    if (worker.dead) return; // forget() has already made room
    const next = this.waiting.shift();
    if (next) next(worker);
    else this.idle.push(worker);
  }

  /** The process ids of the live decode processes. */
  pids(): number[] {
    return [...this.all].map((p) => p.process.pid);
  }

  private spawn(): DecodeProcess {
    const worker = new DecodeProcess(this.script, (p) => this.forget(p));
    this.all.add(worker);
    return worker;
  }

  private forget(worker: DecodeProcess) {
    this.all.delete(worker);
    const i = this.idle.indexOf(worker);
    if (i >= 0) this.idle.splice(i, 1);
    this.live--;
    const next = this.waiting.shift();
    if (next) {
      this.live++;
      next(this.spawn());
    }
  }

  private tempDir(): string {
    if (this.dir && existsSync(this.dir)) return this.dir;
    const base = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
    let dir: string;
    try {
      dir = mkdtempSync(join(base, "imagehost-decode-"));
    } catch {
      dir = mkdtempSync(join(tmpdir(), "imagehost-decode-"));
    }
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    return (this.dir = dir);
  }
}
