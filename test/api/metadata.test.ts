import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import exifr from "exifr";
import sharp from "sharp";
import { main } from "../../src/cli/index.ts";
import { images, strategies, users } from "../../src/db/schema.ts";
import { applyMetadataPolicy, type MetadataPolicy } from "../../src/images/metadata/policy.ts";
import { ADMIN_TOKEN, createTestContext, type TestContext, type TestUser } from "../support/harness.ts";
import { makeAnimatedGif, makeImage } from "../support/images.ts";
import { phonePhoto, type PhoneFormat } from "../support/metadata-fixtures.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s
setDefaultTimeout(60_000);

let ctx: TestContext;
let server: ReturnType<typeof Bun.serve>;
let SERVER_URL: string;
const fixtures = {} as Record<PhoneFormat, Uint8Array>;

beforeAll(async () => {
  ctx = await createTestContext();
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: ctx.app.fetch });
  SERVER_URL = `http://127.0.0.1:${server.port}`;
  for (const f of ["jpeg", "png", "webp", "avif"] as const) fixtures[f] = await phonePhoto(f);
});
afterAll(async () => {
  await server.stop(true);
  await ctx.close();
});

const mime = { jpeg: "image/jpeg", png: "image/png", webp: "image/webp", avif: "image/avif" } as const;
const ext = { jpeg: "jpg", png: "png", webp: "webp", avif: "avif" } as const;
const kb = (bytes: number) => bytes / 1024;
const md5 = (b: Uint8Array) => new Bun.CryptoHasher("md5").update(b).digest("hex");
const sha1 = (b: Uint8Array) => new Bun.CryptoHasher("sha1").update(b).digest("hex");

/**
 * Everything an independent reader finds: exifr (EXIF, GPS, XMP, IPTC, ICC) for JPEG and PNG; for WebP and AVIF,
 * which exifr does not open (it calls libheif's Exif item malformed), libvips (through sharp, libheif for AVIF)
 * extracts the EXIF and XMP and exifr reads them.
 */
async function readMetadata(bytes: Uint8Array): Promise<{
  tags: Record<string, any>;
  gps: { latitude: number; longitude: number } | null;
  xmp: string;
  iccDescription: string | undefined;
  orientation: number | undefined;
}> {
  const meta = await sharp(bytes).metadata();
  const options: NonNullable<Parameters<typeof exifr.parse>[1]> = {
    tiff: true,
    exif: true,
    gps: true,
    interop: true,
    ifd1: true,
    xmp: true,
    iptc: true,
    icc: false,
    makerNote: true,
    userComment: true,
    mergeOutput: true,
    translateValues: false,
    reviveValues: false,
  };
  let tags: Record<string, any> = {};
  let gps: { latitude: number; longitude: number } | null = null;
  if (meta.format === "webp" || meta.format === "heif") {
    if (meta.exif) {
      const tiff = Buffer.from(meta.exif.subarray(6)); // libvips puts "Exif\0\0" in front
      tags = (await exifr.parse(tiff, options)) ?? {};
      gps = (await exifr.gps(tiff).catch(() => null)) ?? null;
    }
  } else {
    tags = (await exifr.parse(Buffer.from(bytes), options)) ?? {};
    gps = (await exifr.gps(Buffer.from(bytes)).catch(() => null)) ?? null;
  }
  if (gps && (gps.latitude === undefined || Number.isNaN(gps.latitude))) gps = null;
  const xmp = meta.xmp ? meta.xmp.toString("utf8") : "";
  // the ICC profile as libvips extracts it, by its hash
  const iccDescription = meta.icc ? new Bun.CryptoHasher("md5").update(meta.icc).digest("hex") : undefined;
  // AVIF's own orientation is its irot/imir properties (libheif applies them); its EXIF keeps the camera's tag
  return { tags, gps, xmp, iccDescription, orientation: meta.orientation ?? tags.Orientation };
}

const EMPTY_XMP = '<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"/><?xpacket end="w"?>';
const LOCATION_WORDS = ["GPSLatitude", "GPSLongitude", "Paris", "Ile-de-France", "France", "Champ de Mars"];
const PRIVATE_WORDS = ["SN123456789", "LSN987654", "Alice Example", "Examplephone", "2026:11:02"];

/** No location under any name, in the tags a reader finds nor anywhere in the bytes. */
async function expectNoLocation(bytes: Uint8Array) {
  const m = await readMetadata(bytes);
  expect(m.gps).toBeNull();
  const tagNames = Object.keys(m.tags);
  expect(tagNames.filter((t) => /^GPS|City|State|Country|Location/i.test(t))).toEqual([]);
  const text = Buffer.from(bytes).toString("latin1");
  for (const word of LOCATION_WORDS) expect(text.includes(word)).toBe(false);
  // no XMP, or (AVIF, cleaned in place at the same length) an empty packet padded with spaces
  expect(["", EMPTY_XMP]).toContain(m.xmp.trimEnd());
}

async function pixels(bytes: Uint8Array) {
  const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

async function setPolicy(groupId: number, metadata: MetadataPolicy) {
  const g = await ctx.admin("PATCH", `/api/admin/groups/${groupId}`, { metadata });
  expect(g.metadata).toBe(metadata);
}

async function served(url: string): Promise<Uint8Array> {
  const res = await ctx.request(url);
  expect(res.status).toBe(200);
  return new Uint8Array(await res.arrayBuffer());
}

async function uploadAs(user: TestUser, format: PhoneFormat, bytes = fixtures[format]) {
  const res = await ctx.upload(user.token, { bytes, filename: `IMG_0001.${ext[format]}`, contentType: mime[format] });
  expectStatus(res, 200);
  return res.body.data;
}

async function profileSize(user: TestUser): Promise<number> {
  const res = await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) });
  return res.body.data.size;
}

/** A group of its own (with the local strategy), a user in it. */
async function userInGroup(metadata?: MetadataPolicy) {
  const group = await ctx.admin("POST", "/api/admin/groups", {
    name: `g${Math.random().toString(36).slice(2, 7)}`,
    strategy_ids: [ctx.localStrategyId],
    ...(metadata ? { metadata } : {}),
  });
  const user = await ctx.createUser({ group_id: group.id });
  return { group, user };
}

describe("the group field", () => {
  test("the default group, the guest group and new groups strip locations; PATCH and POST set it; anything else is a 422", async () => {
    const { groups } = await ctx.admin("GET", "/api/admin/groups");
    for (const g of groups) expect(g.metadata).toBe("strip_location");
    const { group } = await userInGroup();
    expect(group.metadata).toBe("strip_location");
    const created = await ctx.admin("POST", "/api/admin/groups", { name: "keepers", metadata: "keep" });
    expect(created.metadata).toBe("keep");
    await setPolicy(created.id, "strip_all");
    const bad = await ctx.json(`/api/admin/groups/${created.id}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ metadata: "strip_some" }),
    });
    expectStatus(bad, 422);
  });

  test("bun run cli group set --metadata and group create --metadata", async () => {
    const out: string[] = [];
    const env = { BASE_URL: SERVER_URL, ADMIN_TOKEN };
    const io = { out: (s: string) => out.push(s), err: (s: string) => out.push(s) };
    expect(await main(["group", "create", "cli-meta", "--metadata", "strip_all", "--json"], env, io)).toBe(0);
    const created = JSON.parse(out.join("\n"));
    expect(created.metadata).toBe("strip_all");
    out.length = 0;
    expect(await main(["group", "set", String(created.id), "--metadata", "keep", "--json"], env, io)).toBe(0);
    expect(JSON.parse(out.join("\n")).metadata).toBe("keep");
    out.length = 0;
    expect(await main(["group", "set", String(created.id), "--metadata", "nope"], env, io)).not.toBe(0);
  });
});

describe("uploads under each policy: what the original and the thumbnail serve", () => {
  for (const format of ["jpeg", "png", "webp", "avif"] as const) {
    test(`${format}: the fixture carries GPS in EXIF and a location in XMP (the reader sees them)`, async () => {
      const m = await readMetadata(fixtures[format]);
      expect(m.gps).not.toBeNull();
      expect(m.gps!.latitude).toBeCloseTo(48.8584, 3);
      expect(m.xmp).toContain("photoshop:City");
      expect(m.orientation).toBe(6);
      expect(m.iccDescription).toBeTruthy();
    });

    test(`${format} under strip_location: no location survives; camera, orientation, ICC and pixels stay; the answer describes the stored bytes`, async () => {
      const { user } = await userInGroup("strip_location");
      const d = await uploadAs(user, format);
      const original = await served(d.url);
      await expectNoLocation(original);
      // AVIF is cleaned in place, at the same length (no offset moves)
      if (format === "avif") expect(original.byteLength).toBe(fixtures[format].byteLength);
      else expect(original.byteLength).toBeLessThan(fixtures[format].byteLength);
      const m = await readMetadata(original);
      expect(m.tags.Make).toBe("Examplephone");
      expect(m.orientation).toBe(6);
      expect(m.iccDescription).toBe((await readMetadata(fixtures[format])).iccDescription);
      expect(await pixels(original)).toEqual(await pixels(fixtures[format]));
      // the answer and the charge: the stored bytes
      expect(d.size).toBe(kb(original.byteLength));
      expect(d.md5).toBe(md5(original));
      expect(d.sha1).toBe(sha1(original));
      expect([d.width, d.height]).toEqual([480, 640]); // orientation 6: displayed rotated
      expect(await profileSize(user)).toBe(kb(original.byteLength));
      const [row] = await ctx.db.select().from(images).where(eq(images.key, d.key));
      expect(row!.size).toBe(original.byteLength);
      // the record says what went, for the image's page
      expect(row!.metadataRemoved!.policy).toBe("strip_location");
      expect(row!.metadataRemoved!.removed.length).toBeGreaterThan(0);
      expect(row!.metadataRemoved!.removed.join(" ")).toMatch(/GPS|XMP|location/i);
      const [account] = await ctx.db.select().from(users).where(eq(users.id, user.id));
      expect(account!.usedBytes).toBe(original.byteLength);
      // the thumbnail: a separate object, with no location either
      expect(d.thumbnail_url).not.toBe(d.url);
      const thumbnail = await served(d.thumbnail_url);
      await expectNoLocation(thumbnail);
      expect((await readMetadata(thumbnail)).tags.Make).toBeUndefined();
    });

    test(`${format} under strip_all: only the orientation and the ICC profile remain; pixels identical`, async () => {
      const { user } = await userInGroup("strip_all");
      const d = await uploadAs(user, format);
      const original = await served(d.url);
      await expectNoLocation(original);
      const m = await readMetadata(original);
      const text = Buffer.from(original).toString("latin1");
      for (const word of PRIVATE_WORDS) expect(text.includes(word)).toBe(false);
      expect(Object.keys(m.tags).filter((t) => /Make|Model|Serial|Date|Artist|Software|creator/i.test(t))).toEqual([]);
      expect(m.orientation).toBe(6);
      expect(m.iccDescription).toBe((await readMetadata(fixtures[format])).iccDescription);
      expect(await pixels(original)).toEqual(await pixels(fixtures[format]));
      expect([d.size, d.md5, d.sha1]).toEqual([kb(original.byteLength), md5(original), sha1(original)]);
      await expectNoLocation(await served(d.thumbnail_url));
    });

    test(`${format} under keep: the bytes as sent, every location tag still there`, async () => {
      const { user } = await userInGroup("keep");
      const d = await uploadAs(user, format);
      const original = await served(d.url);
      expect(Buffer.compare(original, fixtures[format])).toBe(0);
      const m = await readMetadata(original);
      expect(m.gps!.latitude).toBeCloseTo(48.8584, 3);
      expect(m.gps!.longitude).toBeCloseTo(2.2945, 3);
      for (const word of ["photoshop:City", "Paris", "Iptc4xmpCore:Location", "exif:GPSLatitude"]) expect(m.xmp).toContain(word);
      expect(d.md5).toBe(md5(fixtures[format]));
      const [row] = await ctx.db.select().from(images).where(eq(images.key, d.key));
      expect(row!.metadataRemoved).toEqual({ removed: [] });
    });
  }

  test("the same input gives the same stored bytes every time; an image without metadata is stored unchanged", async () => {
    const { user } = await userInGroup("strip_location");
    const a = await uploadAs(user, "jpeg");
    const b = await uploadAs(user, "jpeg");
    expect(a.md5).toBe(b.md5);
    expect(a.sha1).toBe(b.sha1);
    const plain = await makeImage("png", 64, 48);
    const res = await ctx.upload(user.token, { bytes: plain, filename: "plain.png", contentType: "image/png" });
    expectStatus(res, 200);
    expect(res.body.data.md5).toBe(md5(plain));
  });
});

describe("applyMetadataPolicy on other formats", () => {
  test("GIF: comments and XMP application extensions go, looping and every frame stay", async () => {
    const gif = Buffer.from(await makeAnimatedGif());
    // after the header, the logical screen descriptor and the global colour table: a comment and an XMP extension
    const tableSize = gif[10]! & 0x80 ? 3 * (1 << ((gif[10]! & 7) + 1)) : 0;
    const at = 13 + tableSize;
    const comment = Buffer.concat([Buffer.from([0x21, 0xfe, 12]), Buffer.from("GPS 48.8584N"), Buffer.from([0])]);
    const xmpText = Buffer.from("<x:xmpmeta><photoshop:City>Paris</photoshop:City></x:xmpmeta>");
    const xmp = Buffer.concat([Buffer.from([0x21, 0xff, 11]), Buffer.from("XMP DataXMP"), Buffer.from([xmpText.length]), xmpText, Buffer.from([0])]);
    const tagged = new Uint8Array(Buffer.concat([gif.subarray(0, at), comment, xmp, gif.subarray(at)]));
    const before = await sharp(tagged, { animated: true }).raw().toBuffer();
    const location = applyMetadataPolicy(tagged, "image/gif", "strip_location");
    expect(Buffer.from(location.bytes).toString("latin1")).not.toContain("Paris");
    expect(location.removed).toEqual(["XMP"]);
    const all = applyMetadataPolicy(tagged, "image/gif", "strip_all");
    const text = Buffer.from(all.bytes).toString("latin1");
    expect(text).not.toContain("GPS 48");
    expect((await sharp(all.bytes).metadata()).pages).toBe(2);
    expect(Buffer.compare(await sharp(all.bytes, { animated: true }).raw().toBuffer(), before)).toBe(0);
    expect(Buffer.compare(applyMetadataPolicy(gif, "image/gif", "strip_all").bytes, gif)).toBe(0);
  });

  test("an AVIF whose boxes cannot be walked is refused under a strip policy, never stored as sent; a TIFF without location is stored as sent", async () => {
    const bytes = new Uint8Array([0, 0, 0, 28, 0x66, 0x74, 0x79, 0x70, 0x61, 0x76, 0x69, 0x66]);
    for (const policy of ["strip_location", "strip_all"] as const) {
      expect(() => applyMetadataPolicy(bytes, "image/avif", policy)).toThrow(/could not be walked/);
    }
    expect(applyMetadataPolicy(bytes, "image/avif", "keep")).toEqual({ bytes, changed: false, removed: [] });
    const tiff = await makeImage("tiff", 16, 16);
    expect(applyMetadataPolicy(tiff, "image/tiff", "strip_all")).toEqual({ bytes: tiff, changed: false, removed: [] });
  });
});

describe("bun run cli images strip-metadata", () => {
  async function cli(args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, { BASE_URL: SERVER_URL, ADMIN_TOKEN }, { out: (s) => out.push(s), err: (s) => err.push(s) });
    return { code, stdout: out.join("\n"), stderr: err.join("\n") };
  }

  test("--dry-run reports and writes nothing; the real run strips in place, re-charges, and a second run skips", async () => {
    const { group, user } = await userInGroup("keep");
    const jpeg = await uploadAs(user, "jpeg");
    const png = await uploadAs(user, "png");
    const plain = await ctx.upload(user.token, { bytes: await makeImage("png", 64, 48), filename: "plain.png", contentType: "image/png" });
    expectStatus(plain, 200);
    const before = await served(jpeg.url);
    expect((await readMetadata(before)).gps).not.toBeNull();
    const usedBefore = (await ctx.db.select().from(users).where(eq(users.id, user.id)))[0]!.usedBytes;
    const strategyBefore = (await ctx.db.select().from(strategies).where(eq(strategies.id, ctx.localStrategyId)))[0]!.usedBytes;

    // under keep, there is nothing to do
    const keep = await cli(["images", "strip-metadata", "--group", String(group.id)]);
    expect(keep.code).toBe(0);
    expect(keep.stdout).toContain("policy is keep");

    await setPolicy(group.id, "strip_all");
    const dry = await cli(["images", "strip-metadata", "--group", String(group.id), "--dry-run", "--batch", "2"]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`would change #`);
    expect(dry.stdout).toContain("Dry run (nothing written): would change 2, skipped 1");
    expect(dry.stdout).toContain("nothing to strip");
    expect(Buffer.compare(await served(jpeg.url), before)).toBe(0);

    const real = await cli(["images", "strip-metadata", "--group", String(group.id), "--batch", "2", "--json"]);
    expect(real.code).toBe(0);
    const report = JSON.parse(real.stdout);
    expect(report).toMatchObject({ group_id: group.id, policy: "strip_all", dry_run: false, changed: 2, skipped: 1 });
    expect(report.items.find((i: any) => i.key === jpeg.key).removed).toEqual(expect.arrayContaining(["EXIF", "XMP"]));

    // same addresses, stripped bytes, records and charges updated
    let freed = 0;
    for (const d of [jpeg, png]) {
      const now = await served(d.url);
      await expectNoLocation(now);
      expect((await readMetadata(now)).orientation).toBe(6);
      const [row] = await ctx.db.select().from(images).where(eq(images.key, d.key));
      expect([row!.size, row!.md5, row!.sha1]).toEqual([now.byteLength, md5(now), sha1(now)]);
      expect(await pixels(now)).toEqual(await pixels(d.key === jpeg.key ? fixtures.jpeg : fixtures.png));
      freed += kb(0) + (d.key === jpeg.key ? fixtures.jpeg.byteLength : fixtures.png.byteLength) - now.byteLength;
    }
    const usedAfter = (await ctx.db.select().from(users).where(eq(users.id, user.id)))[0]!.usedBytes;
    const strategyAfter = (await ctx.db.select().from(strategies).where(eq(strategies.id, ctx.localStrategyId)))[0]!.usedBytes;
    expect(usedBefore - usedAfter).toBe(freed);
    expect(strategyBefore - strategyAfter).toBe(freed);

    const again = await cli(["images", "strip-metadata", "--group", String(group.id), "--after-id", "0"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("Changed 0, skipped 3");
  });

  test("an unknown group is refused", async () => {
    const r = await cli(["images", "strip-metadata", "--group", "999999"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.toLowerCase()).toContain("group not found");
  });
});
