/** GIF: extension surgery (comments, application extensions); the policy is policy.ts. */
import { ContainerRefused, LIMITS, unitCap } from "./limits.ts";
import type { StripPolicy } from "./tiff.ts";
import { ascii, checking, concat, type Drop, holdsFinding, startsWith } from "./walk.ts";

/** Application extensions that shape the picture: looping and the colour profile. */
const GIF_PICTURE_APPS = new Set(["NETSCAPE2.0", "ANIMEXTS1.0", "ICCRGBG1012"]);

export function stripGif(b: Uint8Array, policy: StripPolicy, removed: Set<string>, drop: Drop): Uint8Array {
  if ((!startsWith(b, 0, "GIF87a") && !startsWith(b, 0, "GIF89a")) || b.length < 13) throw new Error("no GIF header");
  const check = checking(drop);
  const cap = unitCap(b.length, LIMITS.gifBlocksBase, LIMITS.gifBytesPerBlock);
  let blocks = 0;
  let pos = 13;
  if (b[10]! & 0x80) pos += 3 * (1 << ((b[10]! & 0x07) + 1));
  const parts: Uint8Array[] = [b.subarray(0, pos)];
  /** Position after the sub-blocks starting at `at` (each: a size byte, then data; a 0 ends them). */
  const subBlocksEnd = (at: number) => {
    while (at < b.length && b[at] !== 0) at += 1 + b[at]!;
    if (at >= b.length) throw new Error("truncated GIF");
    return at + 1;
  };
  while (pos < b.length) {
    if (++blocks > cap) throw new ContainerRefused(`The GIF has more than ${cap} blocks; at most that many are accepted for its size.`);
    const introducer = b[pos]!;
    if (introducer === 0x3b) {
      parts.push(b.subarray(pos, pos + 1));
      if (pos + 1 < b.length) removed.add("trailing data");
      return check ? b : concat(parts);
    }
    if (introducer === 0x2c) {
      let at = pos + 10;
      if (at > b.length) throw new Error("truncated GIF");
      const flags = b[pos + 9]!;
      if (flags & 0x80) at += 3 * (1 << ((flags & 0x07) + 1));
      const end = subBlocksEnd(at + 1); // after the LZW minimum code size
      parts.push(b.subarray(pos, end));
      pos = end;
      continue;
    }
    if (introducer !== 0x21) throw new Error("an unknown GIF block");
    const label = b[pos + 1]!;
    const end = subBlocksEnd(pos + 2);
    const block = b.subarray(pos, end);
    const hit = holdsFinding(drop, pos, end);
    pos = end;
    if (hit) removed.add("extension with location");
    else if (label === 0xfe) {
      if (policy === "strip_all") removed.add("comment");
      else parts.push(block);
    } else if (label === 0xff) {
      const id = block[2] === 11 ? ascii(block, 3, 11) : "";
      if (GIF_PICTURE_APPS.has(id)) parts.push(block);
      else removed.add(id === "XMP DataXMP" ? "XMP" : `application ${id.trim() || "extension"}`);
    } else {
      parts.push(block); // graphic control, plain text
    }
  }
  throw new Error("no GIF trailer");
}
