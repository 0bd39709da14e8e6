/**
 * A decode process (see decoder.ts): takes one job at a time over IPC, reads the image from the file named in the
 * job, and answers with the thumbnail or, for a variant job, the variant's bytes. The parent reads its CPU time (all its threads) and kills it when a job
 * overruns its budget, which is the only way to really stop a decode.
 */
import sharp from "sharp";
import { decodeAndThumbnail, encodeVariant } from "./inspect.ts";
import type { DecodeJob, DecodeAnswer } from "./decoder.ts";

sharp.cache(false);

process.on("message", async (job: DecodeJob) => {
  let answer: DecodeAnswer;
  try {
    const output =
      job.kind === "variant"
        ? await encodeVariant(job.path, { width: job.width, format: job.format, quality: job.quality, maxPixels: job.maxPixels, animated: job.animated })
        : await decodeAndThumbnail(job.path, job.size, job.mimetype, job.maxPixels);
    answer = { id: job.id, ok: true, output };
  } catch (e) {
    answer = { id: job.id, ok: false, message: (e as Error).message };
  }
  process.send!(answer);
});
// the server went away (even by SIGKILL): nothing is left to answer
process.on("disconnect", () => process.exit(0));
process.send!({ ready: true });
