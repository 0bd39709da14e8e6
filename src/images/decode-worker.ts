/**
 * A decode process (see decoder.ts): takes one job at a time over IPC, reads the image from the file named in the
 * job, and answers with the thumbnail or, for a variant job, the variant's bytes, or for a process job, the processed image. The parent reads its CPU time (all its threads) and kills it when a job
 * overruns its budget, which is the only way to really stop a decode.
 */
import sharp from "sharp";
import { decodeAndThumbnail, encodeVariant } from "./inspect.ts";
import { processImage } from "./process.ts";
import type { DecodeJob, DecodeAnswer } from "./decoder.ts";

sharp.cache(false);

process.on("message", async (job: DecodeJob) => {
  let answer: DecodeAnswer;
  try {
    if (job.kind === "process") answer = { id: job.id, ok: true, output: null, processed: await processImage(job.path, job.plan, job.maxPixels) };
    else if (job.kind === "variant") {
      const { width, format, quality, maxPixels, animated } = job;
      answer = { id: job.id, ok: true, output: await encodeVariant(job.path, { width, format, quality, maxPixels, animated }) };
    } else answer = { id: job.id, ok: true, output: await decodeAndThumbnail(job.path, job.size, job.mimetype, job.maxPixels) };
  } catch (e) {
    answer = { id: job.id, ok: false, message: (e as Error).message };
  }
  process.send!(answer);
});
// the server went away (even by SIGKILL): nothing is left to answer
process.on("disconnect", () => process.exit(0));
process.send!({ ready: true });
