import { describe, expect, setDefaultTimeout, test } from "bun:test";
import sharp from "sharp";
import { cpuSecondsOf, DecodeOverBudget, DecoderPool } from "../../src/images/decoder.ts";
import { jpegScanCount } from "../../src/images/inspect.ts";

setDefaultTimeout(60_000);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A progressive JPEG of noise: every scan carries data, so decoding it costs real CPU. */
async function costlyJpeg(width: number, height: number) {
  return sharp({ create: { width, height, channels: 3, background: "#000", noise: { type: "gaussian", mean: 128, sigma: 40 } } })
    .jpeg({ quality: 95, progressive: true })
    .toBuffer();
}

describe("the JPEG scan counter walks the stream as libjpeg does", () => {
  test("stray bytes, fill bytes and stuffed 0xFF00 between segments hide no scan", async () => {
    const progressive = Buffer.from(
      await sharp({ create: { width: 600, height: 400, channels: 3, background: "#468" } })
        .jpeg({ progressive: true })
        .toBuffer(),
    );
    const sos = progressive.indexOf(Buffer.from([0xff, 0xda]));
    const next = progressive.indexOf(Buffer.from([0xff, 0xda]), sos + 2);
    const many = Buffer.concat([progressive.subarray(0, next), ...Array(40).fill(progressive.subarray(sos, next)), progressive.subarray(next)]);
    expect(jpegScanCount(many)).toBe(50);
    const sof = many.indexOf(Buffer.from([0xff, 0xc2]));
    const afterFrame = sof + 2 + many.readUInt16BE(sof + 2);
    const insert = (bytes: number[]) => Buffer.concat([many.subarray(0, afterFrame), Buffer.from(bytes), many.subarray(afterFrame)]);
    // the attack: one stray byte after the frame header, which a counter stopping at the first byte that is not 0xFF reads as 0 scans
    expect(jpegScanCount(insert([0x42]))).toBe(50);
    expect(jpegScanCount(insert([0x42, 0x00, 0x13, 0x37]))).toBe(50);
    expect(jpegScanCount(insert([0xff, 0xff, 0xff]))).toBe(50);
    expect(jpegScanCount(insert([0xff, 0x00, 0x42]))).toBe(50);
    // libjpeg decodes every one of these variants: the counter must have seen what the decoder will run
    for (const variant of [insert([0x42]), insert([0xff, 0x00, 0x42])]) {
      const meta = await sharp(variant).metadata();
      expect(meta.width).toBe(600);
    }
  });

  test("fill bytes inside entropy-coded data are data, not a marker", () => {
    // SOI, SOS (length 2), entropy data FF FF 00 (a stuffed 0xFF after fill), then a second SOS and EOI
    const bytes = new Uint8Array([
      0xff, 0xd8, 0xff, 0xda, 0x00, 0x02, 0x11, 0xff, 0xff, 0x00, 0x22, 0xff, 0xd3, 0x33, 0xff, 0xda, 0x00, 0x02, 0x44, 0xff, 0xd9, 0xff, 0xda,
    ]);
    expect(jpegScanCount(bytes)).toBe(2);
  });
});

describe("a decode that overruns its CPU budget is killed", () => {
  test("the process is gone within the budget plus one check, and the next decode gets a fresh process", async () => {
    // about 1 s of CPU here, well past the 0.3 s budget whatever the machine
    const costly = await costlyJpeg(5000, 5000);
    const pool = new DecoderPool(1, 0.3);
    const small = await sharp({ create: { width: 800, height: 600, channels: 3, background: "#246" } })
      .jpeg()
      .toBuffer();
    // warm: the process exists and has answered once
    expect(await pool.decode(small, { size: { width: 800, height: 600 }, mimetype: "image/jpeg", maxPixels: 1e8 })).toBeInstanceOf(Uint8Array);
    const [pid] = pool.pids();
    const cpuBefore = cpuSecondsOf(pid!)!;
    const started = performance.now();
    const failure = await pool.decode(costly, { size: { width: 5000, height: 5000 }, mimetype: "image/jpeg", maxPixels: 1e8 }).catch((e) => e);
    const elapsed = (performance.now() - started) / 1000;
    expect(failure).toBeInstanceOf(DecodeOverBudget);
    expect(cpuBefore).toBeLessThan(5);
    // killed, not left working after its answer (what sharp's timeout did)
    for (let i = 0; i < 50 && alive(pid!); i++) await Bun.sleep(20);
    expect(alive(pid!)).toBe(false);
    expect(elapsed).toBeLessThan(0.3 * 3 + 1);
    const thumbnail = await pool.decode(small, { size: { width: 800, height: 600 }, mimetype: "image/jpeg", maxPixels: 1e8 });
    expect(thumbnail).toBeInstanceOf(Uint8Array);
    expect(pool.pids()).not.toContain(pid);
  });

  test("bytes the decoder cannot read are a refusal, and the process lives on", async () => {
    const pool = new DecoderPool(1, 5);
    const jpeg = await sharp({ create: { width: 800, height: 600, channels: 3, background: "#246" } })
      .jpeg()
      .toBuffer();
    const truncated = jpeg.subarray(0, 600);
    await expect(pool.decode(truncated, { size: { width: 800, height: 600 }, mimetype: "image/jpeg", maxPixels: 1e8 })).rejects.toThrow();
    const [pid] = pool.pids();
    expect(await pool.decode(jpeg, { size: { width: 800, height: 600 }, mimetype: "image/jpeg", maxPixels: 1e8 })).toBeInstanceOf(Uint8Array);
    expect(pool.pids()).toEqual([pid!]);
  });
});
