import sharp from "sharp";

/** How many frames an image has, from its header (a file's path, or its bytes): more than one is an animation. */
export async function frameCount(input: string | Uint8Array): Promise<number> {
  return (await sharp(input, { limitInputPixels: false }).metadata()).pages ?? 1;
}
