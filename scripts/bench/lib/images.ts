/** The benchmark's images, generated deterministically with sharp, and their prebuilt multipart upload bodies. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { PHONE_EXIF, PHONE_XMP } from "../../../test/support/metadata-fixtures.ts";

/** Pixels of a photo-like image: gradients with per-pixel noise of `amp` levels (`amp` 256: pure noise), distinct per seed. */
function photoRaw(width: number, height: number, seed: number, amp: number): Buffer {
  const buf = Buffer.alloc(width * height * 3);
  let s = (seed * 2654435761) | 0 || 1;
  for (let i = 0, p = 0; p < width * height; p++, i += 3) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    const base = amp >= 256 ? 0 : ((p % width) / width) * 160 + (Math.floor(p / width) / height) * 60 + 20 + (seed % 17);
    buf[i] = (base + (((s & 0xff) * amp) >> 8)) & 0xff;
    buf[i + 1] = (base * 0.8 + ((((s >>> 8) & 0xff) * amp) >> 8)) & 0xff;
    buf[i + 2] = (base * 0.6 + ((((s >>> 16) & 0xff) * amp) >> 8)) & 0xff;
  }
  return buf;
}

/** A photo-like JPEG (noise compresses badly, so its size is realistic for the pixel count); `phone`: with a phone's EXIF (GPS), XMP, orientation 6 and Display P3. */
export async function photo(width: number, height: number, o: { seed?: number; amp?: number; quality?: number; phone?: boolean } = {}): Promise<Uint8Array> {
  let img = sharp(photoRaw(width, height, o.seed ?? 1, o.amp ?? 44), { raw: { width, height, channels: 3 } });
  if (o.phone) img = img.withIccProfile("p3").withExif(PHONE_EXIF).withXmp(PHONE_XMP).withMetadata({ orientation: 6 });
  return new Uint8Array(await img.jpeg({ quality: o.quality ?? 90 }).toBuffer());
}

/** A 256×256 screenshot-like PNG of ~20 KB: smooth rows, with a band of noise on top. */
async function screenshot(): Promise<Uint8Array> {
  const raw = photoRaw(256, 256, 7, 256);
  for (let i = 256 * 24 * 3; i < raw.length; i++) raw[i] = (40 + Math.floor(i / 768) / 2 + (i % 3) * 30) | 0;
  return new Uint8Array(
    await sharp(raw, { raw: { width: 256, height: 256, channels: 3 } })
      .png()
      .toBuffer(),
  );
}

export interface BenchImage {
  label: string;
  extension: string;
  bytes: Uint8Array;
  /** The image itself (for the floor), and a multipart/form-data body with it as the `file` part (for wrk). */
  file: string;
  bodyFile: string;
  contentType: string;
}

export async function bodyOf(dir: string, label: string, filename: string, mime: string, bytes: Uint8Array): Promise<BenchImage> {
  const boundary = "----imghostbench7f3a9c";
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${mime}\r\n\r\n`;
  const file = join(dir, filename);
  writeFileSync(file, bytes);
  writeFileSync(`${file}.multipart`, Buffer.concat([Buffer.from(head), bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]));
  const extension = filename.slice(filename.lastIndexOf(".") + 1);
  return {
    label: `${label} ${Math.round(bytes.byteLength / 1024)} KB`,
    extension,
    bytes,
    file,
    bodyFile: `${file}.multipart`,
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

/** The cells' images: a screenshot PNG (its own thumbnail), a 1 MB 2000×1500 noise JPEG, and a ~100 KB JPEG as the served file. */
export async function benchImages(dir: string) {
  return {
    png: await bodyOf(dir, "PNG 256×256", "screenshot.png", "image/png", await screenshot()),
    jpeg: await bodyOf(dir, "JPEG 2000×1500", "photo.jpg", "image/jpeg", await photo(2000, 1500, { seed: 12345, amp: 256, quality: 45 })),
    served: await bodyOf(dir, "JPEG 480×360", "served.jpg", "image/jpeg", await photo(480, 360, { seed: 12345, amp: 256, quality: 75 })),
  };
}
