import type { Deps } from "../deps.ts";
import { perDeps } from "./per-deps.ts";

/** The last run of a background job on this instance, for the admin overview (issue 18). */
export interface LastRun {
  at: Date;
  durationMs: number;
  ok: boolean;
  summary: string;
}

export type Job = "sweeper" | "reconciler";

const runs = perDeps(() => new Map<Job, LastRun>());

export const recordRun = (deps: Deps, job: Job, run: LastRun) => runs(deps).set(job, run);
export const lastRun = (deps: Deps, job: Job): LastRun | null => runs(deps).get(job) ?? null;
