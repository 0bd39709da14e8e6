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
 * For each checkout, `bun run DIR/src/server.ts` is started as a subprocess (fresh DATA_DIR, embedded
 * database, a free port on 127.0.0.1), two users are seeded through the admin API, and:
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
 * Only loopback traffic. Each phase stops by itself (~30 s at most); the whole run takes 1–3 minutes.
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

// ---------------------------------------------------------------- main

interface Run {
  label: string;
  /** Which --src it measured, and in which round. */
  src: number;
  round: number;
  memory: MemoryFigures;
  latency: LatencyFigures;
}

function describeSrc(src: string): string {
  const git = (args: string[]) => Bun.spawnSync(["git", "-C", src, ...args]).stdout.toString().trim();
  const commit = git(["rev-parse", "--short", "HEAD"]);
  const dirty = git(["status", "--porcelain", "--untracked-files=no"]) !== "";
  return `${basename(src) || src} ${commit}${dirty ? "+wt" : ""}`;
}

function printTable(runs: Run[]) {
  const head = ["", ...runs.map((r) => r.label)];
  const rows: string[][] = [];
  const row = (name: string, f: (r: Run) => string) => rows.push([name, ...runs.map(f)]);
  const m = runs[0]!.memory;
  rows.push([`a. ${m.clients} unauthenticated clients × ${mb(m.bodyBytes)} chunked body, each from its own address`]);
  row("  server RSS idle", (r) => mb(r.memory.idleRss));
  row("  server RSS peak during", (r) => mb(r.memory.peakRss));
  row("  server RSS peak − idle", (r) => mb(r.memory.peakRss - r.memory.idleRss));
  row("  server RSS 1.5 s after", (r) => mb(r.memory.afterRss));
  row("  process tree PSS idle (processes)", (r) => `${mb(r.memory.idleTree)} (${r.memory.processes})`);
  row("  process tree PSS peak − idle", (r) => mb(r.memory.peakTree - r.memory.idleTree));
  row("  process tree PSS 1.5 s after", (r) => mb(r.memory.afterTree));
  row("  answers", (r) => Object.entries(r.memory.statuses).map(([s, n]) => `${n}×${s}`).join(" "));
  row("  slowest answer", (r) => msf(r.memory.answerMsMax));
  row("  written before answer, all clients", (r) => mb(r.memory.beforeAnswerTotal));
  row("  written before answer, max per client", (r) => mb(r.memory.beforeAnswerMax));
  row("  written before close, all clients", (r) => mb(r.memory.beforeCloseTotal));
  row("  connections closed by server", (r) => `${r.memory.closedByServer}/${r.memory.clients}`);
  row("  phase duration", (r) => `${r.memory.seconds.toFixed(1)} s`);
  const l = runs[0]!.latency;
  rows.push([`b. user A: 8 uploads in flight of a ${mb(l.heavyBytes)} progressive 6000×4000 JPEG; user B sequential`]);
  row("  one A upload alone (2 runs)", (r) => r.latency.soloHeavyMs.map((x) => Math.round(x)).join(", ") + " ms");
  for (const kind of ["medium", "small"] as const) {
    const label = kind === "medium" ? "B 1200×900 JPEG" : "B 300×200 PNG";
    const ok = (xs: VictimRecord[]) => xs.filter((v) => v.kind === kind && v.status === 200).map((v) => v.ms);
    const fmt = (xs: number[]) => `${msf(quantile(xs, 0.5))} / ${msf(quantile(xs, 0.95))} / ${msf(Math.max(...xs))}`;
    row(`  ${label}, no load: p50 / p95 / max`, (r) => fmt(ok(r.latency.baseline)));
    row(`  ${label}, under A: p50 / p95 / max`, (r) => fmt(ok(r.latency.loaded)));
    row(`  ${label}, under A: answered in the phase`, (r) => {
      const xs = r.latency.loaded.filter((v) => v.kind === kind);
      const st: Record<string, number> = {};
      for (const v of xs) {
        const key = v.status === "unfinished" ? `unfinished after ≥${(v.ms / 1000).toFixed(1)} s` : String(v.status);
        st[key] = (st[key] ?? 0) + 1;
      }
      return `${xs.filter((v) => v.status === 200).length}/${r.latency.victimCount}${xs.length ? ": " : ""}${Object.entries(st).map(([s, n]) => `${n}×${s}`).join(" ")}`;
    });
    row(`  ${label}: A uploads overtaken / queued before`, (r) => {
      const xs = r.latency.loaded.filter((v) => v.kind === kind && v.status === 200);
      return `${xs.reduce((a, v) => a + v.overtaken, 0)} / ${xs.reduce((a, v) => a + v.abusiveQueuedBefore, 0)}`;
    });
  }
  row("  A answers during the phase", (r) => {
    const st: Record<string, number> = {};
    for (const a of r.latency.abuse) {
      const key = a.status === null ? "unanswered" : String(a.status).slice(0, 24);
      st[key] = (st[key] ?? 0) + 1;
    }
    return Object.entries(st).map(([s, n]) => `${n}×${s}`).join(" ");
  });
  row("  loaded phase duration", (r) => `${r.latency.loadedSeconds.toFixed(1)} s`);

  const widths = head.map((h, i) => Math.max(h.length, ...rows.filter((r) => r.length > 1).map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  console.log(line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of rows) console.log(r.length === 1 ? r[0] : line(r));
}

async function main() {
  if (!existsSync("/proc/self/status")) {
    console.error("hardening-bench: needs /proc (Linux) to read the server's RSS.");
    process.exit(1);
  }
  const args = process.argv.slice(2);
  const srcs: { dir: string; env: Record<string, string> }[] = [];
  let rounds = 1;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--src") srcs.push({ dir: resolve(args[++i] ?? "."), env: {} });
    else if (args[i] === "--with" && srcs.length > 0 && /^[A-Z_][A-Z0-9_]*=/.test(args[i + 1] ?? "")) {
      const [k, ...v] = args[++i]!.split("=");
      srcs[srcs.length - 1]!.env[k!] = v.join("=");
    } else if (args[i] === "--rounds") rounds = Math.max(1, Math.min(3, Number(args[++i]) || 1));
    else throw new Error(`unknown argument ${args[i]}: use --src DIR [--with VAR=VALUE]… (repeatable) and --rounds N`);
  }
  if (srcs.length === 0) srcs.push({ dir: resolve(import.meta.dir, ".."), env: {} });
  // labels are taken once: others may commit while this runs
  const labels = srcs.map((s) => `${describeSrc(s.dir)}${Object.entries(s.env).map(([k, v]) => ` ${k}=${v}`).join("")}`);
  const budgetMs = 30_000 + rounds * srcs.length * 80_000;
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
      `(${((performance.now() - t0) / 1000).toFixed(1)} s); ${navigator.hardwareConcurrency} cores; load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`,
  );

  const runs: Run[] = [];
  for (let round = 0; round < rounds; round++) {
    const order = srcs.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const index of order) {
      const src = srcs[index]!;
      const label = `${labels[index]}${rounds > 1 ? ` #${round + 1}` : ""}`;
      const started = performance.now();
      const server = await startServer(src.dir, src.env);
      live.add(server);
      try {
        const memory = await memoryUnderUnauthenticatedBodies(server, { clients: 32, fileBytes: 50 * 1024 * 1024 });
        const latency = await latencyUnderDecodeHeavyClient(server, images, { victimCount: 10, inFlight: 8, phaseMs: 30_000 });
        runs.push({ label, src: index, round, memory, latency });
        console.log(`${label}: done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
      } finally {
        await server.stop();
        live.delete(server);
      }
    }
  }
  console.log(`\nload average at the end: ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}\n`);
  runs.sort((x, y) => x.src - y.src || x.round - y.round);
  printTable(runs);
  console.log(`\ntotal ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

if (import.meta.main) await main();
