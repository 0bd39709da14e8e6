import sharp from "sharp";

/** Test images, generated with sharp. */
export async function makeImage(
  format: "png" | "jpeg" | "gif" | "webp" | "avif" | "tiff",
  width = 64,
  height = 48,
  color = "#3366cc",
): Promise<Uint8Array> {
  const base = sharp({ create: { width, height, channels: 3, background: color } });
  return new Uint8Array(await base[format]().toBuffer());
}

/** A photo-like JPEG (noise compresses badly, so the size is realistic). */
export async function makeNoisyJpeg(width: number, height: number, quality = 85): Promise<Uint8Array> {
  const raw = Buffer.alloc(width * height * 3);
  let seed = 12345;
  for (let i = 0; i < raw.length; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    raw[i] = (seed >> 16) & 0xff;
  }
  return new Uint8Array(await sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({ quality }).toBuffer());
}

export async function makeAnimatedGif(width = 40, height = 30): Promise<Uint8Array> {
  const frame = (c: string) => sharp({ create: { width, height, channels: 3, background: c } }).png().toBuffer();
  return new Uint8Array(await sharp([await frame("red"), await frame("blue")], { join: { animated: true } }).gif().toBuffer());
}

export interface Part {
  name: string;
  value: string | Uint8Array;
  filename?: string;
  contentType?: string;
}

/** A multipart/form-data body built by hand, so each part's declared Content-Type is exactly what the test says. */
export function multipart(parts: Part[], boundary = `----test${Math.random().toString(16).slice(2)}`) {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename.replace(/"/g, "%22")}"`;
    head += "\r\n";
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`), Buffer.from(p.value), Buffer.from("\r\n"));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
