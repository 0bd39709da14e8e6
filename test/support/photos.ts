/** Generated photographs and the measures of how close an encoded image stays to its source (PSNR, SSIM). */
import sharp from "sharp";

/**
 * A camera-like photo, deterministic per seed: three channels of fractal value noise with a 1/f amplitude spectrum
 * (as natural images have), hard-edged regions where a second noise field crosses a threshold (occlusion contours),
 * and ±3 levels of sensor grain, saved as a quality-90 JPEG. Its AVIF cost per effort follows real photos' (the
 * decision record compares them); noise-textured images are far harder to encode.
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
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } })
      .jpeg({ quality: 90 })
      .toBuffer(),
  );
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
