/**
 * Hostile containers (test/support/hostile-corpus.ts: many segments, chunks, blocks and items; many extents over one
 * range; deep and looping IFD chains; huge declared counts; in JPEG, PNG, WebP, GIF and AVIF): each file is either
 * processed within 50 ms of CPU per MB or refused with a 400 that says why — in the parsers alone, and through the
 * real server, whose other callers meanwhile never wait more than 100 ms (a probe on another connection).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync } from "node:fs";
import { DecoderPool } from "../../src/images/decoder.ts";
import { applyMetadataPolicy, checkContainer, ContainerRefused, MetadataRefused } from "../../src/images/metadata/policy.ts";
import { jpegScanCount } from "../../src/images/inspect.ts";
import { STRIP_IN_PROCESS_BYTES } from "../../src/services/upload/checks.ts";
import { decoders } from "../../src/services/work-queue.ts";
import { formatHostileFigures, runHostileProbe } from "../support/hostile-probe.ts";
import { createTestContext, type TestContext, type TestUser } from "../support/harness.ts";
import { type HostileFile, hostileCorpus } from "../support/hostile-corpus.ts";
import { phonePhoto } from "../support/metadata-fixtures.ts";
import { expectStatus } from "../support/status.ts";

setDefaultTimeout(240_000);

const MB = 1024 * 1024;
const CPU_MS_PER_MB = 50;
let corpus: HostileFile[];
let ctx: TestContext;
let user: TestUser;

beforeAll(async () => {
  corpus = await hostileCorpus();
  ctx = await createTestContext();
  await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { max_file_size_kb: 8 * 1024 });
  user = await ctx.createUser();
});
afterAll(async () => {
  await ctx.close();
});

/** CPU ms (this process, all threads) that `fn` costs. */
function cpuMs(fn: () => void): number {
  const before = process.cpuUsage();
  fn();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

describe("the parsers' work is bounded by the bytes", () => {
  test("the corpus covers every format and class", () => {
    expect(new Set(corpus.map((f) => f.format))).toEqual(new Set(["jpeg", "png", "webp", "gif", "avif"]));
    expect(new Set(corpus.map((f) => f.kind))).toEqual(new Set(["many-units", "many-extents", "deep-ifd", "looping-ifd", "huge-counts"]));
    for (const f of corpus) expect(f.bytes.byteLength).toBeGreaterThan((f.name.endsWith("(240 KB)") ? 0.2 : 0.5) * MB);
  });

  test("the check before libvips, the JPEG walk and both strip policies: refused, or done within 50 ms of CPU per MB", () => {
    // warm the JIT on one file, so the figures are the parsers' and not the compiler's
    for (const f of corpus.slice(0, 3)) for (let i = 0; i < 3; i++) cpuMs(() => void tryAll(f));
    const over: string[] = [];
    for (const f of corpus) {
      let outcome = "";
      // the least of three: what the parsers cost, not what another process on the machine took meanwhile
      const used = Math.min(...[0, 1, 2].map(() => cpuMs(() => (outcome = tryAll(f)))));
      const perMb = used / Math.max(1, f.bytes.byteLength / MB);
      if (perMb > CPU_MS_PER_MB) over.push(`${f.name}: ${perMb.toFixed(1)} ms/MB (${outcome})`);
    }
    expect(over).toEqual([]);
  });

  test("what breaks a cap is refused with a message that names it", () => {
    const expected: [string, RegExp][] = [
      ["jpeg empty APP15 segments", /JPEG has more than \d+ segments/],
      ["jpeg EXIF IFDs pointing at themselves", /EXIF IFD declares 5000 entries/],
      ["jpeg EXIF chains of 3600 IFDs", /more than 32 IFDs/],
      ["jpeg EXIF counts of gigabytes", /values name more bytes than it holds/],
      ["png one-byte tEXt chunks", /PNG has more than \d+ chunks/],
      ["webp empty unknown chunks", /WebP has more than \d+ chunks/],
      ["gif one-byte comment extensions", /GIF has more than \d+ blocks/],
      ["avif 254 Exif items of extents over one range", /more than 4096 extents/],
      ["avif 8 Exif items of 32 extents over one range", /overlapping or repeated ranges/],
      ["avif iloc of 65535 items × 65535 empty extents", /declares 65535 item locations/],
      ["avif Exif item of a chain of IFDs", /more than 32 IFDs/],
    ];
    for (const [name, message] of expected) {
      const f = corpus.find((x) => x.name === name)!;
      expect(() => checkContainer(f.bytes, f.mimetype), name).toThrow(message);
      expect(() => applyMetadataPolicy(f.bytes, f.mimetype, "strip_location"), name).toThrow(ContainerRefused);
    }
  });

  test("an IFD reached twice is a loop, refused even under every cap", () => {
    // IFD0 (one entry) whose Exif pointer names IFD0 again
    const tiff = new Uint8Array([0x4d, 0x4d, 0, 0x2a, 0, 0, 0, 8, 0, 1, 0x87, 0x69, 0, 4, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 0]);
    const exif = new Uint8Array([...Buffer.from("Exif\0\0"), ...tiff]);
    const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe1, 0, exif.length + 2, ...exif, 0xff, 0xd9]);
    expect(() => checkContainer(jpeg, "image/jpeg")).toThrow(/form a loop/);
  });
});

/** The structural check, the scan count (JPEG) and both policies: "refused" or "done". */
function tryAll(f: HostileFile): string {
  try {
    checkContainer(f.bytes, f.mimetype);
    if (f.format === "jpeg") jpegScanCount(f.bytes);
    applyMetadataPolicy(f.bytes, f.mimetype, "strip_location");
    applyMetadataPolicy(f.bytes, f.mimetype, "strip_all");
    return "done";
  } catch (e) {
    if (!(e instanceof MetadataRefused)) throw e;
    return "refused";
  }
}

describe("the surgery runs in the decode process", () => {
  test("one job strips and decodes: the stripped bytes are the policy's, a cap's refusal comes back as MetadataRefused and the process lives on", async () => {
    const pool = new DecoderPool(1, 5);
    const photo = await phonePhoto("jpeg", 800, 600);
    const job = { size: { width: 600, height: 800 }, mimetype: "image/jpeg", maxPixels: 1e8, policy: "strip_location" as const };
    const prepared = await pool.prepare(photo, job);
    expect(prepared.thumbnail).toBeInstanceOf(Uint8Array);
    expect(Buffer.compare(prepared.metadata!.bytes!, applyMetadataPolicy(photo, "image/jpeg", "strip_location").bytes)).toBe(0);
    const [pid] = pool.pids();
    const hostile = corpus.find((f) => f.name === "jpeg EXIF IFDs pointing at themselves")!;
    const failure = await pool.prepare(hostile.bytes, { ...job, size: { width: 64, height: 48 } }).catch((e) => e);
    expect(failure).toBeInstanceOf(MetadataRefused);
    expect(pool.pids()).toEqual([pid!]);
  });

  test("an upload larger than the in-process bound is stripped by the decode job, not in the server", async () => {
    const photo = await phonePhoto("jpeg", 1400, 1000);
    expect(photo.byteLength).toBeGreaterThan(STRIP_IN_PROCESS_BYTES);
    const original = decoders.prepare.bind(decoders);
    const policies: (string | undefined)[] = [];
    decoders.prepare = (bytes, job) => {
      policies.push(job.policy);
      return original(bytes, job);
    };
    try {
      const res = await ctx.upload(user.token, { bytes: photo, filename: "big.jpg", contentType: "image/jpeg" });
      expectStatus(res, 200);
      expect(policies).toEqual(["strip_location"]);
      expect(res.body.data.size * 1024).toBeLessThan(photo.byteLength);
    } finally {
      decoders.prepare = original;
    }
  });

  test("a refused container is a 400 in the envelope, whatever the policy", async () => {
    for (const name of ["avif 8 Exif items of 32 extents over one range", "png one-byte tEXt chunks", "jpeg EXIF IFDs pointing at themselves"]) {
      const f = corpus.find((x) => x.name === name)!;
      for (const metadata of ["keep", "strip_location"]) {
        await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { metadata });
        const res = await ctx.upload(user.token, { bytes: f.bytes, filename: f.filename, contentType: f.mimetype });
        expectStatus(res, 400);
        expect(res.body.status).toBe(false);
        expect(res.body.message).toMatch(/accepted|overlapping|loop|IFD/);
      }
    }
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { metadata: "strip_location" });
  });
});

describe.skipIf(!existsSync("/proc/self/stat"))("the real server under the corpus", () => {
  // 50 ms of CPU per MB and a 100 ms wait, or, on a machine where an honest photo of about 1 MB (a noisy JPEG, sent
  // the same way) costs more than 50 ms/MB, that photo's cost and the wait scaled alike: no hostile file costs more
  // than an honest upload of its size, and none stalls the event loop, however fast the machine is.
  test("every file is stored within 50 ms of CPU per MB (server + decode processes) or refused with a 400; a probe never waits more than 100 ms", async () => {
    const figures = await runHostileProbe({ policies: ["strip_location", "keep"], repeat: 5 });
    console.log(formatHostileFigures(figures));
    const boundOf = (policy: string) => Math.max(CPU_MS_PER_MB, figures.ordinary[policy]!);
    const bad = figures.files.filter((f) => ![200, 400].includes(f.status) || (f.status === 400 && !f.message) || f.cpuMsPerMb > boundOf(f.policy));
    expect(bad.map((f) => `${f.policy} ${f.name}: ${f.status} ${f.cpuMsPerMb.toFixed(0)} ms/MB (bound ${boundOf(f.policy).toFixed(0)}) ${f.message}`)).toEqual(
      [],
    );
    expect(figures.probe.count).toBeGreaterThan(20);
    const slower = Math.max(...Object.keys(figures.ordinary).map(boundOf)) / CPU_MS_PER_MB;
    expect(figures.probe.maxMs).toBeLessThan(100 * slower);
  });
});
