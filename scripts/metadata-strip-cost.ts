/**
 * Issue 17 §4 "Lossless strip": CPU per upload of a 4 MB phone-like JPEG under `strip_location`, against `keep`.
 *
 * What an upload does with its bytes once the checks passed (services/upload.ts prepareObjects): the metadata policy,
 * the one decode that proves the image whole and makes its WebP thumbnail (the cost that dominates), md5 and sha1.
 * Both policies run that same work, interleaved, on one libvips thread; process CPU time (user + system, every thread)
 * is read around each upload (each on a fresh copy of the bytes, as from the network; the copy is outside the timing), after a full garbage collection, alternating which policy goes first. Prints the median CPU per upload of each and their ratio (target ≤ 1.15).
 *
 *   bun run scripts/metadata-strip-cost.ts [iterations=15]
 */
import sharp from "sharp";
import { decodeAndThumbnail } from "../src/images/inspect.ts";
import { applyMetadataPolicy, type MetadataPolicy } from "../src/images/metadata.ts";
import { PHONE_EXIF, PHONE_XMP } from "../test/support/metadata-fixtures.ts";

sharp.concurrency(1);
// each upload arrives as fresh bytes: no libvips cache hit may favour the policy that passes the same buffer again
sharp.cache(false);
const iterations = Number(process.argv[2] ?? 15);

/** A photo-like noisy image with a phone's EXIF (GPS), XMP and Display P3 profile, about 4 MB. */
async function phoneJpeg(): Promise<Uint8Array> {
  const width = 3000;
  const height = 2250;
  const raw = Buffer.alloc(width * height * 3);
  let seed = 99;
  for (let i = 0; i < raw.length; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    raw[i] = ((i % (width * 3)) / 24 + ((seed >> 16) & 0x3f)) & 0xff;
  }
  const out = await sharp(raw, { raw: { width, height, channels: 3 } })
    .withIccProfile("p3")
    .withExif(PHONE_EXIF)
    .withXmp(PHONE_XMP)
    .withMetadata({ orientation: 6 })
    .jpeg({ quality: 90 })
    .toBuffer();
  return new Uint8Array(out);
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function upload(bytes: Uint8Array, policy: MetadataPolicy, size: { width: number; height: number }) {
  const stored = applyMetadataPolicy(bytes, "image/jpeg", policy).bytes;
  await decodeAndThumbnail(stored, size, "image/jpeg", 100_000_000);
  new Bun.CryptoHasher("md5").update(stored).digest("hex");
  new Bun.CryptoHasher("sha1").update(stored).digest("hex");
  return stored.byteLength;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const bytes = await phoneJpeg();
const meta = await sharp(bytes).metadata();
const size = { width: meta.autoOrient.width, height: meta.autoOrient.height };
const samples: Record<MetadataPolicy, number[]> = { keep: [], strip_location: [], strip_all: [] };
let storedSize = 0;
// one warm-up of each, then interleaved
await upload(bytes, "keep", size);
await upload(bytes, "strip_location", size);
for (let i = 0; i < iterations; i++) {
  // alternate which goes first, and collect garbage before each, so neither pays the other's debts
  for (const policy of i % 2 ? (["strip_location", "keep"] as const) : (["keep", "strip_location"] as const)) {
    const fresh = bytes.slice();
    Bun.gc(true);
    const start = cpuMs();
    const stored = await upload(fresh, policy, size);
    samples[policy].push(cpuMs() - start);
    if (policy === "strip_location") storedSize = stored;
  }
}
// the strip alone, for scale
const stripStart = cpuMs();
for (let i = 0; i < 20; i++) applyMetadataPolicy(bytes, "image/jpeg", "strip_location");
const stripAlone = (cpuMs() - stripStart) / 20;

const keep = median(samples.keep);
const strip = median(samples.strip_location);
console.log(`input: ${(bytes.byteLength / 1048576).toFixed(2)} MB JPEG ${meta.width}×${meta.height} (EXIF with GPS, XMP, ICC); stored under strip_location: ${storedSize} bytes`);
console.log(`CPU per upload, median of ${iterations}: keep ${keep.toFixed(1)} ms, strip_location ${strip.toFixed(1)} ms (the strip alone: ${stripAlone.toFixed(2)} ms)`);
console.log(`ratio strip_location / keep: ${(strip / keep).toFixed(3)} (target ≤ 1.15)`);
