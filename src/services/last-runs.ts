import type { Deps } from "../deps.ts";
import { servicesOf } from "./index.ts";

/** The last run of a background job on this instance, for the admin overview. */
export interface LastRun {
  at: Date;
  durationMs: number;
  ok: boolean;
  summary: string;
}

export type Job = "sweeper" | "reconciler";

export const recordRun = (deps: Deps, job: Job, run: LastRun) => servicesOf(deps).lastRuns.set(job, run);
export const lastRun = (deps: Deps, job: Job): LastRun | null => servicesOf(deps).lastRuns.get(job) ?? null;
