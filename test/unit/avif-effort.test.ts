import { describe, expect, setDefaultTimeout, test } from "bun:test";
import sharp from "sharp";
import { cameraLikePhoto, psnr } from "../support/photos.ts";
import { AVIF_EFFORT } from "../../src/images/avif.ts";
import { encodeVariant } from "../../src/images/inspect.ts";
import { processImage } from "../../src/images/process.ts";

setDefaultTimeout(60_000);

/**
 * The AVIF effort (docs/decisions/avif-effort.md): a cold AVIF of a 2-megapixel photo costs at most 1.5 s of CPU,
 * as a variant and as a conversion on upload. The bound is the target itself, generous for the chosen effort (about
 * 0.1 s here) and missed by the libvips default, effort 4 (about 2.6 s on this photo).
 */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function timed<T>(fn: () => Promise<T>): Promise<{ out: T; cpu: number }> {
  const c0 = cpuMs();
  const out = await fn();
  return { out, cpu: cpuMs() - c0 };
}

describe("AVIF effort", () => {
  test("a 1600×1200 photo to a full-size AVIF variant and an AVIF conversion: under 1.5 s of CPU each, an AVIF of the same quality as WebP", async () => {
    expect(AVIF_EFFORT).toBe(0);
    const photo = await cameraLikePhoto(1600, 1200, 7);
    const reference = await sharp(photo).raw().toBuffer();
    await encodeVariant(photo, { width: 160, format: "avif", quality: 50, maxPixels: 100_000_000, animated: false }); // warm-up
    const variant = await timed(() => encodeVariant(photo, { width: 1600, format: "avif", quality: 50, maxPixels: 100_000_000, animated: false }));
    expect(variant.cpu).toBeLessThan(1500);
    const webp = await encodeVariant(photo, { width: 1600, format: "webp", quality: 80, maxPixels: 100_000_000, animated: false });
    const meta = await sharp(variant.out).metadata();
    expect([meta.format, meta.compression, meta.width]).toEqual(["heif", "av1", 1600]);
    const avifPsnr = psnr(reference, await sharp(variant.out).removeAlpha().raw().toBuffer());
    const webpPsnr = psnr(reference, await sharp(webp).removeAlpha().raw().toBuffer());
    expect(avifPsnr).toBeGreaterThan(webpPsnr - 1);
    expect(variant.out.byteLength).toBeLessThan(webp.byteLength * 1.2);

    const plan = {
      format: "avif" as const,
      quality: 50,
      maxWidth: null,
      maxHeight: null,
      animated: false,
      onlyIfSmaller: false,
      keepMetadata: false,
      steps: ["convert"],
    };
    const converted = await timed(() => processImage(photo, plan, 100_000_000));
    expect(converted.cpu).toBeLessThan(1500);
    expect(converted.out.mimetype).toBe("image/avif");
  });
});
