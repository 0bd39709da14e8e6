/** The benchmark's parts: each measures, then renders its section of BENCHMARKS.md from its template. */
import type { Tools } from "../lib/server.ts";

export interface PartOptions {
  quick: boolean;
  /** The command line that ran it, as the section names it. */
  command: string;
  log: (message: string) => void;
  /** wrk and nginx, found or installed once. */
  tools: () => Promise<Tools>;
  /** `--baseline REF`: the commit the compare part measures against (HEAD when absent); with `--only pages`, the pages' too. */
  baseline?: string;
  /** `--rounds N`: the compare part's interleaved rounds per cell (3 by default, 1 with --quick). */
  rounds?: number;
}

export const PARTS = {
  core: async (o: PartOptions) => (await import("./core.ts")).runCore(o),
  images: async (o: PartOptions) => (await import("./images.ts")).runImages(o),
  pages: async (o: PartOptions) => (await import("./pages.ts")).runPages(o),
  webhooks: async (o: PartOptions) => (await import("./webhooks.ts")).runWebhooks(o),
  memory: async (o: PartOptions) => (await import("./memory.ts")).runMemory(o),
  hostile: async (o: PartOptions) => (await import("./hostile.ts")).runHostile(o),
  compare: async (o: PartOptions) => (await import("./compare.ts")).runCompare(o),
};
export type Part = keyof typeof PARTS;
/** Seconds each part may take (full, quick), setup included: the watchdog's budget. */
export const BUDGET_S: Record<Part, [number, number]> = {
  core: [1200, 240],
  images: [540, 180],
  pages: [900, 300],
  webhooks: [600, 240],
  memory: [240, 120],
  hostile: [300, 240],
  compare: [420, 180],
};
