/**
 * Hardening benchmark: what strangers and abusive users cost the real server. Prints figures, never asserts;
 * test/resource.test.ts asserts the same two situations with the clients exported here.
 *
 *   bun run scripts/hardening-bench.ts                                  this checkout
 *   bun run scripts/hardening-bench.ts --src /tmp/before --src .        two checkouts, side by side
 *   … --src . --with UV_THREADPOOL_SIZE=16                              a checkout with extra server environment
 *   … --rounds 2                                                        each checkout twice, order alternating
 *
 * The "before" checkout: git worktree add /tmp/before <commit> && (cd /tmp/before && bun install --frozen-lockfile).
 *
 * For each checkout and scenario, `bun run DIR/src/server.ts` is started as a subprocess (fresh DATA_DIR, embedded
 * database, a free port on 127.0.0.1), users are seeded through the admin API, and:
 *
 *  a. Memory under unauthenticated bodies: the server's RSS (VmRSS, every 50 ms) idle, then while 32 clients
 *     without credentials (guest upload off, the default) each stream a 50 MB multipart body over a raw
 *     socket, chunked (no Content-Length, so no early refusal on the declared size), 256 KB at a time, for a
 *     few seconds; and after. Each client writes from its own loopback address (127.0.0.x), like an attacker
 *     with many addresses, so per-address bounds do not hide what the body path costs. A client counts the
 *     bytes the socket took before the answer arrived, and before the server closed the connection.
 *  b. Another user's latency under a decode-heavy client: user A keeps 8 uploads of a legal but slow-to-decode
 *     image (noisy progressive 6000×4000 JPEG, ~17 MB, 24 MP; the default group's size limit is raised to
 *     20 MB for it) in flight, each from its own address; meanwhile user B uploads, one after another,
 *     medium JPEGs (1200×900: a thumbnail decode) and small PNGs (300×200: their own thumbnail). B's
 *     latencies with and without A's load, and how many of A's uploads sent before each of B's B overtook.
 *
 *  c. Decode bomb: user A uploads 2 at once of a legal progressive 10000×10000 JPEG of 883 scans (351 KB, built by
 *     manyScanJpeg) with one stray byte after the frame header (it hid every scan from 51fdfd2's counter); meanwhile
 *     user B uploads a 300×200 PNG every 200 ms and a 1200×900 JPEG every second. A's answers, the CPU seconds the
 *     server, its decode processes and its PostgreSQL consumed (/proc/PID/stat of the tree, reaped children included),
 *     B's latencies with and without A.
 *  d. Slow bodies from one account: 64 uploads by user A (9 MB declared with Content-Length, 64 KB every 500 ms, each
 *     from its own address) for 20–25 s while user B uploads a PNG every 200 ms; the default group's concurrent_uploads
 *     is 1 (d1) or unlimited (d2). A's refusals (how fast, how much body sent before), B's answers, the server's RSS
 *     idle, peak, at the burst's end and 5 s (d2: and 10 s) later: does the memory bodies held return?
 *  e. Connection flood: one address opens 5,000 connections (fewer if this process's descriptor limit is lower)
 *     that send POST /user/login headers (Content-Length 1000) and a partial body, held 10 s. The server's open
 *     descriptors, the attacker's answers, a second client's /health and sign-in latency, error lines logged.
 *  f. Token minting: 8 clients of one account loop POST /api/v1/images/tokens {num: 100, seconds: 2626560} for 10 s;
 *     tokens created (counted in the 200 answers: one row each), growth of DATA_DIR/postgres; then the account signs in
 *     through the user center and loads GET /user/tokens once: its size, and the server's RSS.
 *
 *   … --only c,d,e,f                                                    pick scenarios (default: all)
 *   … --markdown                                                        print the table as markdown as well
 *
 * Each scenario runs on a fresh server. Only loopback traffic. Each phase stops by itself (≤ 40 s); the whole run
 * takes 4–6 minutes per checkout.
 */
import { randomFillSync } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import sharp from "sharp";

// ---------------------------------------------------------------- the server subprocess

export interface ServerHandle {
  src: string;
  port: number;
  pid: number;
  adminToken: string;
  dataDir: string;
  proc: ReturnType<typeof Bun.spawn>;
  /** SIGTERM (drains in-flight requests, 8 s at most) or SIGKILL; then removes the data directory. */
  stop(signal?: "SIGTERM" | "SIGKILL"): Promise<void>;
}

export async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

/** Starts `bun run SRC/src/server.ts` on a fresh data directory and an embedded database; resolves once /health answers. */
export async function startServer(src: string, extraEnv: Record<string, string> = {}): Promise<ServerHandle> {
  const dataDir = mkdtempSync(join(tmpdir(), "imghost-hardening-"));
  // an embedded PostgreSQL started by root runs as the user `postgres`, which must be able to reach the directory
  chmodSync(dataDir, 0o711);
  const port = await freePort();
  const adminToken = `bench-${Bun.randomUUIDv7("hex")}`.slice(0, 40).padEnd(40, "x");
  const env: Record<string, string | undefined> = { ...process.env };
  for (const k of ["DATABASE_URL", "ADMIN_TOKEN", "BASE_URL", "TRUST_PROXY", "PORT", "HOST", "DATA_DIR"]) delete env[k];
  const proc = Bun.spawn(["bun", "run", join(src, "src/server.ts")], {
    cwd: src,
    env: { ...env, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", ADMIN_TOKEN: adminToken, ...extraEnv },
    stdout: Bun.file(join(dataDir, "server.out")),
    stderr: Bun.file(join(dataDir, "server.err")),
  });
  const stop = async (signal: "SIGTERM" | "SIGKILL" = "SIGTERM") => {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      const tail = (name: string) => (existsSync(join(dataDir, name)) ? readFileSync(join(dataDir, name), "utf8").slice(-2000) : "");
      console.error(
        `server from ${src} had exited (code ${proc.exitCode}, signal ${proc.signalCode}); ` +
          `its stdout ends:\n${tail("server.out")}\nits stderr ends:\n${tail("server.err")}`,
      );
    } else {
      const descendants = processTree(proc.pid).slice(1); // an embedded database's processes
      proc.kill(signal);
      const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(8000).then(() => false)]);
      if (!exited) {
        proc.kill("SIGKILL");
        await proc.exited;
      }
      // they stop with their parent (or on its death signal): wait, so that they write nothing after the removal
      for (const deadline = Date.now() + 10_000; Date.now() < deadline && descendants.some((p) => existsSync(`/proc/${p}`)); ) await Bun.sleep(50);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) {
      const err = existsSync(join(dataDir, "server.err")) ? readFileSync(join(dataDir, "server.err"), "utf8") : "";
      rmSync(dataDir, { recursive: true, force: true });
      throw new Error(`server from ${src} exited with ${proc.exitCode}: ${err.slice(-2000)}`);
    }
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).status === 200) break;
    } catch {}
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`server from ${src} did not become healthy within 60 s`);
    }
    await Bun.sleep(100);
  }
  return { src, port, pid: proc.pid, adminToken, dataDir, proc, stop };
}

export async function admin(server: ServerHandle, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`http://127.0.0.1:${server.port}${path}`, {
    method,
    headers: { authorization: `Bearer ${server.adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path} → ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text).data;
}

/** A user with a permanent token; capacity large enough for a long abusive run. */
export async function seedUser(server: ServerHandle, username: string): Promise<{ id: number; token: string }> {
  const user = await admin(server, "POST", "/api/admin/users", { username, email: `${username}@example.com`, capacity_kb: 1_000_000_000 });
  const tok = await admin(server, "POST", `/api/admin/users/${user.id}/tokens`);
  return { id: user.id, token: tok.token };
}

// ---------------------------------------------------------------- memory of a process

export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

/** The process and its descendants (an embedded PostgreSQL's postmaster and backends, for instance). */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {} // gone meanwhile
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

/** Proportional set size: shared pages are divided among the processes sharing them, so a tree's figures add up. */
export function pssBytes(pid: number): number {
  const m = /^Pss:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
  return m ? Number(m[1]) * 1024 : 0;
}

export interface MemorySamples {
  /** VmRSS of the server process. */
  rss: number[];
  /** Sum of PSS over the server process and its descendants. */
  tree: number[];
  /** Most processes seen in the tree. */
  processes: number;
}

/** Samples the server's memory every `everyMs` until stopped (the tree's membership is refreshed every second). */
export function sampleMemory(pid: number, everyMs = 50) {
  const samples: MemorySamples = { rss: [], tree: [], processes: 0 };
  let members = processTree(pid);
  let listedAt = performance.now();
  const take = () => {
    try {
      samples.rss.push(rssBytes(pid));
    } catch {
      return;
    }
    if (performance.now() - listedAt > 1000) {
      members = processTree(pid);
      listedAt = performance.now();
    }
    samples.processes = Math.max(samples.processes, members.length);
    let total = 0;
    for (const p of members) {
      try {
        total += pssBytes(p);
      } catch {} // exited meanwhile
    }
    samples.tree.push(total);
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    samples,
    stop() {
      clearInterval(timer);
      take();
      return samples;
    },
  };
}

// ---------------------------------------------------------------- raw HTTP/1.1 clients

const BOUNDARY = "----hardening-bench";

export interface SlowBodyResult {
  status: number | null;
  /** Bytes of the request (headers and body) the socket took before the server's answer arrived. */
  bytesBeforeAnswer: number;
  /** Bytes the socket took before the server closed the connection (or the body ended). */
  bytesBeforeClose: number;
  closedByServer: boolean;
  answerMs: number | null;
  error?: string;
}

/**
 * An upload without credentials whose file part is `fileBytes` long, written by hand on a socket from
 * `localAddress`, chunked, `chunkBytes` at a time with `pauseMs` between writes. Keeps writing after the
 * answer, as an attacker would, until the server closes the connection or the body ends.
 */
export function slowUnauthenticatedUpload(options: {
  port: number;
  localAddress: string;
  fileBytes: number;
  chunkBytes?: number;
  pauseMs?: number;
  deadlineMs?: number;
}): Promise<SlowBodyResult> {
  const chunkBytes = options.chunkBytes ?? 256 * 1024;
  const pauseMs = options.pauseMs ?? 20;
  const frame = (data: Buffer) => Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from("\r\n")]);
  const head = Buffer.from(
    `POST /api/v1/upload HTTP/1.1\r\nHost: 127.0.0.1:${options.port}\r\nUser-Agent: hardening-bench\r\n` +
      `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nTransfer-Encoding: chunked\r\n\r\n`,
  );
  const partHead = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
  );
  const fullFrame = frame(Buffer.alloc(chunkBytes, 0x5a));
  const tail = Buffer.concat([frame(Buffer.from(`\r\n--${BOUNDARY}--\r\n`)), Buffer.from("0\r\n\r\n")]);

  return new Promise((resolvePromise) => {
    const started = performance.now();
    const result: SlowBodyResult = { status: null, bytesBeforeAnswer: 0, bytesBeforeClose: 0, closedByServer: false, answerMs: null };
    let written = 0;
    let response = "";
    let closed = false;
    let finished = false;
    let hungUp = false;
    const socket = net.connect({ host: "127.0.0.1", port: options.port, localAddress: options.localAddress });
    const deadline = setTimeout(() => socket.destroy(), options.deadlineMs ?? 30_000);
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(deadline);
      result.bytesBeforeClose = written;
      if (result.status === null) result.bytesBeforeAnswer = written;
      resolvePromise(result);
    };
    socket.on("data", (d) => {
      if (result.status !== null) return;
      response += d.toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(response);
      if (m) {
        result.status = Number(m[1]);
        result.bytesBeforeAnswer = written;
        result.answerMs = performance.now() - started;
      }
    });
    socket.on("error", (e) => {
      result.error ??= (e as NodeJS.ErrnoException).code ?? e.message;
    });
    socket.on("close", () => {
      closed = true;
      finish();
    });
    const write = (buf: Buffer) =>
      new Promise<boolean>((ok) => {
        if (closed || socket.destroyed) return ok(false);
        const flushed = socket.write(buf, (err) => {
          if (!err) written += buf.length;
        });
        if (flushed) ok(true);
        else {
          const onDrain = () => (socket.off("close", onClose), ok(true));
          const onClose = () => (socket.off("drain", onDrain), ok(false));
          socket.once("drain", onDrain);
          socket.once("close", onClose);
        }
      });
    socket.on("connect", async () => {
      if (!(await write(Buffer.concat([head, frame(partHead)])))) return;
      for (let sent = 0; sent < options.fileBytes; sent += chunkBytes) {
        const n = Math.min(chunkBytes, options.fileBytes - sent);
        if (!(await write(n === chunkBytes ? fullFrame : frame(Buffer.alloc(n, 0x5a))))) return;
        await Bun.sleep(pauseMs);
      }
      if (!(await write(tail))) return;
      // the body is complete: wait briefly for the answer, then hang up
      const waitUntil = performance.now() + 5000;
      while (result.status === null && !closed && performance.now() < waitUntil) await Bun.sleep(20);
      hungUp = true;
      socket.end();
      setTimeout(() => socket.destroy(), 1000).unref();
    });
    socket.on("end", () => {
      if (!hungUp) result.closedByServer = true;
    });
  });
}

export interface HttpResult {
  status: number;
  body: string;
  /** performance.now() when the request was fully handed to the socket, and when the answer was complete. */
  sentAt: number;
  doneAt: number;
  startedAt: number;
}

/** One HTTP/1.1 request on its own connection from `localAddress` (Connection: close); answers status and body. */
export function httpRequest(options: {
  port: number;
  localAddress?: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: Uint8Array;
  timeoutMs?: number;
  /** Called when the whole request has been handed to the socket. */
  onSent?: (at: number) => void;
}): Promise<HttpResult> {
  return new Promise((resolvePromise, reject) => {
    const startedAt = performance.now();
    let sentAt = NaN;
    const headers: Record<string, string> = {
      host: `127.0.0.1:${options.port}`,
      connection: "close",
      "content-length": String(options.body?.byteLength ?? 0),
      ...options.headers,
    };
    const head = `${options.method} ${options.path} HTTP/1.1\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("")}\r\n`;
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: "127.0.0.1", port: options.port, localAddress: options.localAddress });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`timeout after ${options.timeoutMs} ms`));
    }, options.timeoutMs ?? 60_000);
    socket.on("connect", () => {
      socket.write(head);
      socket.write(options.body ?? new Uint8Array(0), () => {
        sentAt = performance.now();
        options.onSent?.(sentAt);
      });
    });
    socket.on("data", (d) => chunks.push(d));
    socket.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks);
      const headerEnd = raw.indexOf("\r\n\r\n");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(raw.subarray(0, Math.max(0, headerEnd)).toString("latin1"));
      if (!m || headerEnd < 0) return reject(new Error(`no HTTP answer (${raw.length} bytes)`));
      const headText = raw.subarray(0, headerEnd).toString("latin1");
      let body: Buffer = raw.subarray(headerEnd + 4);
      if (/\r\ntransfer-encoding:\s*chunked/i.test(headText)) body = dechunk(body);
      resolvePromise({ status: Number(m[1]), body: body.toString("utf8"), sentAt, doneAt: performance.now(), startedAt });
    });
  });
}

function dechunk(buf: Buffer): Buffer {
  const out: Buffer[] = [];
  let pos = 0;
  for (;;) {
    const eol = buf.indexOf("\r\n", pos);
    if (eol < 0) break;
    const size = parseInt(buf.subarray(pos, eol).toString("latin1"), 16);
    if (!size) break;
    out.push(buf.subarray(eol + 2, eol + 2 + size));
    pos = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}

export function multipartFile(bytes: Uint8Array, filename: string, contentType: string) {
  const body = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${contentType}\r\n\r\n`),
    bytes,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${BOUNDARY}` };
}

export function upload(
  port: number,
  token: string,
  file: ReturnType<typeof multipartFile>,
  localAddress: string,
  timeoutMs = 60_000,
  onSent?: (at: number) => void,
) {
  return httpRequest({
    onSent,
    port,
    localAddress,
    method: "POST",
    path: "/api/v1/upload",
    headers: { authorization: `Bearer ${token}`, "content-type": file.contentType, accept: "application/json" },
    body: file.body,
    timeoutMs,
  });
}

// ---------------------------------------------------------------- images

/** Photo-like noise compresses badly, so sizes and decode costs are realistic. */
export async function noisyImage(width: number, height: number, format: "jpeg" | "progressive-jpeg" | "png"): Promise<Uint8Array> {
  const raw = Buffer.alloc(width * height * 3);
  for (let off = 0; off < raw.length; off += 65_536) randomFillSync(raw, off, Math.min(65_536, raw.length - off));
  const img = sharp(raw, { raw: { width, height, channels: 3 } });
  const out = format === "png" ? img.png() : img.jpeg({ quality: 85, progressive: format === "progressive-jpeg" });
  return new Uint8Array(await out.toBuffer());
}

// ---------------------------------------------------------------- statistics

export function quantile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]! : NaN;
}
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const msf = (x: number) => (Number.isFinite(x) ? `${Math.round(x)} ms` : "–");

// ---------------------------------------------------------------- phase a: memory under unauthenticated bodies

export interface MemoryFigures {
  clients: number;
  bodyBytes: number;
  /** The server process's VmRSS: median idle, peak during, median after. */
  idleRss: number;
  peakRss: number;
  afterRss: number;
  /** The same for the sum of PSS over the server's process tree (the server and, e.g., its embedded PostgreSQL). */
  idleTree: number;
  peakTree: number;
  afterTree: number;
  processes: number;
  statuses: Record<string, number>;
  beforeAnswerTotal: number;
  beforeAnswerMax: number;
  beforeCloseTotal: number;
  beforeCloseMax: number;
  closedByServer: number;
  answerMsMax: number;
  seconds: number;
}

export async function memoryUnderUnauthenticatedBodies(
  server: ServerHandle,
  options: { clients: number; fileBytes: number; firstAddress?: number; pauseMs?: number },
): Promise<MemoryFigures> {
  await Bun.sleep(1500); // let the start-up settle (the reconciler runs once at start)
  const idle = sampleMemory(server.pid);
  await Bun.sleep(1000);
  const idleSamples = idle.stop();

  const during = sampleMemory(server.pid);
  const t0 = performance.now();
  const results = await Promise.all(
    Array.from({ length: options.clients }, (_, i) =>
      slowUnauthenticatedUpload({
        port: server.port,
        localAddress: `127.0.0.${(options.firstAddress ?? 100) + i}`,
        fileBytes: options.fileBytes,
        pauseMs: options.pauseMs,
        deadlineMs: 25_000,
      }),
    ),
  );
  const seconds = (performance.now() - t0) / 1000;
  await Bun.sleep(300);
  const duringSamples = during.stop();
  const after = sampleMemory(server.pid);
  await Bun.sleep(1500);
  const afterSamples = after.stop();

  const statuses: Record<string, number> = {};
  for (const r of results) {
    const key = r.status === null ? `none${r.error ? ` (${r.error})` : ""}` : String(r.status);
    statuses[key] = (statuses[key] ?? 0) + 1;
  }
  return {
    clients: options.clients,
    bodyBytes: options.fileBytes,
    idleRss: quantile(idleSamples.rss, 0.5),
    peakRss: Math.max(...duringSamples.rss),
    afterRss: quantile(afterSamples.rss, 0.5),
    idleTree: quantile(idleSamples.tree, 0.5),
    peakTree: Math.max(...duringSamples.tree),
    afterTree: quantile(afterSamples.tree, 0.5),
    processes: Math.max(idleSamples.processes, duringSamples.processes),
    statuses,
    beforeAnswerTotal: results.reduce((a, r) => a + r.bytesBeforeAnswer, 0),
    beforeAnswerMax: Math.max(...results.map((r) => r.bytesBeforeAnswer)),
    beforeCloseTotal: results.reduce((a, r) => a + r.bytesBeforeClose, 0),
    beforeCloseMax: Math.max(...results.map((r) => r.bytesBeforeClose)),
    closedByServer: results.filter((r) => r.closedByServer).length,
    answerMsMax: Math.max(...results.map((r) => r.answerMs ?? NaN).filter(Number.isFinite)),
    seconds,
  };
}

// ---------------------------------------------------------------- phase b: latency under a decode-heavy client

export interface Images {
  heavy: Uint8Array;
  medium: Uint8Array;
  small: Uint8Array;
}

export async function makeImages(): Promise<Images> {
  const [heavy, medium, small] = [
    await noisyImage(6000, 4000, "progressive-jpeg"),
    await noisyImage(1200, 900, "jpeg"),
    await noisyImage(300, 200, "png"),
  ];
  return { heavy, medium, small };
}

export interface AbuseRecord {
  startedAt: number;
  /** When the whole request was handed to the socket (NaN until then). */
  sentAt: number;
  /** When the answer arrived (Infinity while unanswered). */
  doneAt: number;
  status: number | string | null;
}

/** User A: `inFlight` loops, each from its own address, uploading `file` again as soon as the previous answer arrives. */
export function abusiveClient(port: number, token: string, file: ReturnType<typeof multipartFile>, inFlight: number, firstAddress = 20) {
  const records: AbuseRecord[] = [];
  let stopping = false;
  const loops = Array.from({ length: inFlight }, async (_, i) => {
    while (!stopping) {
      const record: AbuseRecord = { startedAt: performance.now(), sentAt: NaN, doneAt: Infinity, status: null };
      records.push(record);
      try {
        const r = await upload(port, token, file, `127.0.0.${firstAddress + i}`, 60_000, (at) => (record.sentAt = at));
        Object.assign(record, { doneAt: r.doneAt, status: r.status });
        if (r.status !== 200) await Bun.sleep(100); // refused (429…): retry shortly, as a persistent client would
      } catch (e) {
        Object.assign(record, { doneAt: performance.now(), status: (e as Error).message });
        await Bun.sleep(100);
      }
    }
  });
  return {
    /** Every upload A started, answered or not. */
    records,
    /** Stops starting new uploads; waits at most `maxWaitMs` for those in flight. */
    async stop(maxWaitMs: number) {
      stopping = true;
      await Promise.race([Promise.all(loops), Bun.sleep(maxWaitMs)]);
    },
  };
}

export interface VictimRecord {
  kind: "medium" | "small";
  ms: number;
  status: number | string;
  /** A's uploads fully sent ≥ 200 ms before this one started and still unanswered then. */
  abusiveQueuedBefore: number;
  /** Of those, how many finished after this one. */
  overtaken: number;
  startedAt: number;
  doneAt: number;
}

/** User B: `count` uploads of each kind, alternating, one after another; stops early at `deadline` (performance.now()). */
export async function victimRun(
  port: number,
  token: string,
  files: { medium: ReturnType<typeof multipartFile>; small: ReturnType<typeof multipartFile> },
  count: number,
  deadline: number,
  address = "127.0.0.50",
): Promise<VictimRecord[]> {
  const out: VictimRecord[] = [];
  for (let i = 0; i < 2 * count; i++) {
    const kind = i % 2 === 0 ? "medium" : "small";
    const left = deadline - performance.now();
    if (left <= 0) break;
    const startedAt = performance.now();
    try {
      const r = await upload(port, token, files[kind], address, left);
      out.push({ kind, ms: r.doneAt - startedAt, status: r.status, abusiveQueuedBefore: 0, overtaken: 0, startedAt, doneAt: r.doneAt });
    } catch (e) {
      // cut off by the phase's deadline: its latency is at least `ms`
      const status = /^timeout/.test((e as Error).message) ? "unfinished" : (e as Error).message;
      out.push({ kind, ms: performance.now() - startedAt, status, abusiveQueuedBefore: 0, overtaken: 0, startedAt, doneAt: Infinity });
      break;
    }
  }
  return out;
}

/** For each of B's uploads: A's uploads that were sent before it and unanswered when it started, and how many it overtook. */
export function countOvertaken(victims: VictimRecord[], abuse: AbuseRecord[], marginMs = 200) {
  for (const v of victims) {
    const queued = abuse.filter((a) => a.sentAt <= v.startedAt - marginMs && a.doneAt > v.startedAt);
    v.abusiveQueuedBefore = queued.length;
    v.overtaken = queued.filter((a) => a.doneAt > v.doneAt).length;
  }
}

export interface LatencyFigures {
  heavyBytes: number;
  soloHeavyMs: number[];
  baseline: VictimRecord[];
  loaded: VictimRecord[];
  victimCount: number;
  /** Every upload A started; those unanswered at the end of the phase have doneAt = Infinity. */
  abuse: AbuseRecord[];
  loadedSeconds: number;
}

export async function latencyUnderDecodeHeavyClient(
  server: ServerHandle,
  images: Images,
  options: { victimCount: number; inFlight: number; phaseMs: number },
): Promise<LatencyFigures> {
  const [a, b] = [await seedUser(server, "abusive_a"), await seedUser(server, "victim_b")];
  await admin(server, "PATCH", "/api/admin/groups/1", { max_file_size_kb: Math.ceil(images.heavy.byteLength / 1024) + 4096 });
  const heavy = multipartFile(images.heavy, "noise.jpg", "image/jpeg");
  const files = { medium: multipartFile(images.medium, "photo.jpg", "image/jpeg"), small: multipartFile(images.small, "shot.png", "image/png") };

  // warm-up, then B alone
  await victimRun(server.port, b.token, files, 2, performance.now() + 10_000);
  const baseline = await victimRun(server.port, b.token, files, options.victimCount, performance.now() + 20_000);
  // one abusive upload alone: what one decode costs
  const soloHeavyMs: number[] = [];
  for (let i = 0; i < 2; i++) {
    const r = await upload(server.port, a.token, heavy, "127.0.0.19", 30_000);
    if (r.status !== 200) throw new Error(`abusive upload refused alone: ${r.status} ${r.body.slice(0, 300)}`);
    soloHeavyMs.push(r.doneAt - r.startedAt);
  }

  const t0 = performance.now();
  const abuser = abusiveClient(server.port, a.token, heavy, options.inFlight);
  // let A's uploads fill the queue: all 8 sent and waiting
  await Bun.sleep(Math.min(3000, Math.max(1000, soloHeavyMs[1]!)));
  const loaded = await victimRun(server.port, b.token, files, options.victimCount, t0 + options.phaseMs);
  const loadedSeconds = (performance.now() - t0) / 1000;
  // A's uploads still unanswered when the phase ends keep doneAt = Infinity: they finished after B's
  const abuse = abuser.records.map((r) => ({ ...r }));
  countOvertaken(loaded, abuse);
  await abuser.stop(Math.max(2000, 2 * soloHeavyMs[1]!));
  return { heavyBytes: images.heavy.byteLength, soloHeavyMs, baseline, loaded, victimCount: options.victimCount, abuse, loadedSeconds };
}

// ---------------------------------------------------------------- CPU and descriptors of a process tree

const TICKS = 100; // USER_HZ

interface ProcStat {
  comm: string;
  /** utime + stime, and cutime + cstime (children it has waited for), in seconds. */
  cpu: number;
  reapedCpu: number;
}

function procStat(pid: number): ProcStat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    // fields after the name: state ppid … utime(11) stime(12) cutime(13) cstime(14)
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { comm, cpu: (Number(f[11]) + Number(f[12])) / TICKS, reapedCpu: (Number(f[13]) + Number(f[14])) / TICKS };
  } catch {
    return null;
  }
}

export interface TreeCpu {
  /** The server process itself (in-process decodes count here). */
  server: number;
  /** Its other descendants (decode processes), live or reaped. */
  children: number;
  /** The embedded PostgreSQL's processes. */
  database: number;
}

/** CPU seconds consumed so far by the server and its descendants; a difference of two readings is the cost of what ran between. */
export function treeCpu(pid: number): TreeCpu {
  const out: TreeCpu = { server: 0, children: 0, database: 0 };
  for (const p of processTree(pid)) {
    const s = procStat(p);
    if (!s) continue;
    if (p === pid) {
      out.server += s.cpu;
      out.children += s.reapedCpu; // decode processes that have exited and been waited for
    } else if (s.comm.startsWith("postgres")) out.database += s.cpu + s.reapedCpu;
    else out.children += s.cpu + s.reapedCpu;
  }
  return out;
}

const cpuDelta = (a: TreeCpu, b: TreeCpu): TreeCpu => ({ server: b.server - a.server, children: b.children - a.children, database: b.database - a.database });

export function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
}

/** The soft limit on open files of this process (the client's own). */
function ownFdLimit(): number {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync("/proc/self/limits", "utf8"));
  return !m || m[1] === "unlimited" ? 1 << 20 : Number(m[1]);
}

/** Samples `take()` every `everyMs` until stopped. */
function sampler(take: () => number, everyMs: number) {
  const values: { at: number; value: number }[] = [];
  const tick = () => values.push({ at: performance.now(), value: take() });
  tick();
  const timer = setInterval(tick, everyMs);
  return {
    values,
    stop() {
      clearInterval(timer);
      tick();
      return values.map((v) => v.value);
    },
  };
}

// ---------------------------------------------------------------- a paced client (user B)

export interface PacedRecord {
  startedAt: number;
  ms: number;
  status: number | "unfinished" | string;
  message?: string;
}

/** An answer's envelope message, if it has one. */
function messageOf(body: string): string | undefined {
  try {
    return JSON.parse(body).message;
  } catch {
    return body.slice(0, 80) || undefined;
  }
}

/**
 * Starts one request every `everyMs` (open loop: whatever the previous ones are doing), each on its own connection
 * from `address`, until `stop()`; a request still unanswered at `hardDeadline` (performance.now()) is cut and
 * counted as unfinished.
 */
export function pacedRequests(send: (timeoutMs: number) => Promise<HttpResult>, everyMs: number, hardDeadline: number) {
  const records: PacedRecord[] = [];
  const pending: Promise<void>[] = [];
  let stopping = false;
  const loop = (async () => {
    while (!stopping && performance.now() < hardDeadline - 1000) {
      const record: PacedRecord = { startedAt: performance.now(), ms: NaN, status: "unfinished" };
      records.push(record);
      pending.push(
        send(Math.max(500, hardDeadline - performance.now())).then(
          (r) => {
            record.ms = r.doneAt - record.startedAt;
            record.status = r.status;
            if (r.status !== 200) record.message = messageOf(r.body);
          },
          (e: Error) => {
            record.ms = performance.now() - record.startedAt;
            record.status = /^timeout/.test(e.message) ? "unfinished" : e.message.slice(0, 40);
          },
        ),
      );
      await Bun.sleep(everyMs);
    }
  })();
  return {
    records,
    async stop() {
      stopping = true;
      await loop;
      await Promise.all(pending);
      return records;
    },
  };
}

export interface LatencySummary {
  count: number;
  ok: number;
  p50: number;
  p99: number;
  max: number;
  statuses: Record<string, number>;
}

export function summarize(records: PacedRecord[]): LatencySummary {
  const ok = records.filter((r) => r.status === 200).map((r) => r.ms);
  const statuses: Record<string, number> = {};
  for (const r of records) {
    const message = r.message?.replace(/retry in \d+/, "retry in N").slice(0, 60);
    const key = r.status === 200 ? "200" : `${r.status}${message ? ` "${message}"` : ""}`;
    statuses[key] = (statuses[key] ?? 0) + 1;
  }
  return { count: records.length, ok: ok.length, p50: quantile(ok, 0.5), p99: quantile(ok, 0.99), max: ok.length ? Math.max(...ok) : NaN, statuses };
}

// ---------------------------------------------------------------- phase c: decode bomb

/**
 * A legal progressive JPEG (grayscale, flat mid-gray, so every coefficient is zero and the file is small) whose
 * decoder must run 883 scans over every block: the DC scan, then each of the 63 AC coefficients on its own, first at
 * point transform 13 and refined 13 times down to 0 — the largest progression libjpeg accepts without a warning.
 * 10000×10000: 351 KB, ~12–20 s of CPU to decode on this machine. With `strayByte`, one byte after the frame header
 * (libjpeg skips it with a warning, "extraneous bytes before marker", and decodes on) stopped 51fdfd2's scan counter
 * at 0. (Repeating one scan of a sharp-made JPEG, as the unit tests do, is refused by libjpeg under failOn "error" —
 * "inconsistent progression sequence" — after ~0.2 s: fine for a counter's test, not a decode bomb.)
 */
export function manyScanJpeg(width: number, height: number, strayByte: boolean): Uint8Array {
  const out: number[] = [];
  const u16 = (n: number) => out.push(n >> 8, n & 0xff);
  const segment = (marker: number, body: number[]) => {
    out.push(0xff, marker);
    u16(body.length + 2);
    for (const b of body) out.push(b);
  };
  out.push(0xff, 0xd8);
  segment(0xdb, [0x00, ...Array(64).fill(1)]);
  segment(0xc2, [8, height >> 8, height & 0xff, width >> 8, width & 0xff, 1, 1, 0x11, 0]);
  if (strayByte) out.push(0x42);
  // DC table 0: one symbol (difference category 0), code "0"; AC table 0: EOB0…EOB14, 4-bit codes 0000…1110
  segment(0xc4, [0x00, 1, ...Array(15).fill(0), 0x00, 0x10, 0, 0, 0, 15, ...Array(12).fill(0), ...Array.from({ length: 15 }, (_, n) => n << 4)]);
  const blocks = Math.ceil(width / 8) * Math.ceil(height / 8);
  const scan = (ss: number, se: number, ah: number, al: number, bits: (put: (v: number, n: number) => void) => void) => {
    segment(0xda, [1, 1, 0x00, ss, se, (ah << 4) | al]);
    let acc = 0;
    let nbits = 0;
    const emit = (byte: number) => (byte === 0xff ? out.push(0xff, 0x00) : out.push(byte));
    const put = (v: number, n: number) => {
      for (let i = n - 1; i >= 0; i--) {
        acc = (acc << 1) | ((v >> i) & 1);
        if (++nbits === 8) {
          emit(acc);
          acc = 0;
          nbits = 0;
        }
      }
    };
    bits(put);
    if (nbits > 0) emit((acc << (8 - nbits)) | ((1 << (8 - nbits)) - 1));
  };
  scan(0, 0, 0, 0, (put) => {
    for (let i = 0; i < Math.floor(blocks / 8); i++) put(0, 8);
    put(0, blocks % 8);
  });
  // every block of an AC scan is in an end-of-band run (at most 32767 blocks per run)
  const eobRuns = (put: (v: number, n: number) => void) => {
    for (let left = blocks; left > 0; ) {
      const run = Math.min(left, 32767);
      const n = 31 - Math.clz32(run);
      put(n, 4);
      put(run - (1 << n), n);
      left -= run;
    }
  };
  for (let k = 1; k <= 63; k++) {
    scan(k, k, 0, 13, eobRuns);
    for (let ah = 13; ah >= 1; ah--) scan(k, k, ah, ah - 1, eobRuns);
  }
  out.push(0xff, 0xd9);
  return new Uint8Array(out);
}

export interface BombFigures {
  bombBytes: number;
  answers: { status: number | string; message?: string; ms: number }[];
  /** CPU seconds from the first bomb sent until the tree went quiet (or the phase's end). */
  cpu: TreeCpu;
  cpuSeconds: number;
  /** The tree was still busy (> 0.3 cores over the last second) when the phase ended. */
  stillBusy: boolean;
  baseline: LatencySummary;
  loaded: LatencySummary;
  /** The same user B also sends a 1200×900 JPEG (a thumbnail decode) every second. */
  baselinePhotos: LatencySummary;
  loadedPhotos: LatencySummary;
}

export async function decodeBomb(server: ServerHandle, images: Images, options = { bombs: 2, phaseMs: 36_000 }): Promise<BombFigures> {
  const [a, b] = [await seedUser(server, "bomber_a"), await seedUser(server, "victim_b")];
  const bombBytes = manyScanJpeg(10_000, 10_000, true);
  await admin(server, "PATCH", "/api/admin/groups/1", { max_pixels: 200_000_000, max_file_size_kb: 20_480 });
  const bomb = multipartFile(bombBytes, "scans.jpg", "image/jpeg");
  const small = multipartFile(images.small, "shot.png", "image/png");
  const medium = multipartFile(images.medium, "photo.jpg", "image/jpeg");
  const bUpload = (timeoutMs: number) => upload(server.port, b.token, small, "127.0.0.50", timeoutMs);
  const bPhoto = (timeoutMs: number) => upload(server.port, b.token, medium, "127.0.0.51", timeoutMs);
  for (let i = 0; i < 2; i++) await Promise.all([bUpload(10_000), bPhoto(10_000)]); // warm-up
  const base = pacedRequests(bUpload, 200, performance.now() + 6000);
  const basePhotos = pacedRequests(bPhoto, 1000, performance.now() + 6000);
  await Bun.sleep(4000);
  const baseline = summarize(await base.stop());
  const baselinePhotos = summarize(await basePhotos.stop());

  const t0 = performance.now();
  const hardDeadline = t0 + options.phaseMs;
  const cpu0 = treeCpu(server.pid);
  const answers: BombFigures["answers"] = [];
  const bombs = Array.from({ length: options.bombs }, (_, i) =>
    upload(server.port, a.token, bomb, `127.0.0.${20 + i}`, options.phaseMs - 2000).then(
      (r) => void answers.push({ status: r.status, message: messageOf(r.body), ms: r.doneAt - r.startedAt }),
      (e: Error) => void answers.push({ status: /^timeout/.test(e.message) ? "no answer" : e.message.slice(0, 40), ms: performance.now() - t0 }),
    ),
  );
  const victim = pacedRequests(bUpload, 200, hardDeadline);
  const victimPhotos = pacedRequests(bPhoto, 1000, hardDeadline);
  // the phase lasts until the bombs are answered and the tree has been quiet for a second (sharp's timeout did not
  // stop the work of 51fdfd2's decodes), or its end
  let last = { at: performance.now(), cpu: cpu0 };
  let busy = true;
  let answered = false;
  void Promise.all(bombs).then(() => (answered = true));
  while (performance.now() < hardDeadline - 2500) {
    await Bun.sleep(1000);
    const now = { at: performance.now(), cpu: treeCpu(server.pid) };
    const d = cpuDelta(last.cpu, now.cpu);
    busy = (d.server + d.children) / ((now.at - last.at) / 1000) > 0.3;
    last = now;
    if (answered && !busy && performance.now() - t0 > 6000) break;
  }
  const cpu = cpuDelta(cpu0, treeCpu(server.pid));
  const loaded = summarize(await victim.stop());
  const loadedPhotos = summarize(await victimPhotos.stop());
  await Promise.race([Promise.all(bombs), Bun.sleep(500)]);
  return { bombBytes: bombBytes.byteLength, answers, cpu, cpuSeconds: cpu.server + cpu.children + cpu.database, stillBusy: busy, baseline, loaded, baselinePhotos, loadedPhotos };
}

// ---------------------------------------------------------------- phase d: slow bodies from one account

export interface SlowKnownResult {
  status: number | null;
  message?: string;
  answerMs: number | null;
  bytesBeforeAnswer: number;
  closedByServer: boolean;
}

/**
 * An upload by a known caller (Authorization header) with a declared Content-Length of `totalBytes`, sent
 * `chunkBytes` every `pauseMs` until the body ends, the server closes the connection, or `stopAt` (performance.now()),
 * when the client hangs up. Keeps sending after an answer, as an attacker would, while the connection is open.
 */
export function slowKnownUpload(options: {
  port: number;
  localAddress: string;
  token: string;
  totalBytes: number;
  chunkBytes: number;
  pauseMs: number;
  stopAt: number;
}): Promise<SlowKnownResult> {
  const partHead = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`);
  const partTail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const fileBytes = options.totalBytes - partHead.length - partTail.length;
  const head = Buffer.from(
    `POST /api/v1/upload HTTP/1.1\r\nHost: 127.0.0.1:${options.port}\r\nUser-Agent: hardening-bench\r\nAuthorization: Bearer ${options.token}\r\n` +
      `Accept: application/json\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${options.totalBytes}\r\n\r\n`,
  );
  const chunk = Buffer.alloc(options.chunkBytes, 0x5a);
  return new Promise((resolvePromise) => {
    const started = performance.now();
    const result: SlowKnownResult = { status: null, answerMs: null, bytesBeforeAnswer: 0, closedByServer: false };
    let written = 0;
    let response = "";
    let closed = false;
    let hungUp = false;
    const socket = net.connect({ host: "127.0.0.1", port: options.port, localAddress: options.localAddress });
    const stopTimer = setTimeout(() => ((hungUp = true), socket.destroy()), Math.max(0, options.stopAt - performance.now()));
    socket.on("data", (d) => {
      if (response.length > 8192) return;
      response += d.toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(response);
      if (m && result.status === null) {
        result.status = Number(m[1]);
        result.bytesBeforeAnswer = written;
        result.answerMs = performance.now() - started;
      }
      const body = response.indexOf("\r\n\r\n");
      if (body >= 0) result.message = /"message"\s*:\s*"([^"]*)"/.exec(response.slice(body))?.[1];
    });
    socket.on("error", () => {});
    socket.on("end", () => {
      if (!hungUp) result.closedByServer = true;
    });
    socket.on("close", () => {
      closed = true;
      clearTimeout(stopTimer);
      resolvePromise(result);
    });
    socket.on("connect", async () => {
      socket.write(Buffer.concat([head, partHead]));
      written += head.length + partHead.length;
      for (let sent = 0; sent < fileBytes && !closed; sent += chunk.length) {
        const n = Math.min(chunk.length, fileBytes - sent);
        socket.write(n === chunk.length ? chunk : chunk.subarray(0, n));
        written += n;
        await Bun.sleep(options.pauseMs);
      }
      if (!closed) socket.write(partTail);
    });
  });
}

export interface SlowBodiesFigures {
  concurrentUploads: number | null;
  clients: number;
  bodyBytes: number;
  burstSeconds: number;
  results: SlowKnownResult[];
  idleRss: number;
  peakRss: number;
  /** VmRSS medians over half a second: right after the burst ended (every A socket closed), 5 s and 10 s later. */
  rssAtEnd: number;
  rssAfter5: number;
  rssAfter10: number;
  victim: LatencySummary;
}

export async function slowBodiesFromOneAccount(
  server: ServerHandle,
  images: Images,
  options: { concurrentUploads: number | null; clients: number; bodyBytes: number; burstMs: number; afterMs: number },
): Promise<SlowBodiesFigures> {
  const [a, b] = [await seedUser(server, "slow_a"), await seedUser(server, "victim_b")];
  await admin(server, "PATCH", "/api/admin/groups/1", { concurrent_uploads: options.concurrentUploads, max_file_size_kb: 10_240 });
  const small = multipartFile(images.small, "shot.png", "image/png");
  const bUpload = (timeoutMs: number) => upload(server.port, b.token, small, "127.0.0.50", timeoutMs);
  await bUpload(10_000); // warm-up
  await Bun.sleep(1000);
  const idle = sampleMemory(server.pid);
  await Bun.sleep(1000);
  const idleRss = quantile(idle.stop().rss, 0.5);

  const during = sampleMemory(server.pid);
  const t0 = performance.now();
  const stopAt = t0 + options.burstMs;
  const victim = pacedRequests(bUpload, 200, stopAt + 2000);
  // each of A's uploads from its own address (127.0.1.x), so that per-address bounds do not hide the per-caller one
  const results = await Promise.all(
    Array.from({ length: options.clients }, (_, i) =>
      slowKnownUpload({ port: server.port, localAddress: `127.0.1.${1 + i}`, token: a.token, totalBytes: options.bodyBytes, chunkBytes: 64 * 1024, pauseMs: 500, stopAt }),
    ),
  );
  const victimRecords = await victim.stop();
  const peakRss = Math.max(...during.stop().rss);
  const medianOver = async (ms: number) => {
    const s = sampleMemory(server.pid);
    await Bun.sleep(ms);
    return quantile(s.stop().rss, 0.5);
  };
  const ended = performance.now();
  const rssAtEnd = await medianOver(500);
  await Bun.sleep(Math.max(0, ended + 5000 - 250 - performance.now()));
  const rssAfter5 = await medianOver(500);
  let rssAfter10 = NaN;
  if (options.afterMs >= 10_000) {
    await Bun.sleep(Math.max(0, ended + 10_000 - 250 - performance.now()));
    rssAfter10 = await medianOver(500);
  }
  return {
    concurrentUploads: options.concurrentUploads,
    clients: options.clients,
    bodyBytes: options.bodyBytes,
    burstSeconds: options.burstMs / 1000,
    results,
    idleRss,
    peakRss,
    rssAtEnd,
    rssAfter5,
    rssAfter10,
    victim: summarize(victimRecords),
  };
}

// ---------------------------------------------------------------- phase e: connection flood from one address

export interface FloodFigures {
  wanted: number;
  opened: number;
  openSeconds: number;
  failedToOpen: Record<string, number>;
  idleFds: number;
  peakFds: number;
  fdsAfter: number;
  /** Answers the flood's connections got while held, by status, and how fast. */
  answers: Record<string, number>;
  answerMsP50: number;
  answerMsMax: number;
  closedByServer: number;
  health: { baseline: LatencySummary; during: LatencySummary };
  signIn: { baseline: LatencySummary; during: LatencySummary };
  /** Lines the server logged during the phase at error level, and those with status 500. */
  errorLines: number;
  status500Lines: number;
}

function serverLogSize(server: ServerHandle): number {
  try {
    return Bun.file(join(server.dataDir, "server.out")).size;
  } catch {
    return 0;
  }
}

async function serverLogSince(server: ServerHandle, offset: number): Promise<string> {
  const file = Bun.file(join(server.dataDir, "server.out"));
  return file.size > offset ? await file.slice(offset).text() : "";
}

/** Sets the user's password and signs in through the user center's form: answers the session cookie. */
async function signIn(server: ServerHandle, username: string, password: string, localAddress = "127.0.0.60", timeoutMs = 10_000) {
  const form = new TextEncoder().encode(`login=${encodeURIComponent(username)}&password=${encodeURIComponent(password)}`);
  return httpRequest({
    port: server.port,
    localAddress,
    method: "POST",
    path: "/user/login",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: `http://127.0.0.1:${server.port}` },
    body: form,
    timeoutMs,
  });
}

/** httpRequest hides the headers: the session cookie is read with its own request. */
async function sessionCookie(server: ServerHandle, username: string, password: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${server.port}/user/login`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: `http://127.0.0.1:${server.port}` },
    body: `login=${encodeURIComponent(username)}&password=${encodeURIComponent(password)}`,
  });
  const cookie = res.headers.getSetCookie().map((c) => c.split(";")[0]!).find((c) => c.startsWith("ih_session="));
  if (!cookie) throw new Error(`sign-in as ${username} → ${res.status} without a session cookie: ${(await res.text()).slice(0, 200)}`);
  return cookie;
}

export async function connectionFlood(server: ServerHandle, options: { connections: number; holdMs: number }): Promise<FloodFigures> {
  const b = await seedUser(server, "victim_b");
  const password = "correct horse battery staple";
  await admin(server, "PATCH", `/api/admin/users/${b.id}`, { password });
  const health = (timeoutMs: number) => httpRequest({ port: server.port, localAddress: "127.0.0.60", method: "GET", path: "/health", timeoutMs: Math.min(timeoutMs, 15_000) });
  const login = async (timeoutMs: number) => {
    const r = await signIn(server, "victim_b", password, "127.0.0.61", Math.min(timeoutMs, 15_000));
    return { ...r, status: r.status === 303 ? 200 : r.status }; // a sign-in that worked redirects
  };
  // baseline
  const hb = pacedRequests(health, 250, performance.now() + 4000);
  const sb = pacedRequests(login, 1000, performance.now() + 4000);
  await Bun.sleep(2500);
  const baseline = { health: summarize(await hb.stop()), signIn: summarize(await sb.stop()) };
  await Bun.sleep(500);
  const idleFds = openFds(server.pid);
  const logFrom = serverLogSize(server);

  const fds = sampler(() => openFds(server.pid), 200);
  const t0 = performance.now();
  const holdUntil = t0 + options.holdMs;
  const healthDuring = pacedRequests(health, 250, holdUntil + 1500);
  const signInDuring = pacedRequests(login, 1000, holdUntil + 1500);
  const head =
    `POST /user/login HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nUser-Agent: hardening-bench\r\nOrigin: http://127.0.0.1:${server.port}\r\n` +
    `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nlogin=flood&password=`;
  const sockets: net.Socket[] = [];
  const answers: Record<string, number> = {};
  const answerMs: number[] = [];
  const failedToOpen: Record<string, number> = {};
  let closedByServer = 0;
  let opened = 0;
  let stopping = false;
  const openOne = () =>
    new Promise<void>((done) => {
      const started = performance.now();
      const socket = net.connect({ host: "127.0.0.1", port: server.port, localAddress: "127.0.0.77" });
      let connected = false;
      let answered = false;
      socket.setTimeout(5000, () => {
        if (!connected) socket.destroy(new Error("connect timeout"));
      });
      socket.on("connect", () => {
        connected = true;
        socket.setTimeout(0);
        opened++;
        sockets.push(socket);
        socket.write(head);
        done();
      });
      socket.on("data", (d) => {
        if (answered) return;
        answered = true;
        const status = /^HTTP\/1\.1 (\d{3})/.exec(d.toString("latin1"))?.[1] ?? "garbled";
        answers[status] = (answers[status] ?? 0) + 1;
        answerMs.push(performance.now() - started);
      });
      socket.on("end", () => {
        if (!stopping) closedByServer++;
      });
      socket.on("error", (e: NodeJS.ErrnoException) => {
        if (!connected) {
          const key = e.code ?? e.message;
          failedToOpen[key] = (failedToOpen[key] ?? 0) + 1;
          done();
        }
      });
    });
  // at most 256 connects pending at once; opening stops at the hold's end
  let next = 0;
  await Promise.all(
    Array.from({ length: 256 }, async () => {
      while (next < options.connections && performance.now() < holdUntil) {
        next++;
        await openOne();
      }
    }),
  );
  const openSeconds = (performance.now() - t0) / 1000;
  await Bun.sleep(Math.max(0, holdUntil - performance.now()));
  stopping = true;
  const peakFds = Math.max(...fds.stop());
  for (const s of sockets) s.destroy();
  const during = { health: summarize(await healthDuring.stop()), signIn: summarize(await signInDuring.stop()) };
  await Bun.sleep(2000);
  const fdsAfter = openFds(server.pid);
  const log = await serverLogSince(server, logFrom);
  const lines = log.split("\n");
  return {
    wanted: options.connections,
    opened,
    openSeconds,
    failedToOpen,
    idleFds,
    peakFds,
    fdsAfter,
    answers,
    answerMsP50: quantile(answerMs, 0.5),
    answerMsMax: answerMs.length ? Math.max(...answerMs) : NaN,
    closedByServer,
    health: { baseline: baseline.health, during: during.health },
    signIn: { baseline: baseline.signIn, during: during.signIn },
    errorLines: lines.filter((l) => /"level":\s*(50|"error")/.test(l)).length,
    status500Lines: lines.filter((l) => /"status":\s*500\b/.test(l)).length,
  };
}

// ---------------------------------------------------------------- phase f: token minting

export interface MintFigures {
  seconds: number;
  requests: number;
  statuses: Record<string, number>;
  /** Tokens in the 200 answers: each is a row. */
  tokensCreated: number;
  dbBytesBefore: number;
  dbBytesAfter: number;
  page: { status: number | string; bytes: number; ms: number };
  rssBeforePage: number;
  rssPeakDuringPage: number;
  rssAfterPage: number;
}

function directoryBytes(dir: string): number {
  const out = Bun.spawnSync(["du", "-sb", dir]).stdout.toString();
  return Number(out.split("\t")[0]) || NaN;
}

export async function tokenMinting(server: ServerHandle, options: { clients: number; mintMs: number; pageTimeoutMs: number }): Promise<MintFigures> {
  const a = await seedUser(server, "minter_a");
  const password = "correct horse battery staple";
  await admin(server, "PATCH", `/api/admin/users/${a.id}`, { password });
  await Bun.sleep(1000);
  const dbDir = join(server.dataDir, "postgres");
  const dbBytesBefore = directoryBytes(dbDir);
  const statuses: Record<string, number> = {};
  let tokensCreated = 0;
  let requests = 0;
  const t0 = performance.now();
  const until = t0 + options.mintMs;
  await Promise.all(
    Array.from({ length: options.clients }, async () => {
      while (performance.now() < until) {
        requests++;
        try {
          const res = await fetch(`http://127.0.0.1:${server.port}/api/v1/images/tokens`, {
            method: "POST",
            headers: { authorization: `Bearer ${a.token}`, "content-type": "application/json", accept: "application/json" },
            body: JSON.stringify({ num: 100, seconds: 2626560 }),
            signal: AbortSignal.timeout(Math.max(1000, until + 5000 - performance.now())),
          });
          const text = await res.text();
          const key = res.status === 200 ? "200" : `${res.status} "${(messageOf(text) ?? "").replace(/retry in \d+/, "retry in N").slice(0, 70)}"`;
          statuses[key] = (statuses[key] ?? 0) + 1;
          if (res.status === 200) tokensCreated += JSON.parse(text).data.tokens.length;
          else await Bun.sleep(50); // refused: retry shortly, as a persistent client would
        } catch (e) {
          const key = (e as Error).name;
          statuses[key] = (statuses[key] ?? 0) + 1;
        }
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await Bun.sleep(1000);
  const dbBytesAfter = directoryBytes(dbDir);

  const cookie = await sessionCookie(server, "minter_a", password);
  await Bun.sleep(500);
  const rssBeforePage = rssBytes(server.pid);
  const mem = sampleMemory(server.pid, 100);
  const started = performance.now();
  let page: MintFigures["page"];
  try {
    const r = await httpRequest({ port: server.port, localAddress: "127.0.0.62", method: "GET", path: "/user/tokens", headers: { cookie }, timeoutMs: options.pageTimeoutMs });
    page = { status: r.status, bytes: Buffer.byteLength(r.body), ms: r.doneAt - started };
  } catch (e) {
    page = { status: (e as Error).message.slice(0, 40), bytes: NaN, ms: performance.now() - started };
  }
  const rssPeakDuringPage = Math.max(...mem.stop().rss);
  await Bun.sleep(1000);
  return { seconds, requests, statuses, tokensCreated, dbBytesBefore, dbBytesAfter, page, rssBeforePage, rssPeakDuringPage, rssAfterPage: rssBytes(server.pid) };
}

// ---------------------------------------------------------------- main

const SCENARIOS = ["a", "b", "c", "d", "e", "f"] as const;
type Scenario = (typeof SCENARIOS)[number];

interface Run {
  label: string;
  /** Which --src it measured, and in which round. */
  src: number;
  round: number;
  memory?: MemoryFigures;
  latency?: LatencyFigures;
  bomb?: BombFigures;
  slowLimited?: SlowBodiesFigures;
  slowUnlimited?: SlowBodiesFigures;
  flood?: FloodFigures;
  mint?: MintFigures;
  /** /proc/loadavg (1, 5, 15 min) when the checkout's scenarios started and ended. */
  load: { start: string; end: string };
}

function describeSrc(src: string): string {
  const git = (args: string[]) => Bun.spawnSync(["git", "-C", src, ...args]).stdout.toString().trim();
  const commit = git(["rev-parse", "--short", "HEAD"]);
  const dirty = git(["status", "--porcelain", "--untracked-files=no"]) !== "";
  return `${basename(src) || src} ${commit}${dirty ? "+wt" : ""}`;
}

const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const count = (st: Record<string, number>) =>
  Object.entries(st)
    .map(([s, n]) => `${n}×${s}`)
    .join(" ") || "–";
const sec = (x: number) => `${x.toFixed(1)} s`;
const lat = (s: LatencySummary) => `${msf(s.p50)} / ${msf(s.p99)} / ${msf(s.max)}`;

function printTable(runs: Run[], markdown: boolean) {
  const head = ["", ...runs.map((r) => r.label)];
  const rows: string[][] = [];
  const row = (name: string, f: (r: Run) => string) => rows.push([name, ...runs.map((r) => f(r))]);
  const section = (title: string) => rows.push([title]);
  row("load average at start / end", (r) => `${r.load.start} / ${r.load.end}`);
  if (runs.some((r) => r.memory)) {
    const m = runs.find((r) => r.memory)!.memory!;
    section(`a. ${m.clients} unauthenticated clients × ${mb(m.bodyBytes)} chunked body, each from its own address`);
    const rm = (f: (m: MemoryFigures) => string) => (r: Run) => (r.memory ? f(r.memory) : "–");
    row("  server RSS idle", rm((m) => mb(m.idleRss)));
    row("  server RSS peak during", rm((m) => mb(m.peakRss)));
    row("  server RSS peak − idle", rm((m) => mb(m.peakRss - m.idleRss)));
    row("  server RSS 1.5 s after", rm((m) => mb(m.afterRss)));
    row("  process tree PSS idle (processes)", rm((m) => `${mb(m.idleTree)} (${m.processes})`));
    row("  process tree PSS peak − idle", rm((m) => mb(m.peakTree - m.idleTree)));
    row("  process tree PSS 1.5 s after", rm((m) => mb(m.afterTree)));
    row("  answers", rm((m) => count(m.statuses)));
    row("  slowest answer", rm((m) => msf(m.answerMsMax)));
    row("  written before answer, all clients", rm((m) => mb(m.beforeAnswerTotal)));
    row("  written before answer, max per client", rm((m) => mb(m.beforeAnswerMax)));
    row("  written before close, all clients", rm((m) => mb(m.beforeCloseTotal)));
    row("  connections closed by server", rm((m) => `${m.closedByServer}/${m.clients}`));
    row("  phase duration", rm((m) => sec(m.seconds)));
  }
  if (runs.some((r) => r.latency)) {
    const l = runs.find((r) => r.latency)!.latency!;
    section(`b. user A: 8 uploads in flight of a ${mb(l.heavyBytes)} progressive 6000×4000 JPEG; user B sequential`);
    const rl = (f: (l: LatencyFigures) => string) => (r: Run) => (r.latency ? f(r.latency) : "–");
    row("  one A upload alone (2 runs)", rl((l) => l.soloHeavyMs.map((x) => Math.round(x)).join(", ") + " ms"));
    for (const kind of ["medium", "small"] as const) {
      const label = kind === "medium" ? "B 1200×900 JPEG" : "B 300×200 PNG";
      const ok = (xs: VictimRecord[]) => xs.filter((v) => v.kind === kind && v.status === 200).map((v) => v.ms);
      const fmt = (xs: number[]) => `${msf(quantile(xs, 0.5))} / ${msf(quantile(xs, 0.95))} / ${msf(Math.max(...xs))}`;
      row(`  ${label}, no load: p50 / p95 / max`, rl((l) => fmt(ok(l.baseline))));
      row(`  ${label}, under A: p50 / p95 / max`, rl((l) => fmt(ok(l.loaded))));
      row(
        `  ${label}, under A: answered in the phase`,
        rl((l) => {
          const xs = l.loaded.filter((v) => v.kind === kind);
          const st: Record<string, number> = {};
          for (const v of xs) {
            const key = v.status === "unfinished" ? `unfinished after ≥${(v.ms / 1000).toFixed(1)} s` : String(v.status);
            st[key] = (st[key] ?? 0) + 1;
          }
          return `${xs.filter((v) => v.status === 200).length}/${l.victimCount}${xs.length ? ": " : ""}${count(st)}`;
        }),
      );
      row(
        `  ${label}: A uploads overtaken / queued before`,
        rl((l) => {
          const xs = l.loaded.filter((v) => v.kind === kind && v.status === 200);
          return `${xs.reduce((a, v) => a + v.overtaken, 0)} / ${xs.reduce((a, v) => a + v.abusiveQueuedBefore, 0)}`;
        }),
      );
    }
    row(
      "  A answers during the phase",
      rl((l) => {
        const st: Record<string, number> = {};
        for (const a of l.abuse) {
          const key = a.status === null ? "unanswered" : String(a.status).slice(0, 24);
          st[key] = (st[key] ?? 0) + 1;
        }
        return count(st);
      }),
    );
    row("  loaded phase duration", rl((l) => sec(l.loadedSeconds)));
  }
  if (runs.some((r) => r.bomb)) {
    const bytes = runs.find((r) => r.bomb)!.bomb!.bombBytes;
    section(`c. decode bomb: user A sends 2 at once of a ${(bytes / 1024).toFixed(0)} KB progressive 10000×10000 JPEG of 883 scans with a stray byte after SOF2; user B a 300×200 PNG every 200 ms`);
    const rb = (f: (b: BombFigures) => string) => (r: Run) => (r.bomb ? f(r.bomb) : "–");
    row("  A's answers (status, time, message)", rb((b) => b.answers.map((a) => `${a.status} in ${msf(a.ms)}${a.message ? ` "${a.message.slice(0, 60)}"` : ""}`).join("; ")));
    row("  CPU s, server + decode children + PostgreSQL", rb((b) => `${sec(b.cpuSeconds)} (${b.cpu.server.toFixed(1)} + ${b.cpu.children.toFixed(1)} + ${b.cpu.database.toFixed(1)})`));
    row("  still burning CPU at the phase's end", rb((b) => (b.stillBusy ? "yes" : "no")));
    row("  B's PNG every 200 ms, without A: p50 / p99 / max", rb((b) => lat(b.baseline)));
    row("  B's PNG during A: p50 / p99 / max", rb((b) => lat(b.loaded)));
    row("  B's PNG during A: answers", rb((b) => count(b.loaded.statuses)));
    row("  B's 1200×900 JPEG every 1 s, without A: p50 / p99 / max", rb((b) => lat(b.baselinePhotos)));
    row("  B's 1200×900 JPEG every 1 s, during A: p50 / p99 / max", rb((b) => lat(b.loadedPhotos)));
    row("  B's 1200×900 JPEG during A: answers", rb((b) => count(b.loadedPhotos.statuses)));
  }
  for (const key of ["slowLimited", "slowUnlimited"] as const) {
    if (!runs.some((r) => r[key])) continue;
    const s = runs.find((r) => r[key])![key]!;
    section(
      `d${key === "slowLimited" ? "1" : "2"}. one account, group concurrent_uploads ${s.concurrentUploads ?? "unlimited"}: ${s.clients} slow uploads (${mb(s.bodyBytes)} declared, 64 KB every 500 ms, ` +
        `each from its own address) for ${s.burstSeconds} s; user B a 300×200 PNG every 200 ms`,
    );
    const rs = (f: (s: SlowBodiesFigures) => string) => (r: Run) => (r[key] ? f(r[key]!) : "–");
    row("  A's answers during the burst", rs((s) => {
      const st: Record<string, number> = {};
      for (const x of s.results) {
        const k = x.status === null ? "none" : `${x.status}${x.message ? ` "${x.message.slice(0, 60)}"` : ""}`;
        st[k] = (st[k] ?? 0) + 1;
      }
      return count(st);
    }));
    row("  A refused: answer time p50 / max", rs((s) => {
      const xs = s.results.filter((x) => x.status !== null && x.status >= 400).map((x) => x.answerMs!);
      return xs.length ? `${msf(quantile(xs, 0.5))} / ${msf(Math.max(...xs))}` : "–";
    }));
    row("  A refused: body bytes sent before the answer, max", rs((s) => {
      const xs = s.results.filter((x) => x.status !== null && x.status >= 400).map((x) => x.bytesBeforeAnswer);
      return xs.length ? `${(Math.max(...xs) / 1024).toFixed(0)} KB` : "–";
    }));
    row("  A connections closed by the server", rs((s) => `${s.results.filter((x) => x.closedByServer).length}/${s.clients}`));
    row("  B answers", rs((s) => count(s.victim.statuses)));
    row("  B p50 / p99 / max (200s)", rs((s) => lat(s.victim)));
    row("  server RSS idle", rs((s) => mb(s.idleRss)));
    row("  server RSS peak during", rs((s) => mb(s.peakRss)));
    row("  server RSS at the burst's end", rs((s) => mb(s.rssAtEnd)));
    row("  server RSS 5 s after", rs((s) => mb(s.rssAfter5)));
    if (key === "slowUnlimited") row("  server RSS 10 s after", rs((s) => mb(s.rssAfter10)));
  }
  if (runs.some((r) => r.flood)) {
    const f = runs.find((r) => r.flood)!.flood!;
    section(`e. connection flood: one address opens ${f.wanted} connections sending POST /user/login headers (Content-Length 1000) and a partial body, held 10 s`);
    const rf = (fn: (f: FloodFigures) => string) => (r: Run) => (r.flood ? fn(r.flood) : "–");
    row("  connections opened (time to open)", rf((f) => `${f.opened}/${f.wanted} (${sec(f.openSeconds)})${Object.keys(f.failedToOpen).length ? ` failed: ${count(f.failedToOpen)}` : ""}`));
    row("  server open fds idle / peak / 2 s after", rf((f) => `${f.idleFds} / ${f.peakFds} / ${f.fdsAfter}`));
    row("  attacker's answers while held", rf((f) => count(f.answers)));
    row("  attacker's answer time p50 / max", rf((f) => `${msf(f.answerMsP50)} / ${msf(f.answerMsMax)}`));
    row("  attacker's connections closed by the server", rf((f) => `${f.closedByServer}`));
    row("  second client GET /health, no flood: p50 / p99 / max", rf((f) => lat(f.health.baseline)));
    row("  second client GET /health, during: p50 / p99 / max", rf((f) => lat(f.health.during)));
    row("  second client GET /health, during: answers", rf((f) => count(f.health.during.statuses)));
    row("  second client sign-in, no flood: p50 / p99 / max", rf((f) => lat(f.signIn.baseline)));
    row("  second client sign-in, during: p50 / p99 / max", rf((f) => lat(f.signIn.during)));
    row("  second client sign-in, during: answers", rf((f) => count(f.signIn.during.statuses)));
    row("  server log lines during: error level / status 500", rf((f) => `${f.errorLines} / ${f.status500Lines}`));
  }
  if (runs.some((r) => r.mint)) {
    section("f. token minting: one account, 8 clients looping POST /api/v1/images/tokens {num:100, seconds:2626560} for 10 s; then one GET /user/tokens");
    const rt = (fn: (m: MintFigures) => string) => (r: Run) => (r.mint ? fn(r.mint) : "–");
    row("  requests (answers)", rt((m) => `${m.requests} (${count(m.statuses)})`));
    row("  tokens created (rows)", rt((m) => `${m.tokensCreated} in ${sec(m.seconds)}`));
    row("  database directory growth", rt((m) => `${mb(m.dbBytesAfter - m.dbBytesBefore)} (${((m.dbBytesAfter - m.dbBytesBefore) / 1024 / 1024 / m.seconds).toFixed(2)} MB/s)`));
    row("  GET /user/tokens: status, size, time", rt((m) => `${m.page.status}, ${Number.isFinite(m.page.bytes) ? `${(m.page.bytes / 1024).toFixed(0)} KB` : "–"}, ${msf(m.page.ms)}`));
    row("  server RSS before / peak during / after the page", rt((m) => `${mb(m.rssBeforePage)} / ${mb(m.rssPeakDuringPage)} / ${mb(m.rssAfterPage)}`));
  }

  if (markdown) {
    const esc = (c: string) => c.replace(/\|/g, "\\|").trim();
    console.log(`| ${head.map(esc).join(" | ")} |`);
    console.log(`|${head.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`);
    for (const r of rows) console.log(r.length === 1 ? `| **${esc(r[0]!)}** |${" |".repeat(head.length - 1)}` : `| ${r.map(esc).join(" | ")} |`);
    return;
  }
  const widths = head.map((h, i) => Math.max(h.length, ...rows.filter((r) => r.length > 1).map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  console.log(line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of rows) console.log(r.length === 1 ? r[0] : line(r));
}

/** Seconds each scenario may take on one checkout, server starts included (the watchdog's budget). */
const SCENARIO_BUDGET_S: Record<Scenario, number> = { a: 45, b: 90, c: 75, d: 110, e: 55, f: 75 };

async function main() {
  if (!existsSync("/proc/self/status")) {
    console.error("hardening-bench: needs /proc (Linux) to read the server's RSS, CPU and descriptors.");
    process.exit(1);
  }
  const args = process.argv.slice(2);
  const srcs: { dir: string; env: Record<string, string> }[] = [];
  let rounds = 1;
  let only: Scenario[] = [...SCENARIOS];
  let markdown = false;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--src") srcs.push({ dir: resolve(args[++i] ?? "."), env: {} });
    else if (args[i] === "--with" && srcs.length > 0 && /^[A-Z_][A-Z0-9_]*=/.test(args[i + 1] ?? "")) {
      const [k, ...v] = args[++i]!.split("=");
      srcs[srcs.length - 1]!.env[k!] = v.join("=");
    } else if (args[i] === "--rounds") rounds = Math.max(1, Math.min(3, Number(args[++i]) || 1));
    else if (args[i] === "--only") {
      const picked = (args[++i] ?? "").split(",").map((s) => s.trim().toLowerCase()).filter(Boolean);
      const unknown = picked.filter((s) => !(SCENARIOS as readonly string[]).includes(s));
      if (picked.length === 0 || unknown.length > 0) throw new Error(`--only takes a comma-separated list of ${SCENARIOS.join(", ")}${unknown.length ? `; unknown: ${unknown.join(", ")}` : ""}`);
      only = SCENARIOS.filter((s) => picked.includes(s));
    } else if (args[i] === "--markdown") markdown = true;
    else throw new Error(`unknown argument ${args[i]}: use --src DIR [--with VAR=VALUE]… (repeatable), --rounds N, --only a,b,c,d,e,f and --markdown`);
  }
  if (srcs.length === 0) srcs.push({ dir: resolve(import.meta.dir, ".."), env: {} });
  // labels are taken once: others may commit while this runs
  const labels = srcs.map((s) => `${describeSrc(s.dir)}${Object.entries(s.env).map(([k, v]) => ` ${k}=${v}`).join("")}`);
  const budgetMs = 30_000 + rounds * srcs.length * only.reduce((t, s) => t + SCENARIO_BUDGET_S[s] * 1000, 0);
  const live = new Set<ServerHandle>();
  const watchdog = setTimeout(() => {
    console.error(`hardening-bench: over its time budget of ${budgetMs / 1000} s; stopping.`);
    for (const s of live) s.proc.kill("SIGKILL");
    for (const s of live) rmSync(s.dataDir, { recursive: true, force: true });
    process.exit(2);
  }, budgetMs);
  watchdog.unref();

  const t0 = performance.now();
  const images = await makeImages();
  console.log(
    `images: heavy ${mb(images.heavy.byteLength)}, medium ${(images.medium.byteLength / 1024).toFixed(0)} KB, small ${(images.small.byteLength / 1024).toFixed(0)} KB ` +
      `(${((performance.now() - t0) / 1000).toFixed(1)} s); ${navigator.hardwareConcurrency} cores; scenarios ${only.join(",")}; load average ${loadAverage()}`,
  );

  /** One scenario on a fresh server: figures do not depend on what ran before. */
  const onFreshServer = async <T>(src: { dir: string; env: Record<string, string> }, name: string, run: (server: ServerHandle) => Promise<T>): Promise<T> => {
    const started = performance.now();
    const server = await startServer(src.dir, src.env);
    live.add(server);
    try {
      await Bun.sleep(1500); // let the start-up settle (the reconciler runs once at start)
      const result = await run(server);
      console.log(`  ${name}: ${((performance.now() - started) / 1000).toFixed(0)} s (load ${loadAverage()})`);
      return result;
    } finally {
      await server.stop("SIGKILL"); // abusive requests may still be in flight: no need to drain them
      live.delete(server);
    }
  };

  const runs: Run[] = [];
  for (let round = 0; round < rounds; round++) {
    const order = srcs.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const index of order) {
      const src = srcs[index]!;
      const label = `${labels[index]}${rounds > 1 ? ` #${round + 1}` : ""}`;
      console.log(`${label}:`);
      const run: Run = { label, src: index, round, load: { start: loadAverage(), end: "" } };
      if (only.includes("a")) run.memory = await onFreshServer(src, "a", (s) => memoryUnderUnauthenticatedBodies(s, { clients: 32, fileBytes: 50 * 1024 * 1024 }));
      if (only.includes("b")) run.latency = await onFreshServer(src, "b", (s) => latencyUnderDecodeHeavyClient(s, images, { victimCount: 10, inFlight: 8, phaseMs: 30_000 }));
      if (only.includes("c")) run.bomb = await onFreshServer(src, "c", (s) => decodeBomb(s, images));
      if (only.includes("d")) {
        const slow = { clients: 64, bodyBytes: 9 * 1024 * 1024 };
        run.slowLimited = await onFreshServer(src, "d1", (s) => slowBodiesFromOneAccount(s, images, { ...slow, concurrentUploads: 1, burstMs: 25_000, afterMs: 5000 }));
        run.slowUnlimited = await onFreshServer(src, "d2", (s) => slowBodiesFromOneAccount(s, images, { ...slow, concurrentUploads: null, burstMs: 20_000, afterMs: 10_000 }));
      }
      if (only.includes("e")) {
        const connections = Math.min(5000, ownFdLimit() - 1000);
        run.flood = await onFreshServer(src, "e", (s) => connectionFlood(s, { connections, holdMs: 10_000 }));
      }
      if (only.includes("f")) run.mint = await onFreshServer(src, "f", (s) => tokenMinting(s, { clients: 8, mintMs: 10_000, pageTimeoutMs: 30_000 }));
      run.load.end = loadAverage();
      runs.push(run);
    }
  }
  console.log(`\nload average at the end: ${loadAverage()}\n`);
  runs.sort((x, y) => x.src - y.src || x.round - y.round);
  printTable(runs, false);
  if (markdown) {
    console.log("");
    printTable(runs, true);
  }
  console.log(`\ntotal ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

if (import.meta.main) await main();
