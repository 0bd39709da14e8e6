/**
 * Cost before trust: what a stranger can make the server read, hold or try, and how the service answers.
 * Bodies are streams that count what the server pulls from them, so "read nothing" is measured, not assumed.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { desc } from "drizzle-orm";
import sharp from "sharp";
import { eq } from "drizzle-orm";
import { images, uploadLeases } from "../../src/db/schema.ts";
import { envSchema } from "../../src/env.ts";
import { jpegScanCount, MAX_JPEG_SCANS } from "../../src/images/inspect.ts";
import { FairWorkQueue } from "../../src/services/work-queue.ts";
import { createTestContext, quietly, type TestContext, type TestUser } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

const CHUNK = 64 * 1024;

/** A multipart upload whose file part streams `fileBytes` bytes, counting what the server pulls; `stallAfter` stops sending (without ending) after that many bytes. */
function streamingUpload(options: { fields?: Record<string, string>; fileBytes: number; stallAfter?: number }) {
  const boundary = "----hardening";
  const head = Object.entries(options.fields ?? {})
    .map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)
    .join("");
  const fileHead = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`;
  const prefix = new TextEncoder().encode(head + fileHead);
  const tail = new TextEncoder().encode(`\r\n--${boundary}--\r\n`);
  const total = prefix.length + options.fileBytes + tail.length;
  const counter = { pulled: 0, cancelled: false };
  let sent = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (options.stallAfter !== undefined && sent >= options.stallAfter) return new Promise(() => {}); // a sender gone quiet
        let chunk: Uint8Array;
        if (sent < prefix.length) chunk = prefix;
        else if (sent < prefix.length + options.fileBytes) chunk = new Uint8Array(Math.min(CHUNK, prefix.length + options.fileBytes - sent));
        else if (sent < total) chunk = tail;
        else return controller.close();
        sent += chunk.length;
        counter.pulled = sent;
        controller.enqueue(chunk);
      },
      cancel() {
        counter.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { body, contentType: `multipart/form-data; boundary=${boundary}`, total, counter };
}

async function contextWithUser(config: Parameters<typeof createTestContext>[0] = {}) {
  const ctx = await createTestContext(config);
  return { ctx, alice: await ctx.createUser() };
}

function postUpload(ctx: TestContext, upload: ReturnType<typeof streamingUpload>, headers: Record<string, string> = {}) {
  return ctx.request("/api/v1/upload", {
    method: "POST",
    headers: { "content-type": upload.contentType, ...headers },
    body: upload.body,
    // @ts-expect-error Bun and the fetch standard need it for a streamed request body
    duplex: "half",
  });
}

describe("no body is read before the sender is known", () => {
  let ctx: TestContext, alice: TestUser;
  beforeAll(async () => ({ ctx, alice } = await contextWithUser()));
  afterAll(() => ctx.close());

  test("without a credential and guest upload off: 401 once the file part begins, having read at most the small fields", async () => {
    const upload = streamingUpload({ fileBytes: 50 * 1024 * 1024 });
    const body = await expectStatus(await postUpload(ctx, upload), 401);
    expect(body.message).toBe(
      "Guest upload is disabled: send 'Authorization: Bearer <token>', or a form field 'token' before the file part (a token after the file is never read).",
    );
    expect(upload.counter.pulled).toBeLessThan(3 * CHUNK); // of 50 MB offered
    expect(upload.counter.cancelled).toBe(true);
  });

  test("a wrong token in the header: 401 before a byte of the body", async () => {
    const upload = streamingUpload({ fileBytes: 10 * 1024 * 1024 });
    await expectStatus(await postUpload(ctx, upload, ctx.bearer("1|wrong")), 401);
    expect(upload.counter.pulled).toBeLessThanOrEqual(CHUNK);
  });

  test("a guest body is capped at the guest group's own limit, not the largest of any group", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.guestGroupId}`, { max_file_size_kb: 100, strategy_ids: [ctx.localStrategyId] });
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { max_file_size_kb: 100 * 1024 });
    try {
      const upload = streamingUpload({ fileBytes: 20 * 1024 * 1024 });
      const body = await expectStatus(await postUpload(ctx, upload), 400);
      expect(body.message).toBe("The file is larger than the limit of 100 KB.");
      expect(upload.counter.pulled).toBeLessThan(100 * 1024 + 64 * 1024 + 2 * CHUNK);
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: false });
    }
  });

  test("a user's body is capped at the user's group limit", async () => {
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { max_file_size_kb: 200 });
    const upload = streamingUpload({ fileBytes: 20 * 1024 * 1024 });
    const body = await expectStatus(await postUpload(ctx, upload, ctx.bearer(alice.token)), 400);
    expect(body.message).toBe("The file is larger than the limit of 200 KB.");
    expect(upload.counter.pulled).toBeLessThan(200 * 1024 + 64 * 1024 + 2 * CHUNK);
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { max_file_size_kb: 10240 });
  });

  test("a temporary token in the form works before the file part; after it, the file is refused unread", async () => {
    const { body } = await ctx.json("/api/v1/images/tokens", {
      method: "POST",
      headers: { ...ctx.bearer(alice.token), "content-type": "application/json" },
      body: JSON.stringify({ num: 1, seconds: 60 }),
    });
    const token = body.data.tokens[0].token as string;
    const png = await makeImage("png", 20, 20);
    const before = await ctx.upload(null, { bytes: png, filename: "a.png", contentType: "image/png" }, { token });
    expectStatus(before, 200);

    const after = streamingUpload({ fileBytes: 5 * 1024 * 1024, fields: {} });
    // the token after the file: the server never reaches it, and says where the token must be
    const refused = await expectStatus(await postUpload(ctx, after), 401);
    expect(refused.message).toBe(
      "Guest upload is disabled: send 'Authorization: Bearer <token>', or a form field 'token' before the file part (a token after the file is never read).",
    );
    expect(after.counter.pulled).toBeLessThan(3 * CHUNK);
    // the same with a real form whose token field follows the file (the message names the remedy)
    const form = new FormData();
    form.append("file", new File([Buffer.from(png)], "a.png", { type: "image/png" }));
    form.append("token", token);
    const late = await ctx.request("/api/v1/upload", { method: "POST", body: form });
    expect((await expectStatus(late, 401)).message).toContain("a form field 'token' before the file part");
  });
});

describe("upload bodies are bounded per address, in total and in time", () => {
  let ctx: TestContext, alice: TestUser;
  beforeAll(async () => ({ ctx, alice } = await contextWithUser({ uploadBodies: { perAddress: 2, total: 3 }, uploadReadTimeoutSeconds: 1 })));
  afterAll(() => ctx.close());

  test("strangers beyond the per-address bound: 429; anyone beyond the total: 503; both with Retry-After; a slot frees when its body ends", async () => {
    await ctx.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: true });
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.guestGroupId}`, { strategy_ids: [ctx.localStrategyId] });
    const from = (address: string) => ({ "x-forwarded-for": address }); // guests: strangers
    const stalled = [1, 2].map(() => streamingUpload({ fileBytes: 1024 * 1024, stallAfter: CHUNK }));
    const pending = stalled.map((u) => postUpload(ctx, u, from("198.51.100.1")));
    await Bun.sleep(50);

    const third = await postUpload(ctx, streamingUpload({ fileBytes: 10 }), from("198.51.100.1"));
    const body = await expectStatus(third, 429);
    expect(body.message).toBe("Too many uploads in progress from your address: at most 2 at a time.");
    expect(third.headers.get("retry-after")).toBe("5");

    const otherStalled = streamingUpload({ fileBytes: 1024 * 1024, stallAfter: CHUNK });
    const otherPending = postUpload(ctx, otherStalled, from("198.51.100.2"));
    await Bun.sleep(50);
    // a caller known from its token is not bound per address, but it is by the total
    const overTotal = await postUpload(ctx, streamingUpload({ fileBytes: 10 }), { ...ctx.bearer(alice.token), ...from("198.51.100.1") });
    expect((await expectStatus(overTotal, 503)).message).toBe("The server is receiving too many uploads: retry in a few seconds.");
    expect(overTotal.headers.get("retry-after")).toBe("5");

    // the stalled senders are cut off by the read deadline (1 s here), which frees their slots
    for (const res of await Promise.all([...pending, otherPending])) {
      expect((await expectStatus(res, 408)).message).toBe("The request body was not received within 1 second.");
    }
    const png = await makeImage("png", 20, 20);
    expectStatus(
      await ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }, {}, { headers: { "x-forwarded-for": "198.51.100.1" } }),
      200,
    );
  });
});

describe("a known caller takes its slots before its body is read", () => {
  let ctx: TestContext, alice: TestUser, bob: TestUser;
  beforeAll(async () => {
    ({ ctx, alice } = await contextWithUser({ uploadBodies: { perAddress: 4, perCaller: 3, total: 8 }, uploadReadTimeoutSeconds: 2 }));
    bob = await ctx.createUser();
  });
  afterAll(() => ctx.close());

  const leasesOf = async (userId: number) =>
    (
      await ctx.db
        .select()
        .from(uploadLeases)
        .where(eq(uploadLeases.subject, `user:${userId}`))
    ).length;

  test("beyond the group's concurrency: 400 before a byte of the body; the total bound stays free for everyone else", async () => {
    await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { concurrent_uploads: 1 });
    try {
      const first = streamingUpload({ fileBytes: 1024 * 1024, stallAfter: CHUNK });
      const firstPending = postUpload(ctx, first, ctx.bearer(alice.token));
      for (let i = 0; i < 50 && first.counter.pulled === 0; i++) await Bun.sleep(20);
      // the attack: many slow bodies from one account whose group allows one upload at a time
      const more = Array.from({ length: 12 }, () => streamingUpload({ fileBytes: 9 * 1024 * 1024, stallAfter: CHUNK }));
      const answers = await Promise.all(more.map((u) => postUpload(ctx, u, ctx.bearer(alice.token))));
      for (const res of answers) expect((await expectStatus(res, 400)).message).toBe("Too many concurrent uploads: at most 1 at a time.");
      const pulled = more.reduce((sum, u) => sum + u.counter.pulled, 0);
      expect(pulled).toBeLessThanOrEqual(12 * CHUNK); // at most what fetch hands over before the answer, of 108 MB offered
      expect(await leasesOf(alice.id)).toBe(1);
      // another account is not refused: the process's total is not held by the refused bodies
      const png = await makeImage("png", 20, 20);
      expectStatus(await ctx.upload(bob.token, { bytes: png, filename: "b.png", contentType: "image/png" }), 200);
      expect((await expectStatus(await firstPending, 408)).message).toBe("The request body was not received within 2 seconds.");
      expect(await leasesOf(alice.id)).toBe(0);
    } finally {
      await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { concurrent_uploads: null });
    }
  });

  test("without a group limit, one caller holds at most its share of the total (400 beyond, a failed upload check), and others still upload", async () => {
    const stalled = Array.from({ length: 3 }, () => streamingUpload({ fileBytes: 1024 * 1024, stallAfter: CHUNK }));
    const pending = stalled.map((u) => postUpload(ctx, u, ctx.bearer(alice.token)));
    for (let i = 0; i < 100 && stalled.some((u) => u.counter.pulled === 0); i++) await Bun.sleep(20);
    await Bun.sleep(300); // pulled by the client is not yet received by the server
    const beyond = streamingUpload({ fileBytes: 9 * 1024 * 1024 });
    const res = await postUpload(ctx, beyond, ctx.bearer(alice.token));
    expect((await expectStatus(res, 400)).message).toBe("Too many of your uploads are in progress on this server: at most 3 at a time.");
    expect(res.headers.get("retry-after")).toBe("5");
    expect(beyond.counter.pulled).toBeLessThanOrEqual(CHUNK);
    const png = await makeImage("png", 20, 20);
    expectStatus(await ctx.upload(bob.token, { bytes: png, filename: "b.png", contentType: "image/png" }), 200);
    for (const r of await Promise.all(pending)) expectStatus(r, 408);
  });
});

describe("failed authentications are throttled per address", () => {
  let ctx: TestContext, alice: TestUser;
  beforeAll(async () => ({ ctx, alice } = await contextWithUser({ authFailures: { burst: 3, perMinute: 60 } })));
  afterAll(() => ctx.close());
  const profile = (token: string, address: string) => ctx.request("/api/v1/profile", { headers: { ...ctx.bearer(token), "x-forwarded-for": address } });

  test("after the burst: 429 with Retry-After, even for a right token, until the bucket refills; other addresses unaffected", async () => {
    for (let i = 0; i < 3; i++) expectStatus(await profile(`${i}|guess`, "203.0.113.9"), 401);
    const refused = await profile("9|guess", "203.0.113.9");
    expect((await expectStatus(refused, 429)).message).toBe("Too many failed authentications from your address: retry in 1 s.");
    expect(refused.headers.get("retry-after")).toBe("1");
    // refused before the credential is looked at: a guessed right token would not be confirmed
    await expectStatus(await profile(alice.token, "203.0.113.9"), 429);
    // successful calls from elsewhere are not slowed or refused
    await expectStatus(await profile(alice.token, "203.0.113.10"), 200);
    await Bun.sleep(1100);
    await expectStatus(await profile(alice.token, "203.0.113.9"), 200);
  });

  test("the admin token is throttled the same way", async () => {
    const admin = (token: string) => ctx.request("/api/admin/settings", { headers: { ...ctx.bearer(token), "x-forwarded-for": "203.0.113.20" } });
    for (let i = 0; i < 3; i++) expectStatus(await admin("not-the-admin-token"), 401);
    await expectStatus(await admin("not-the-admin-token"), 429);
  });

  test("no credential at all is not a failure: guests are never throttled by it", async () => {
    for (let i = 0; i < 5; i++) {
      const res = await ctx.request("/api/v1/strategies", { headers: { "x-forwarded-for": "203.0.113.30" } });
      expect((await expectStatus(res, 401)).message).toStartWith("Guest upload is disabled");
    }
  });
});

describe("the client address behind proxies", () => {
  let ctx: TestContext, alice: TestUser;
  beforeAll(async () => ({ ctx, alice } = await contextWithUser({ trustedProxies: 2 })));
  afterAll(() => ctx.close());

  test("is the X-Forwarded-For entry the trusted proxies appended, never what the client wrote", async () => {
    const png = await makeImage("png", 20, 20);
    const send = (xff: string) =>
      ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }, {}, { headers: { "x-forwarded-for": xff } });
    // client-written "1.1.1.1", then the outer proxy appended the client's real address, then the inner proxy its own
    expectStatus(await send("1.1.1.1, 198.51.100.44, 10.0.0.2"), 200);
    const [last] = await ctx.db.select({ ip: images.uploaderIp }).from(images).orderBy(desc(images.id)).limit(1);
    expect(last!.ip).toBe("198.51.100.44");
  });
});

describe("configuration and failures", () => {
  test("ADMIN_TOKEN shorter than 32 characters is refused", () => {
    const short = envSchema.safeParse({ ADMIN_TOKEN: "x".repeat(31) });
    expect(short.success).toBe(false);
    expect(short.error!.issues[0]!.message).toStartWith("must be at least 32 characters");
    expect(envSchema.safeParse({ ADMIN_TOKEN: "x".repeat(32) }).success).toBe(true);
  });

  test("TRUST_PROXY takes true/false or a number of proxies", () => {
    const hops = (v: string) => {
      const parsed = envSchema.safeParse({ TRUST_PROXY: v });
      return parsed.success ? parsed.data.TRUST_PROXY : "invalid";
    };
    expect([hops("false"), hops("true"), hops("2"), hops("maybe"), hops("11")]).toEqual([0, 1, 2, "invalid", "invalid"]);
  });

  test("a group with a retention ceiling keeps an upload without expired_at exactly that long", async () => {
    const ctx = await createTestContext();
    try {
      const alice = await ctx.createUser();
      await ctx.admin("PATCH", `/api/admin/groups/${ctx.defaultGroupId}`, { retention_max_seconds: 3600 });
      const png = await makeImage("png", 20, 20);
      const res = await ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" });
      const body = expectStatus(res, 200);
      const expected = new Date(Date.parse(body.data.created_at.replace(" ", "T")) + 3600_000);
      expect(Date.parse(body.data.expired_at.replace(" ", "T"))).toBe(expected.getTime());
    } finally {
      await ctx.close();
    }
  });

  test("a storage failure answers 500 with a request_id that the failure's log line carries too", async () => {
    const ctx = await createTestContext();
    try {
      const alice = await ctx.createUser();
      await ctx.admin("PATCH", "/api/admin/strategies/1", { config: { root: "/proc/forbidden-root" } });
      const png = await makeImage("png", 20, 20);
      const { result, logged } = await quietly(() => ctx.upload(alice.token, { bytes: png, filename: "a.png", contentType: "image/png" }));
      const body = expectStatus(result, 500);
      expect(body).toEqual({ status: false, message: "The storage service failed; nothing was stored.", data: null, request_id: expect.any(String) });
      expect(logged.map((l) => JSON.stringify(l)).some((line) => line.includes(body.request_id))).toBe(true);
    } finally {
      await ctx.close();
    }
  });
});

describe("images that cost more than they show", () => {
  let ctx: TestContext, alice: TestUser;
  beforeAll(async () => ({ ctx, alice } = await contextWithUser()));
  afterAll(() => ctx.close());

  test("a JPEG with more scans than the decode budget allows is refused before decoding; nothing stored or charged", async () => {
    const progressive = Buffer.from(
      await sharp({ create: { width: 600, height: 400, channels: 3, background: "#468" } })
        .jpeg({ progressive: true })
        .toBuffer(),
    );
    expect(jpegScanCount(progressive)).toBe(10);
    // repeat its first scan: a decoder would have to run every one of them
    const sos = progressive.indexOf(Buffer.from([0xff, 0xda]));
    const nextMarker = progressive.indexOf(Buffer.from([0xff, 0xda]), sos + 2);
    const many = Buffer.concat([
      progressive.subarray(0, nextMarker),
      ...Array(40).fill(progressive.subarray(sos, nextMarker)),
      progressive.subarray(nextMarker),
    ]);
    expect(jpegScanCount(many)).toBe(50);
    const res = await ctx.upload(alice.token, { bytes: many, filename: "scans.jpg", contentType: "image/jpeg" });
    expect(expectStatus(res, 400).message).toBe(`The JPEG has 50 scans; at most ${MAX_JPEG_SCANS} are accepted (it would take too long to decode).`);
    // one stray byte after the frame header (libjpeg skips it with a warning) hides no scan
    const sof = many.indexOf(Buffer.from([0xff, 0xc2]));
    const afterFrame = sof + 2 + many.readUInt16BE(sof + 2);
    const stray = Buffer.concat([many.subarray(0, afterFrame), Buffer.from([0x42]), many.subarray(afterFrame)]);
    const cpuBefore = process.cpuUsage();
    const refused = await ctx.upload(alice.token, { bytes: stray, filename: "stray.jpg", contentType: "image/jpeg" });
    expect(expectStatus(refused, 400).message).toBe(`The JPEG has 50 scans; at most ${MAX_JPEG_SCANS} are accepted (it would take too long to decode).`);
    const cpu = process.cpuUsage(cpuBefore);
    expect((cpu.user + cpu.system) / 1e6).toBeLessThan(1); // refused from its markers, not decoded
    const profile = expectStatus(await ctx.json("/api/v1/profile", { headers: ctx.bearer(alice.token) }), 200);
    expect([profile.data.image_num, profile.data.size]).toEqual([0, 0]);
  });

  test("the image work queue takes turns between subjects and bounds what waits", async () => {
    const queue = new FairWorkQueue({ concurrency: 1, waitingPerSubject: 3, waiting: 10 });
    const order: string[] = [];
    const job = (name: string) => async () => {
      order.push(name);
      await Bun.sleep(5);
    };
    const runs = [queue.run("abuser", job("a1")), queue.run("abuser", job("a2")), queue.run("abuser", job("a3")), queue.run("abuser", job("a4"))];
    // a known caller beyond its share: a failed check (400); the whole queue full: a service-wide cap (503)
    await expect(queue.run("abuser", job("a5"))).rejects.toMatchObject({
      status: 400,
      message: "Too many of your images are waiting to be processed: at most 3.",
      headers: { "retry-after": "2" },
    });
    runs.push(queue.run("other", job("b1")));
    const full = new FairWorkQueue({ concurrency: 1, waitingPerSubject: 3, waiting: 1 });
    const held = [full.run("x", job("x1")), full.run("y", job("y1"))];
    await expect(full.run("z", job("z1"))).rejects.toMatchObject({ status: 503, message: "The server is busy processing images: retry in a few seconds." });
    await Promise.all([...runs, ...held]);
    order.splice(order.indexOf("x1"), 1);
    order.splice(order.indexOf("y1"), 1);
    // subjects take turns: the other caller waits for the running job and one turn of the abuser's, not for all of them
    expect(order).toEqual(["a1", "a2", "b1", "a3", "a4"]);
  });
});

describe("names and disconnects", () => {
  let ctx: TestContext, alice: TestUser;
  beforeAll(async () => ({ ctx, alice } = await contextWithUser()));
  afterAll(() => ctx.close());

  test("a long name keeps its extension; invisible and bidirectional characters leave origin_name and the snippets", async () => {
    const png = await makeImage("png", 20, 20);
    const long = expectStatus(await ctx.upload(alice.token, { bytes: png, filename: `${"n".repeat(400)}.png`, contentType: "image/png" }), 200);
    expect(long.data.origin_name).toBe(`${"n".repeat(251)}.png`);
    const sneaky = expectStatus(await ctx.upload(alice.token, { bytes: png, filename: "inv\u202Egnp.oice\u200B\u0007.png", contentType: "image/png" }), 200);
    expect(sneaky.data.origin_name).toBe("invgnp.oice.png");
    expect(sneaky.data.html).toBe(`<img src="${sneaky.data.url}" alt="invgnp.oice.png">`);
    expect(sneaky.data.markdown).toBe(`![invgnp.oice.png](${sneaky.data.url})`);
  });

  test("a client that goes away mid-body: a plain 400, nothing logged, nothing stored", async () => {
    let sent = 0;
    const boundary = "----gone";
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ === 0) {
          controller.enqueue(
            new TextEncoder().encode(
              `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n${"x".repeat(5000)}`,
            ),
          );
        } else controller.error(new DOMException("The connection was closed.", "AbortError"));
      },
    });
    const { result, logged } = await quietly(() =>
      ctx.request("/api/v1/upload", {
        method: "POST",
        headers: { ...ctx.bearer(alice.token), "content-type": `multipart/form-data; boundary=${boundary}` },
        body,
        // @ts-expect-error Bun and the fetch standard need it for a streamed request body
        duplex: "half",
      }),
    );
    expect((await expectStatus(result, 400)).message).toBe("The request body ended early: the connection was closed.");
    expect(logged).toEqual([]);
    const profile = expectStatus(await ctx.json("/api/v1/profile", { headers: ctx.bearer(alice.token) }), 200);
    expect(profile.data.image_num).toBe(2); // the two of the test before
    expect(readdirSync(join(ctx.dataDir, "uploads"), { recursive: true }).filter((f) => String(f).includes(".part"))).toEqual([]);
  });
});
