import { availableParallelism } from "node:os";
import { AppError } from "../errors.ts";
import { DecoderPool } from "../images/decoder.ts";

interface WorkQueueLimits {
  /** Jobs running at once. */
  concurrency: number;
  /** Jobs one subject (an account, or a guest's address) may have waiting. */
  waitingPerSubject: number;
  /** Jobs waiting in all. */
  waiting: number;
}

/**
 * What a refused job is told: its subject has too many waiting, or the queue is full. A subject is a known caller,
 * so its own bound is a failed check (400) unless `subjectCode` says otherwise; a full queue is a service-wide cap (503).
 */
export interface Refusals {
  subjectFull: (waitingPerSubject: number) => string;
  full: string;
  subjectCode?: "bad_request" | "unavailable";
}

const imageRefusals: Refusals = {
  subjectFull: (n) => `Too many of your images are waiting to be processed: at most ${n}.`,
  full: "The server is busy processing images: retry in a few seconds.",
};

interface Waiter {
  start: () => void;
}

/**
 * A bounded queue for CPU- or memory-heavy work (image decodes, password hashes), fair between subjects: when a
 * slot frees, the next job is taken from the subject that has waited longest in turn (round robin), so one caller
 * sending many slow images delays another caller's image by at most the jobs already running. Beyond its bounds a
 * job is refused with Retry-After: 400 for a subject beyond its share, 503 when the queue is full.
 */
export class FairWorkQueue {
  private running = 0;
  private waitingCount = 0;
  /** Waiting jobs by subject; the map's order is the round-robin order. */
  private readonly bySubject = new Map<string, Waiter[]>();

  constructor(
    private readonly limits: WorkQueueLimits,
    private readonly refusals: Refusals = imageRefusals,
  ) {}

  async run<T>(subject: string, job: () => Promise<T>): Promise<T> {
    if (this.running >= this.limits.concurrency) await this.wait(subject);
    else this.running++;
    try {
      return await job();
    } finally {
      this.next();
    }
  }

  private wait(subject: string): Promise<void> {
    const queue = this.bySubject.get(subject) ?? [];
    if (queue.length >= this.limits.waitingPerSubject)
      throw busy(this.refusals.subjectCode ?? "bad_request", this.refusals.subjectFull(this.limits.waitingPerSubject));
    if (this.waitingCount >= this.limits.waiting) throw busy("unavailable", this.refusals.full);
    return new Promise((start) => {
      queue.push({ start });
      this.bySubject.set(subject, queue);
      this.waitingCount++;
    });
  }

  /** Hands the freed slot to the first subject in turn, which then goes to the back of the line. */
  private next() {
    const entry = this.bySubject.entries().next();
    if (entry.done) {
      this.running--;
      return;
    }
    const [subject, queue] = entry.value;
    const waiter = queue.shift()!;
    this.bySubject.delete(subject);
    if (queue.length > 0) this.bySubject.set(subject, queue);
    this.waitingCount--;
    waiter.start();
  }
}

const busy = (code: "bad_request" | "unavailable", message: string) => new AppError(code, message, undefined, { "retry-after": "2" });

/**
 * Decodes run on the runtime's worker pool (UV_THREADPOOL_SIZE threads, by default as many as cores), which also
 * serves every other image inspection and file write: a decode running on each of its threads would make the
 * other callers' cheap steps wait behind it. So at most pool − 1 decodes run at once, and no more than cores.
 */
const defaultWorkQueueLimits = (): WorkQueueLimits => {
  const cores = Math.max(1, availableParallelism());
  const pool = Number(process.env.UV_THREADPOOL_SIZE) || cores;
  return { concurrency: Math.max(1, Math.min(cores, pool - 1)), waitingPerSubject: 8, waiting: 256 };
};

/** The process's image work: the cores are the process's, so is the queue. */
export const imageWork = new FairWorkQueue(defaultWorkQueueLimits());

/**
 * The process's decode processes, shared by uploads and variants: as many as the queue lets decodes run at once, so
 * every decode it admits finds one (a decode that overruns DECODE_BUDGET_SECONDS of CPU is killed).
 */
export const decoders = new DecoderPool(defaultWorkQueueLimits().concurrency);
