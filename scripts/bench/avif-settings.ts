/**
 * The "AVIF settings" cell of the image benchmarks (scripts/bench/variants.ts): what each AVIF effort costs, in CPU,
 * bytes and quality, for a cold full-size variant of a 2-megapixel photo, beside the WebP variant of the same photo.
 * The server's AVIF effort (src/images/avif.ts, docs/decisions/avif-effort.md) is chosen from these figures.
 *
 * The pipeline is the variant's (encodeVariant in src/images/inspect.ts: rotate, resize to the width, keep the ICC
 * profile) with each encoder at the variant quality; the reference is the same pipeline's raw pixels, before any
 * encoding. Quality: PSNR over R, G and B, and SSIM of the luma (8×8 windows every 4 pixels), of the decoded output
 * against that reference. CPU: this process's user + system time (every libvips thread) around each encode;
 * encoders interleaved, the order rotated each round, the median kept.
 */
import sharp from "sharp";
import { AVIF_EFFORT, avifOptions } from "../../src/images/avif.ts";
import { markdownTable } from "./util.ts";

export const AVIF_EFFORTS = [0, 1, 2, 3, 4] as const;
/** The variant qualities (src/services/variants.ts QUALITY). */
const WEBP_QUALITY = 80;
const AVIF_QUALITY = 50;
/** The target: a cold AVIF variant of a 2 MP photo at most this much CPU, and at most this many times the WebP variant's. */
export const AVIF_TARGET = { cpuMs: 1500, timesWebp: 2 };

export interface AvifSettingsRow {
  encoder: string;
  /** null for WebP. */
  effort: number | null;
  cpuMs: number;
  wallMs: number;
  bytes: number;
  psnr: number;
  ssim: number;
}

export interface AvifSettingsImage {
  label: string;
  width: number;
  height: number;
  rows: AvifSettingsRow[];
}

export interface AvifSettingsResult {
  images: AvifSettingsImage[];
  rounds: number;
  /** The effort in use (src/images/avif.ts). */
  effort: number;
}

/**
 * A camera-like photo, deterministic per seed: three channels of fractal value noise with a 1/f amplitude spectrum
 * (as natural images have), hard-edged regions where a second noise field crosses a threshold (occlusion contours),
 * and ±3 levels of sensor grain, saved as a quality-90 JPEG. Its AVIF cost per effort follows real photos' (the
 * decision record compares them); the noise-textured images of the other cells are far harder to encode.
 */
export async function cameraLikePhoto(width: number, height: number, seed: number): Promise<Uint8Array> {
  let s = (seed * 2654435761) | 0 || 1;
  const rand = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
  const field = (octaves: number, base: number) => {
    const out = new Float32Array(width * height);
    for (let o = 0; o < octaves; o++) {
      const cell = base / 2 ** o;
      const gw = Math.ceil(width / cell) + 2;
      const gh = Math.ceil(height / cell) + 2;
      const grid = new Float32Array(gw * gh);
      for (let i = 0; i < grid.length; i++) grid[i] = rand() - 0.5;
      const amp = cell / base;
      for (let y = 0; y < height; y++) {
        const gy = y / cell;
        const y0 = Math.floor(gy);
        let ty = gy - y0;
        ty = ty * ty * (3 - 2 * ty);
        for (let x = 0; x < width; x++) {
          const gx = x / cell;
          const x0 = Math.floor(gx);
          let tx = gx - x0;
          tx = tx * tx * (3 - 2 * tx);
          const a = grid[y0 * gw + x0]!;
          const b = grid[y0 * gw + x0 + 1]!;
          const c = grid[(y0 + 1) * gw + x0]!;
          const d = grid[(y0 + 1) * gw + x0 + 1]!;
          out[y * width + x]! += amp * (a + (b - a) * tx + (c - a + (a - b + d - c) * tx) * ty);
        }
      }
    }
    return out;
  };
  const octaves = 9;
  const base = 512;
  const lum = field(octaves, base);
  const hue = field(4, base);
  const regions = field(5, base / 2);
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    const edge = regions[i]! > 0.08 ? 38 : regions[i]! < -0.25 ? -30 : 0;
    const l = 118 + lum[i]! * 190 + edge;
    const h = hue[i]! * 120;
    const grain = () => (rand() - 0.5) * 6;
    raw[i * 3] = Math.max(0, Math.min(255, l + h + grain()));
    raw[i * 3 + 1] = Math.max(0, Math.min(255, l * 0.95 + grain()));
    raw[i * 3 + 2] = Math.max(0, Math.min(255, l * 0.85 - h + grain()));
  }
  return new Uint8Array(await sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({ quality: 90 }).toBuffer());
}

/** PSNR (dB) over all channels of two same-sized RGB buffers. */
export function psnr(a: Uint8Array, b: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) {
    const d = a[i]! - b[i]!;
    sum += d * d;
  }
  const mse = sum / a.length;
  return mse === 0 ? Infinity : 10 * Math.log10((255 * 255) / mse);
}

/** Mean SSIM of the luma (BT.601) of two same-sized RGB buffers, over 8×8 windows taken every 4 pixels. */
export function ssim(a: Uint8Array, b: Uint8Array, width: number, height: number): number {
  const luma = (p: Uint8Array) => {
    const y = new Float32Array(width * height);
    for (let i = 0; i < y.length; i++) y[i] = 0.299 * p[i * 3]! + 0.587 * p[i * 3 + 1]! + 0.114 * p[i * 3 + 2]!;
    return y;
  };
  const x = luma(a);
  const y = luma(b);
  const c1 = (0.01 * 255) ** 2;
  const c2 = (0.03 * 255) ** 2;
  let total = 0;
  let windows = 0;
  for (let top = 0; top + 8 <= height; top += 4) {
    for (let left = 0; left + 8 <= width; left += 4) {
      let sx = 0;
      let sy = 0;
      let sxx = 0;
      let syy = 0;
      let sxy = 0;
      for (let r = 0; r < 8; r++) {
        const row = (top + r) * width + left;
        for (let c = 0; c < 8; c++) {
          const p = x[row + c]!;
          const q = y[row + c]!;
          sx += p;
          sy += q;
          sxx += p * p;
          syy += q * q;
          sxy += p * q;
        }
      }
      const mx = sx / 64;
      const my = sy / 64;
      const vx = sxx / 64 - mx * mx;
      const vy = syy / 64 - my * my;
      const cov = sxy / 64 - mx * my;
      total += ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2));
      windows++;
    }
  }
  return total / windows;
}

const cpuMsNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const middle = (xs: number[]) => {
  const s = [...xs].sort((p, q) => p - q);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/**
 * Measures WebP and AVIF at each effort on one image at `width` (the image's own width for its full-size variant),
 * `rounds` times each (interleaved), in this process. libvips' cache should be off (`sharp.cache(false)`), as in the
 * decode processes.
 */
export async function measureImage(label: string, input: Uint8Array, opts: { width?: number; rounds: number; efforts: readonly number[] }): Promise<AvifSettingsImage> {
  const meta = await sharp(input).metadata();
  const width = opts.width ?? meta.autoOrient?.width ?? meta.width!;
  // encodeVariant's pipeline, non-animated
  const pipeline = () => sharp(input, { limitInputPixels: 100_000_000, failOn: "error", pages: 1 }).rotate().resize({ width, withoutEnlargement: true }).keepIccProfile();
  const reference = await pipeline().removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const encoders: { encoder: string; effort: number | null; run: () => Promise<Buffer> }[] = [
    { encoder: `WebP q${WEBP_QUALITY}`, effort: null, run: () => pipeline().webp({ quality: WEBP_QUALITY }).toBuffer() },
    ...opts.efforts.map((effort) => ({ encoder: `AVIF q${AVIF_QUALITY} effort ${effort}`, effort, run: () => pipeline().avif(avifOptions(AVIF_QUALITY, effort)).toBuffer() })),
  ];
  const cpu = new Map<string, number[]>();
  const wall = new Map<string, number[]>();
  const output = new Map<string, Buffer>();
  for (let round = 0; round < opts.rounds; round++) {
    for (let k = 0; k < encoders.length; k++) {
      const e = encoders[(round + k) % encoders.length]!;
      Bun.gc(true);
      const c0 = cpuMsNow();
      const t0 = performance.now();
      const out = await e.run();
      wall.set(e.encoder, [...(wall.get(e.encoder) ?? []), performance.now() - t0]);
      cpu.set(e.encoder, [...(cpu.get(e.encoder) ?? []), cpuMsNow() - c0]);
      output.set(e.encoder, out);
    }
  }
  const rows: AvifSettingsRow[] = [];
  for (const e of encoders) {
    const out = output.get(e.encoder)!;
    const decoded = await sharp(out).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    if (decoded.info.width !== reference.info.width || decoded.info.height !== reference.info.height) throw new Error(`${e.encoder}: decoded size differs`);
    rows.push({
      encoder: e.encoder,
      effort: e.effort,
      cpuMs: middle(cpu.get(e.encoder)!),
      wallMs: middle(wall.get(e.encoder)!),
      bytes: out.byteLength,
      psnr: psnr(reference.data, decoded.data),
      ssim: ssim(reference.data, decoded.data, reference.info.width, reference.info.height),
    });
  }
  return { label, width: reference.info.width, height: reference.info.height, rows };
}

/** The cell: the camera-like 1600×1200 photo, then `photos` (the caller's images), each as its full-size variant. */
export async function measureAvifSettings(opts: { quick: boolean; photos?: { label: string; bytes: Uint8Array }[]; log?: (m: string) => void }): Promise<AvifSettingsResult> {
  const rounds = opts.quick ? 1 : 3;
  const inputs = [{ label: "camera-like 1600×1200 JPEG (generated)", bytes: await cameraLikePhoto(1600, 1200, 7) }, ...(opts.photos ?? [])];
  const images: AvifSettingsImage[] = [];
  for (const { label, bytes } of inputs) {
    opts.log?.(`AVIF settings: ${label}…`);
    images.push(await measureImage(label, bytes, { rounds, efforts: AVIF_EFFORTS }));
  }
  return { images, rounds, effort: AVIF_EFFORT };
}

/** The cell's text: one table per image, and the target judged at the effort in use. */
export function avifSettingsSection(r: AvifSettingsResult, heading = "### AVIF settings: the effort, chosen by measurement"): string {
  const parts: string[] = [];
  for (const image of r.images) {
    const webp = image.rows.find((row) => row.effort === null)!;
    const rows = image.rows.map((row) => [
      row.effort === r.effort ? `**${row.encoder}** (in use)` : row.encoder,
      `${Math.round(row.cpuMs).toLocaleString("en-US")} ms`,
      `${Math.round(row.wallMs).toLocaleString("en-US")} ms`,
      `${(row.bytes / 1024).toFixed(0)} KB`,
      row.psnr.toFixed(2),
      row.ssim.toFixed(4),
      `${(row.cpuMs / webp.cpuMs).toFixed(2)}×`,
    ]);
    const used = image.rows.find((row) => row.effort === r.effort);
    const verdict = used
      ? `effort ${r.effort}: ${Math.round(used.cpuMs)} ms of CPU (target ≤ ${AVIF_TARGET.cpuMs}: ${used.cpuMs <= AVIF_TARGET.cpuMs ? "**met**" : "**missed**"}), ${(used.cpuMs / webp.cpuMs).toFixed(2)}× WebP's (target ≤ ${AVIF_TARGET.timesWebp}×: ${used.cpuMs <= AVIF_TARGET.timesWebp * webp.cpuMs ? "**met**" : "**missed**"})`
      : "the effort in use was not measured";
    parts.push(`**${image.label}**, full-size variant ${image.width}×${image.height}:

${markdownTable(["encoder", "CPU (median)", "wall", "bytes", "PSNR dB", "SSIM (luma)", "CPU ÷ WebP"], rows)}

- Target (a cold AVIF variant of a 2 MP photo ≤ ${AVIF_TARGET.cpuMs} ms of CPU and ≤ ${AVIF_TARGET.timesWebp}× the WebP variant's): ${verdict}.`);
  }
  return `${heading}

encodeVariant's pipeline (src/images/inspect.ts: \`rotate().resize({width}).keepIccProfile()\`) at the image's own width, WebP q${WEBP_QUALITY} and AVIF q${AVIF_QUALITY} at each effort, in one process with libvips' cache off; CPU is the process's user + system time (all libvips threads), median of ${r.rounds} interleaved round${r.rounds === 1 ? "" : "s"}. Quality against the same pipeline's raw pixels before encoding: PSNR over R, G, B; SSIM of the luma over 8×8 windows every 4 pixels. The effort in use is src/images/avif.ts's AVIF_EFFORT (docs/decisions/avif-effort.md).

${parts.join("\n\n")}`;
}
