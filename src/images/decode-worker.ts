/**
 * A decode process (see decoder.ts): takes one job at a time over IPC, reads the image from the file named in the
 * job, applies the upload's metadata policy when the job carries one, and answers with the thumbnail (and the
 * stripped bytes) or, for a variant job, the variant's bytes, or for a process job, the processed image. The parent reads its CPU time (all its threads) and kills it when a job
 * overruns its budget, which is the only way to really stop a decode.
 */
import { readFileSync, writeFileSync } from "node:fs";
import sharp from "sharp";
import { decodeAndThumbnail, encodeVariant } from "./inspect.ts";
import { applyMetadataPolicy, type MetadataPolicy, MetadataRefused } from "./metadata/policy.ts";
import { findLocation } from "./metadata/scan.ts";
import { processImage } from "./process.ts";
import type { DecodeJob, DecodeAnswer, StrippedBytes } from "./decoder.ts";

sharp.cache(false);

/**
 * The metadata policy on the job's file: the bytes to decode (the stripped ones, or the path when the policy is
 * keep) and what it made of them. Runs here, under the decode's budget (docs/decisions/metadata-surgery-placement.md).
 */
function stripped(path: string, mimetype: string, policy: MetadataPolicy | undefined): { input: Uint8Array | string; metadata?: StrippedBytes } {
  if (!policy || policy === "keep") return { input: path };
  const bytes = new Uint8Array(readFileSync(path));
  const result = applyMetadataPolicy(bytes, mimetype, policy);
  // the stripped bytes go back through the job's file (memory under /dev/shm): cheaper than IPC for megabytes
  if (result.changed) writeFileSync(path, result.bytes);
  return { input: result.bytes, metadata: { bytes: null, changed: result.changed, removed: result.removed } };
}

process.on("message", async (job: DecodeJob) => {
  let answer: DecodeAnswer;
  try {
    if (job.kind === "process") {
      const { input, metadata } = stripped(job.path, job.mimetype ?? "", job.policy);
      let processed = await processImage(input, job.plan, job.maxPixels);
      // what the encoder wrote of the kept metadata is verified as the surgery's output is; should it show a
      // location, the image is made again with only its colour profile
      if (job.policy && job.policy !== "keep" && job.plan.keepMetadata && findLocation(processed.bytes, processed.mimetype).length > 0) {
        processed = await processImage(input, { ...job.plan, keepMetadata: false }, job.maxPixels);
      }
      answer = { id: job.id, ok: true, output: null, processed, metadata };
    } else if (job.kind === "variant") {
      const { width, format, quality, maxPixels, animated } = job;
      answer = { id: job.id, ok: true, output: await encodeVariant(job.path, { width, format, quality, maxPixels, animated }) };
    } else if (job.kind === "strip") {
      answer = { id: job.id, ok: true, output: null, metadata: stripped(job.path, job.mimetype, job.policy).metadata ?? { bytes: null, removed: [] } };
    } else {
      const { input, metadata } = stripped(job.path, job.mimetype, job.policy);
      answer = { id: job.id, ok: true, output: await decodeAndThumbnail(input, job.size, job.mimetype, job.maxPixels), metadata };
    }
  } catch (e) {
    answer = { id: job.id, ok: false, message: (e as Error).message, refused: e instanceof MetadataRefused };
  }
  process.send!(answer);
});
// the server went away (even by SIGKILL): nothing is left to answer
process.on("disconnect", () => process.exit(0));
process.send!({ ready: true });
