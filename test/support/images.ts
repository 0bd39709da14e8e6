import sharp from "sharp";

/** Test images, generated with sharp. */
export async function makeImage(format: "png" | "jpeg" | "gif" | "webp" | "avif" | "tiff", width = 64, height = 48, color = "#3366cc"): Promise<Uint8Array> {
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
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } })
      .jpeg({ quality })
      .toBuffer(),
  );
}

export async function makeAnimatedGif(width = 40, height = 30): Promise<Uint8Array> {
  const frame = (c: string) =>
    sharp({ create: { width, height, channels: 3, background: c } })
      .png()
      .toBuffer();
  return new Uint8Array(
    await sharp([await frame("red"), await frame("blue")], { join: { animated: true } })
      .gif()
      .toBuffer(),
  );
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

/** A PNG whose header claims width×height, with only a few rows of data: a decompression bomb's header. */
export function pngHeaderClaiming(width: number, height: number): Uint8Array {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(Bun.hash.crc32(body) >>> 0);
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 0, 0, 0, 0], 8); // 8-bit greyscale
  const rows = Buffer.alloc(4 * (width + 1)); // four zero rows
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      chunk("IHDR", ihdr),
      chunk("IDAT", Bun.deflateSync(rows, { level: 9 }) as unknown as Buffer),
      chunk("IEND", Buffer.alloc(0)),
    ]),
  );
}
