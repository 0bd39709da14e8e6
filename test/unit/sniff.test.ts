/** The sniffer reads a fixed sample; what the sample cannot show (an animation declared late in a PNG) is still found. */
import { describe, expect, test } from "bun:test";
import sharp from "sharp";
import { inspectImage, sniffMime } from "../../src/images/inspect.ts";

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  view.setUint32(8 + data.length, Bun.hash.crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/** A PNG with `extra` chunks inserted after IHDR. */
async function pngWith(...extra: Uint8Array[]): Promise<Uint8Array> {
  const png = new Uint8Array(
    await sharp({ create: { width: 8, height: 8, channels: 3, background: "#336699" } })
      .png()
      .toBuffer(),
  );
  const ihdrEnd = 8 + 12 + 13;
  return new Uint8Array(Buffer.concat([png.subarray(0, ihdrEnd), ...extra, png.subarray(ihdrEnd)]));
}

const acTL = chunk("acTL", new Uint8Array([0, 0, 0, 1, 0, 0, 0, 0]));
const bigText = chunk("tEXt", new TextEncoder().encode(`Comment\0${"x".repeat(6000)}`));

describe("sniffing", () => {
  test("an animated PNG is image/apng, also when a large chunk pushes its acTL past the sample", async () => {
    for (const bytes of [await pngWith(acTL), await pngWith(bigText, acTL)]) {
      expect(await sniffMime(bytes)).toBe("image/apng");
      expect((await inspectImage(bytes))?.sniffedMime).toBe("image/apng");
    }
  });

  test("a still PNG with a large chunk is image/png", async () => {
    const bytes = await pngWith(bigText);
    expect(await sniffMime(bytes)).toBe("image/png");
    expect((await inspectImage(bytes))?.sniffedMime).toBe("image/png");
  });
});
