/**
 * The SSRF guard of outgoing webhooks (src/webhooks/address-guard.ts) and the one-shot sender (src/webhooks/send.ts):
 * which addresses are refused and why, the operator's allow list, and sends to local receivers — delivered when
 * allowed, refused otherwise, redirects not followed, the time bound, the response cap, and the connection pinned to
 * the address checked (a second DNS answer is never used). Nothing here talks to anything but loopback: every name is
 * answered by an injected resolver, except `localhost`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  checkDestination,
  checkUrlSyntax,
  defaultResolver,
  forbiddenReason,
  isAllowed,
  parseAllowList,
  type AllowList,
  type Resolver,
} from "../../src/webhooks/address-guard.ts";
import { sendWebhook } from "../../src/webhooks/send.ts";

const NONE = parseAllowList(undefined);
const fixed =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses;
const unreachable: Resolver = async (name) => {
  throw new Error(`the resolver must not be asked for ${name}`);
};

interface Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** A loopback receiver that records every request and answers with `answer`. */
function receiver(answer: (req: Request) => Response | Promise<Response> = () => new Response("ok"), hostname = "127.0.0.1", port = 0) {
  const seen: Seen[] = [];
  const server = Bun.serve({
    hostname,
    port,
    async fetch(req) {
      const url = new URL(req.url);
      const headers: Record<string, string> = {};
      req.headers.forEach((value, name) => (headers[name] = value));
      seen.push({ method: req.method, path: url.pathname + url.search, headers, body: await req.text() });
      return answer(req);
    },
  });
  servers.push(server);
  return { server, seen, port: server.port!, url: `http://127.0.0.1:${server.port}` };
}
const servers: Array<ReturnType<typeof Bun.serve>> = [];
afterAll(() => {
  for (const s of servers) s.stop(true);
});

describe("forbiddenReason", () => {
  const table: Array<[string, string]> = [
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["10.0.0.5", "private"],
    ["10.255.255.255", "private"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["100.127.255.254", "carrier-grade NAT"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["169.254.169.254", "metadata"],
    ["169.254.1.1", "link-local"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.1", "documentation"],
    ["192.168.1.1", "private"],
    ["198.18.0.1", "benchmarking"],
    ["198.19.255.255", "benchmarking"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "broadcast"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf:ffff::1", "link-local"],
    ["fc00::1", "unique-local"],
    ["fd12:3456::1", "unique-local"],
    ["fd00:ec2::254", "metadata"],
    ["ff02::1", "multicast"],
    ["ff0e::101", "multicast"],
    ["2001:db8::1", "documentation"],
    ["2001:db8:ffff::1", "documentation"],
    ["100::1", "discard-only"],
    ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
    ["::ffff:7f00:1", "IPv4-mapped loopback"],
    ["0:0:0:0:0:ffff:7f00:0001", "IPv4-mapped loopback"],
    ["::ffff:10.0.0.1", "IPv4-mapped private"],
    ["::ffff:a9fe:a9fe", "IPv4-mapped metadata"],
    ["::ffff:0.0.0.0", "IPv4-mapped unspecified"],
    ["::127.0.0.1", "IPv4-compatible loopback"],
    ["::7f00:1", "IPv4-compatible loopback"],
    ["::192.168.0.1", "IPv4-compatible private"],
    ["64:ff9b::127.0.0.1", "NAT64 loopback"],
    ["64:ff9b::a9fe:a9fe", "NAT64 metadata"],
    ["2002:7f00:1::", "6to4 loopback"],
    ["2002:a00:5::1", "6to4 private"],
    ["2001::1", "Teredo"],
    ["fec0::1", "site-local"],
    ["4000::1", "reserved"],
    ["::ffff:0:7f00:1", "reserved"],
    ["not-an-ip", "not an IP address"],
    ["127.0.0.01", "not an IP address"],
    ["1::2::3", "not an IP address"],
  ];
  test.each(table)("%s is %s", (ip, reason) => {
    expect(forbiddenReason(ip)).toBe(reason);
  });

  test.each([
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::8.8.8.8",
    "2002:808:808::1",
  ])("%s is public", (ip) => {
    expect(forbiddenReason(ip)).toBeNull();
  });

  test("range edges", () => {
    expect(forbiddenReason("9.255.255.255")).toBeNull();
    expect(forbiddenReason("11.0.0.0")).toBeNull();
    expect(forbiddenReason("100.63.255.255")).toBeNull();
    expect(forbiddenReason("100.128.0.0")).toBeNull();
    expect(forbiddenReason("172.15.255.255")).toBeNull();
    expect(forbiddenReason("172.32.0.0")).toBeNull();
    expect(forbiddenReason("198.17.255.255")).toBeNull();
    expect(forbiddenReason("198.20.0.0")).toBeNull();
    expect(forbiddenReason("223.255.255.255")).toBeNull();
    expect(forbiddenReason("fbff::1")).toBe("reserved");
    expect(forbiddenReason("2001:db9::1")).toBeNull();
  });
});

describe("parseAllowList and isAllowed", () => {
  test("empty or unset allows nothing", () => {
    for (const text of [undefined, "", " , \n "]) {
      const allow = parseAllowList(text);
      expect(isAllowed(allow, "127.0.0.1", "127.0.0.1")).toBe(false);
      expect(isAllowed(allow, "localhost", "127.0.0.1")).toBe(false);
    }
  });

  test("host names, addresses and ranges, separated by commas or white space", () => {
    const allow = parseAllowList("Purge.Internal, 127.0.0.1\n10.20.0.0/16\tfd00::/8 ::1");
    expect(isAllowed(allow, "purge.internal", "10.9.9.9")).toBe(true);
    expect(isAllowed(allow, "PURGE.internal.", "10.9.9.9")).toBe(true);
    expect(isAllowed(allow, "other.internal", "10.9.9.9")).toBe(false);
    expect(isAllowed(allow, "x.purge.internal", "10.9.9.9")).toBe(false);
    expect(isAllowed(allow, "a.example", "127.0.0.1")).toBe(true);
    expect(isAllowed(allow, "a.example", "::ffff:127.0.0.1")).toBe(true);
    expect(isAllowed(allow, "a.example", "127.0.0.2")).toBe(false);
    expect(isAllowed(allow, "a.example", "10.20.255.1")).toBe(true);
    expect(isAllowed(allow, "a.example", "10.21.0.1")).toBe(false);
    expect(isAllowed(allow, "a.example", "fd12::1")).toBe(true);
    expect(isAllowed(allow, "a.example", "fc00::1")).toBe(false);
    expect(isAllowed(allow, "[::1]", "::1")).toBe(true);
  });

  test.each([
    ["http://purge.internal", "http://purge.internal"],
    ["10.0.0.0/33", "10.0.0.0/33"],
    ["fd00::/129", "fd00::/129"],
    ["10.0.0/8", "10.0.0/8"],
    ["10.0.0.0/x", "10.0.0.0/x"],
    ["*.internal", "*.internal"],
    ["a..b", "a..b"],
    ["-bad.example", "-bad.example"],
    ["256.1.1.1", "256.1.1.1"],
    ["fd00:::1", "fd00:::1"],
    ["ok.example,bad_name!", "bad_name!"],
  ])("%s is refused, naming the entry", (text, entry) => {
    expect(() => parseAllowList(text)).toThrow(`"${entry}"`);
  });
});

describe("checkUrlSyntax", () => {
  test("acceptable URLs", () => {
    for (const url of ["https://hooks.example.com/in?x=1", "http://203.0.113.5:8080/", "https://[2001:db8::1]/h", "HTTPS://Example.COM"]) {
      expect(checkUrlSyntax(url)).toBeNull();
    }
  });
  test.each([
    ["ftp://example.com/", "scheme"],
    ["file:///etc/passwd", "scheme"],
    ["javascript:alert(1)", "scheme"],
    ["https://user:pw@example.com/", "password"],
    ["https://user@example.com/", "user name"],
    ["/relative/path", "absolute"],
    ["example.com/hook", "absolute"],
    ["http:example.com", "absolute"],
    ["https://exa mple.com/", "white space"],
    [`https://example.com/${"a".repeat(2040)}`, "2048"],
    ["https://", "valid"],
  ])("%s is refused (%s)", (url, why) => {
    expect(checkUrlSyntax(url)).toContain(why);
  });
});

describe("checkDestination", () => {
  const refused = async (url: string, resolve: Resolver = unreachable, allow: AllowList = NONE) => {
    const result = await checkDestination(new URL(url), allow, resolve);
    if (result.ok) throw new Error(`${url} was let through to ${result.address}`);
    return result.reason;
  };

  test.each([
    ["http://127.0.0.1/", "127.0.0.1 is a loopback address"],
    ["http://127.1/", "127.0.0.1 is a loopback address"],
    ["http://2130706433/", "127.0.0.1 is a loopback address"],
    ["http://0x7f.1/", "127.0.0.1 is a loopback address"],
    ["http://0177.0.0.1/", "127.0.0.1 is a loopback address"],
    ["http://0x7f000001/", "127.0.0.1 is a loopback address"],
    ["http://10.0.0.5:8080/", "10.0.0.5 is a private address"],
    ["http://192.168.0.1/", "192.168.0.1 is a private address"],
    ["http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a metadata address"],
    ["http://169.254.10.1/", "169.254.10.1 is a link-local address"],
    ["http://0.0.0.0/", "0.0.0.0 is an unspecified address"],
    ["http://[::1]/", "::1 is a loopback address"],
    ["http://[::]/", ":: is an unspecified address"],
    ["http://[::ffff:127.0.0.1]/", "::ffff:7f00:1 is an IPv4-mapped loopback address"],
    ["http://[::ffff:7f00:1]/", "::ffff:7f00:1 is an IPv4-mapped loopback address"],
    ["http://[fd00:ec2::254]/", "fd00:ec2::254 is a metadata address"],
    ["http://[fe80::1]/", "fe80::1 is a link-local address"],
  ])("IP literal %s", async (url, reason) => {
    expect(await refused(url)).toBe(reason);
  });

  test("localhost resolves to loopback (the system's resolver)", async () => {
    expect(await refused("http://localhost:9/", defaultResolver)).toMatch(/^(127\.0\.0\.1|::1) is a loopback address$/);
  });

  test("a name that resolves to a private address", async () => {
    expect(await refused("https://hooks.example/", fixed("10.0.0.5"))).toBe("10.0.0.5 is a private address");
  });

  test("a name with public and private answers is refused whatever their order", async () => {
    expect(await refused("https://hooks.example/", fixed("93.184.216.34", "10.0.0.5"))).toBe("10.0.0.5 is a private address");
    expect(await refused("https://hooks.example/", fixed("2606:4700:4700::1111", "::ffff:169.254.169.254"))).toBe(
      "::ffff:169.254.169.254 is an IPv4-mapped metadata address",
    );
  });

  test("resolution failures and empty answers are refused", async () => {
    const nx: Resolver = async () => {
      throw Object.assign(new Error("getaddrinfo ENOTFOUND nowhere.example"), { code: "ENOTFOUND" });
    };
    expect(await refused("https://nowhere.example/", nx)).toBe("cannot resolve nowhere.example (ENOTFOUND)");
    expect(await refused("https://nowhere.example/", fixed())).toBe("nowhere.example resolves to no address");
    expect(await refused("https://nowhere.example/", fixed("banana"))).toContain("not an IP address");
  });

  test("schemes other than http and https, and credentials", async () => {
    expect(await refused("ftp://example.com/")).toContain("ftp:");
    expect(await refused("file:///etc/passwd")).toContain("file:");
    expect(await refused("gopher://127.0.0.1:6379/")).toContain("gopher:");
    expect(await refused("https://user:secret@hooks.example/", fixed("93.184.216.34"))).toContain("user name or password");
    expect(await refused("https://user@hooks.example/", fixed("93.184.216.34"))).toContain("user name or password");
  });

  test("a public name is let through to its first address", async () => {
    expect(await checkDestination(new URL("https://hooks.example/"), NONE, fixed("93.184.216.34", "2606:4700:4700::1111"))).toEqual({
      ok: true,
      address: "93.184.216.34",
      family: 4,
    });
    expect(await checkDestination(new URL("https://[2606:4700:4700::1111]/"), NONE, unreachable)).toEqual({
      ok: true,
      address: "2606:4700:4700::1111",
      family: 6,
    });
  });

  test("the allow list lets 127.0.0.1 through by host name, address or range", async () => {
    for (const entry of ["receiver.internal", "127.0.0.1", "127.0.0.0/8", "::ffff:127.0.0.1"]) {
      const result = await checkDestination(new URL("http://receiver.internal:8080/"), parseAllowList(entry), fixed("127.0.0.1"));
      expect(result).toEqual({ ok: true, address: "127.0.0.1", family: 4 });
    }
    const literal = await checkDestination(new URL("http://127.0.0.1/"), parseAllowList("127.0.0.1"), unreachable);
    expect(literal.ok).toBe(true);
    // an allowed address does not let through the other answers of the name
    expect(await refused("http://receiver.internal/", fixed("127.0.0.1", "10.0.0.5"), parseAllowList("127.0.0.1"))).toBe("10.0.0.5 is a private address");
    expect(await refused("http://other.internal/", fixed("127.0.0.1"), parseAllowList("receiver.internal"))).toBe("127.0.0.1 is a loopback address");
  });

  test("every check asks again (DNS rebinding: public, then private)", async () => {
    let calls = 0;
    const rebinding: Resolver = async () => (++calls % 2 === 1 ? ["93.184.216.34"] : ["127.0.0.1"]);
    const url = new URL("https://rebind.example/");
    expect((await checkDestination(url, NONE, rebinding)).ok).toBe(true);
    expect(await checkDestination(url, NONE, rebinding)).toEqual({
      ok: false,
      reason: "127.0.0.1 is a loopback address",
      // what the endpoint's owner is told names no address
      shown: "the address is private or internal; webhooks can only be sent to public addresses",
    });
    expect(calls).toBe(2);
  });
});

describe("sendWebhook", () => {
  const LOOPBACK = parseAllowList("127.0.0.1");
  const payload = JSON.stringify({ type: "image.uploaded", data: { id: "abc" } });
  const signed = { "webhook-id": "msg_1", "webhook-timestamp": "1700000000", "webhook-signature": "v1,c2ln" };

  test("delivers to an allowed local receiver: body and headers arrive", async () => {
    const r = receiver(() => new Response("thanks", { status: 202 }));
    const result = await sendWebhook({
      url: `${r.url}/hooks/in?x=1`,
      headers: { ...signed, Host: "evil.example", "User-Agent": "x" },
      body: payload,
      allow: LOOPBACK,
    });
    expect(result).toMatchObject({ kind: "answered", status: 202, body: "thanks", truncated: false });
    expect(result.ms).toBeGreaterThanOrEqual(0);
    expect(r.seen).toHaveLength(1);
    const seen = r.seen[0]!;
    expect(seen.method).toBe("POST");
    expect(seen.path).toBe("/hooks/in?x=1");
    expect(seen.body).toBe(payload);
    expect(seen.headers).toMatchObject({
      ...signed,
      host: `127.0.0.1:${r.port}`,
      "content-type": "application/json",
      "user-agent": "image-host-webhooks/1",
      "content-length": String(Buffer.byteLength(payload)),
    });
  });

  test("refuses the same receiver without the allow list; the receiver sees nothing", async () => {
    const r = receiver();
    const result = await sendWebhook({ url: `${r.url}/`, headers: signed, body: payload, allow: NONE });
    expect(result).toMatchObject({ kind: "refused", reason: "127.0.0.1 is a loopback address" });
    const viaName = await sendWebhook({ url: `http://localhost:${r.port}/`, headers: signed, body: payload, allow: NONE });
    expect(viaName.kind).toBe("refused");
    const viaDecimal = await sendWebhook({ url: `http://2130706433:${r.port}/`, headers: signed, body: payload, allow: NONE });
    expect(viaDecimal.kind).toBe("refused");
    expect(r.seen).toHaveLength(0);
  });

  test("refuses URLs that are not http(s) or not URLs", async () => {
    expect(await sendWebhook({ url: "file:///etc/passwd", headers: {}, body: "{}", allow: LOOPBACK })).toMatchObject({ kind: "refused" });
    expect(await sendWebhook({ url: "not a url", headers: {}, body: "{}", allow: LOOPBACK })).toMatchObject({ kind: "refused" });
  });

  test.each([302, 307])("does not follow a %d redirect, to a private address or anywhere", async (status) => {
    const behind = receiver();
    const front = receiver(() => new Response(null, { status, headers: { location: `${behind.url}/internal` } }));
    // the address behind the redirect is allowed too: only not following keeps the request from it
    const result = await sendWebhook({ url: `${front.url}/`, headers: signed, body: payload, allow: LOOPBACK });
    expect(result).toMatchObject({ kind: "answered", status, location: `${behind.url}/internal` });
    expect(front.seen).toHaveLength(1);
    expect(behind.seen).toHaveLength(0);
  });

  test("times out on a receiver that never answers", async () => {
    const r = receiver(() => new Promise<Response>(() => {}));
    const started = performance.now();
    const result = await sendWebhook({ url: `${r.url}/`, headers: signed, body: payload, allow: LOOPBACK, timeoutMs: 500 });
    expect(result).toMatchObject({ kind: "failed", reason: "timed out after 0.5 s" });
    expect(performance.now() - started).toBeLessThan(2000);
    expect(result.ms).toBeGreaterThanOrEqual(450);
  });

  test("the time bound covers a resolver that never answers", async () => {
    const hanging: Resolver = () => new Promise<string[]>(() => {});
    const result = await sendWebhook({ url: "https://slow-dns.example/", headers: {}, body: "{}", allow: NONE, resolve: hanging, timeoutMs: 300 });
    expect(result).toMatchObject({ kind: "failed", reason: "timed out after 0.3 s" });
  });

  test("a connection refused is a failure with a short reason", async () => {
    const r = receiver();
    const port = r.port;
    r.server.stop(true);
    const result = await sendWebhook({ url: `http://127.0.0.1:${port}/`, headers: {}, body: "{}", allow: LOOPBACK, timeoutMs: 3000 });
    expect(result.kind).toBe("failed");
    if (result.kind === "failed") {
      expect(result.reason.length).toBeLessThan(200);
      expect(result.reason).not.toContain("\n");
    }
  });

  test("reads at most maxResponseBytes of a huge streamed body, then drops the connection", async () => {
    const TOTAL = 50 * 1024 * 1024;
    const CHUNK = new Uint8Array(64 * 1024).fill(0x61);
    let produced = 0;
    const r = receiver(
      () =>
        new Response(
          new ReadableStream({
            pull(controller) {
              if (produced >= TOTAL) return controller.close();
              produced += CHUNK.length;
              controller.enqueue(CHUNK);
            },
          }),
          { headers: { "content-type": "text/plain" } },
        ),
    );
    const started = performance.now();
    const result = await sendWebhook({ url: `${r.url}/`, headers: {}, body: "{}", allow: LOOPBACK, maxResponseBytes: 1000 });
    const took = performance.now() - started;
    expect(result).toMatchObject({ kind: "answered", status: 200, truncated: true });
    if (result.kind === "answered") {
      expect(result.body.length).toBeLessThanOrEqual(1000);
      expect(result.body).toBe("a".repeat(1000));
    }
    expect(took).toBeLessThan(3000);
    await Bun.sleep(200);
    // the receiver stopped being read long before the end
    expect(produced).toBeLessThan(TOTAL / 2);
  });

  test("a body of exactly maxResponseBytes is not truncated; a cut inside a character drops it", async () => {
    const exact = receiver(() => new Response("x".repeat(64)));
    expect(await sendWebhook({ url: `${exact.url}/`, headers: {}, body: "{}", allow: LOOPBACK, maxResponseBytes: 64 })).toMatchObject({
      kind: "answered",
      body: "x".repeat(64),
      truncated: false,
    });
    const utf8 = receiver(() => new Response("ééé"));
    expect(await sendWebhook({ url: `${utf8.url}/`, headers: {}, body: "{}", allow: LOOPBACK, maxResponseBytes: 5 })).toMatchObject({
      kind: "answered",
      body: "éé",
      truncated: true,
    });
  });

  test("pinning: a name is connected to the address the resolver gave, no other DNS answer is asked for", async () => {
    // .invalid never resolves (RFC 6761): reaching the receiver proves the connection used the checked address
    const r = receiver();
    let calls = 0;
    const resolve: Resolver = async () => (calls++, ["127.0.0.1"]);
    const result = await sendWebhook({
      url: `http://receiver.invalid:${r.port}/in`,
      headers: {},
      body: payload,
      allow: parseAllowList("receiver.invalid"),
      resolve,
    });
    expect(result).toMatchObject({ kind: "answered", status: 200 });
    expect(calls).toBe(1);
    expect(r.seen).toHaveLength(1);
    expect(r.seen[0]!.headers.host).toBe(`receiver.invalid:${r.port}`);
  });

  const secondLoopback = (() => {
    try {
      Bun.serve({ hostname: "127.0.0.2", port: 0, fetch: () => new Response() }).stop(true);
      return true;
    } catch {
      return false;
    }
  })();
  test.skipIf(!secondLoopback)("pinning: `localhost` is sent to the checked 127.0.0.2, not to the system's 127.0.0.1", async () => {
    const system = receiver();
    const checked = receiver(undefined, "127.0.0.2", system.port);
    const result = await sendWebhook({
      url: `http://localhost:${system.port}/`,
      headers: {},
      body: payload,
      allow: parseAllowList("127.0.0.2"),
      resolve: fixed("127.0.0.2"),
    });
    expect(result).toMatchObject({ kind: "answered", status: 200 });
    expect(checked.seen).toHaveLength(1);
    expect(system.seen).toHaveLength(0);
  });

  test("DNS rebinding: the destination is checked at every send", async () => {
    const r = receiver();
    let calls = 0;
    // the first answer stands for a public address (allowed here, so that no packet leaves loopback), the second is forbidden
    const rebinding: Resolver = async () => (++calls === 1 ? ["127.0.0.1"] : ["127.0.0.2"]);
    const send = () => sendWebhook({ url: `http://rebind.invalid:${r.port}/`, headers: {}, body: payload, allow: LOOPBACK, resolve: rebinding });
    expect(await send()).toMatchObject({ kind: "answered", status: 200 });
    expect(await send()).toMatchObject({ kind: "refused", reason: "127.0.0.2 is a loopback address" });
    expect(calls).toBe(2);
    expect(r.seen).toHaveLength(1);
  });

  const openssl = Bun.which("openssl");
  test.skipIf(!openssl)("https: the certificate is verified against the URL's host name", async () => {
    const dir = mkdtempSync(join(tmpdir(), "webhook-tls-"));
    try {
      const made = Bun.spawnSync(
        [
          openssl!,
          "req",
          "-x509",
          "-newkey",
          "rsa:2048",
          "-nodes",
          "-days",
          "1",
          "-subj",
          "/CN=receiver.invalid",
          "-addext",
          "subjectAltName=DNS:receiver.invalid",
          "-keyout",
          join(dir, "key.pem"),
          "-out",
          join(dir, "cert.pem"),
        ],
        { stderr: "ignore", stdout: "ignore" },
      );
      expect(made.exitCode).toBe(0);
      const seen: string[] = [];
      const server = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        tls: { cert: readFileSync(join(dir, "cert.pem"), "utf8"), key: readFileSync(join(dir, "key.pem"), "utf8") },
        fetch(req) {
          seen.push(req.url);
          return new Response("ok");
        },
      });
      servers.push(server);
      const result = await sendWebhook({
        url: `https://receiver.invalid:${server.port}/`,
        headers: {},
        body: payload,
        allow: parseAllowList("receiver.invalid"),
        resolve: fixed("127.0.0.1"),
        timeoutMs: 3000,
      });
      // a self-signed certificate is no CA's: the handshake fails before anything is sent
      expect(result.kind).toBe("failed");
      if (result.kind === "failed") expect(result.reason).toMatch(/self.signed|certificate/i);
      expect(seen).toHaveLength(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
