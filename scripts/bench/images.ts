/** The benchmark's images, generated deterministically with sharp, and their multipart upload bodies. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";

function xorshift(seed: number) {
  let s = seed | 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
}

/** A 256×256 screenshot-like PNG of ~20 KB: smooth rows, with a band of noise (say, a photo) on top. */
async function smallPng(): Promise<Uint8Array> {
  const w = 256;
  const h = 256;
  const noisyRows = 24;
  const rnd = xorshift(7);
  const raw = Buffer.alloc(w * h * 3);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++)
      for (let c = 0; c < 3; c++) raw[(y * w + x) * 3 + c] = y < noisyRows ? rnd() & 0xff : (40 + y / 2 + c * 30) | 0;
  return new Uint8Array(await sharp(raw, { raw: { width: w, height: h, channels: 3 } }).png().toBuffer());
}

/** A photo-like JPEG: noise compresses badly, so the size is realistic for the pixel count. */
async function noisyJpeg(width: number, height: number, quality: number): Promise<Uint8Array> {
  const rnd = xorshift(12345);
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = rnd() & 0xff;
  return new Uint8Array(await sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({ quality }).toBuffer());
}

export interface BenchImage {
  label: string;
  filename: string;
  mime: string;
  extension: string;
  width: number;
  height: number;
  bytes: Uint8Array;
  /** The image itself, for the floor. */
  file: string;
  /** A prebuilt multipart/form-data body with the image as its `file` part, for wrk. */
  bodyFile: string;
  contentType: string;
}

function multipart(bytes: Uint8Array, filename: string, mime: string) {
  const boundary = "----imghostbench7f3a9c";
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${mime}\r\n\r\n`;
  return {
    body: Buffer.concat([Buffer.from(head), Buffer.from(bytes), Buffer.from(`\r\n--${boundary}--\r\n`)]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

async function make(dir: string, label: string, filename: string, mime: string, bytes: Uint8Array): Promise<BenchImage> {
  const meta = await sharp(bytes).metadata();
  const extension = filename.slice(filename.lastIndexOf(".") + 1);
  const file = join(dir, filename);
  const bodyFile = join(dir, `${filename}.multipart`);
  const m = multipart(bytes, filename, mime);
  writeFileSync(file, bytes);
  writeFileSync(bodyFile, m.body);
  return { label, filename, mime, extension, width: meta.width!, height: meta.height!, bytes, file, bodyFile, contentType: m.contentType };
}

export async function makeImages(dir: string) {
  return {
    png: await make(dir, "PNG 256×256", "screenshot.png", "image/png", await smallPng()),
    jpeg: await make(dir, "JPEG 2000×1500", "photo.jpg", "image/jpeg", await noisyJpeg(2000, 1500, 45)),
    /** The served file: ~100 KB. */
    served: await make(dir, "JPEG 480×360", "served.jpg", "image/jpeg", await noisyJpeg(480, 360, 75)),
  };
}

export const kb = (img: BenchImage) => `${Math.round(img.bytes.byteLength / 1024)} KB`;
