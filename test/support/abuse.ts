/**
 * What strangers and abusive users cost the real server: `bun run src/server.ts` of a checkout as a process of its
 * own (fresh DATA_DIR, embedded database, a free loopback port), and clients that speak raw HTTP/1.1 on sockets, each
 * from its own loopback address (127.0.0.x, Linux), like an attacker with many addresses, so per-address bounds do not
 * hide what the body and decode paths cost. Used by test/security/resource.test.ts and test/support/hostile-probe.ts.
 */
import type { Subprocess } from "bun";
import { randomFillSync } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { MemorySampler, processTree } from "./proc.ts";
import { freePort, spawnServer, stopServer, waitHealthy } from "./processes.ts";

// ---------------------------------------------------------------- the server subprocess

export interface ServerHandle {
  src: string;
  port: number;
  pid: number;
  adminToken: string;
  dataDir: string;
  proc: Subprocess;
  /** SIGTERM (drains in-flight requests, 8 s at most) or SIGKILL; then removes the data directory. */
  stop(signal?: "SIGTERM" | "SIGKILL"): Promise<void>;
}

/**
 * Starts the server of the checkout `src` (processes.ts) on a fresh data directory, an embedded database and a free
 * loopback port; resolves once /health answers. Its output goes to DATA_DIR/server.out and server.err.
 */
export async function startServer(src: string, extraEnv: Record<string, string> = {}): Promise<ServerHandle> {
  const dataDir = mkdtempSync(join(tmpdir(), "imghost-abuse-"));
  // an embedded PostgreSQL started by root runs as the user `postgres`, which must be able to reach the directory
  chmodSync(dataDir, 0o711);
  const port = await freePort();
  const adminToken = `bench-${Bun.randomUUIDv7("hex")}`.slice(0, 40).padEnd(40, "x");
  const proc = spawnServer({
    cwd: src,
    argv: ["bun", "run", join(src, "src/server.ts")],
    env: {
      BASE_URL: undefined,
      TRUST_PROXY: undefined,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: "127.0.0.1",
      ADMIN_TOKEN: adminToken,
      ...extraEnv,
    },
    stdout: { file: join(dataDir, "server.out") },
    stderr: { file: join(dataDir, "server.err") },
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
      await stopServer(proc, signal, 8000);
      // they stop with their parent (or on its death signal): wait, so that they write nothing after the removal
      for (const deadline = Date.now() + 10_000; Date.now() < deadline && descendants.some((p) => existsSync(`/proc/${p}`)); ) await Bun.sleep(50);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitHealthy(proc, `http://127.0.0.1:${port}`, 60_000);
  } catch (e) {
    rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`server from ${src}: ${(e as Error).message}`);
  }
  return { src, port, pid: proc.pid, adminToken, dataDir, proc, stop };
}

export async function admin(server: Pick<ServerHandle, "port" | "adminToken">, method: string, path: string, body?: unknown): Promise<any> {
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
export async function seedUser(server: Pick<ServerHandle, "port" | "adminToken">, username: string): Promise<{ id: number; token: string }> {
  const user = await admin(server, "POST", "/api/admin/users", { username, email: `${username}@example.com`, capacity_kb: 1_000_000_000 });
  const tok = await admin(server, "POST", `/api/admin/users/${user.id}/tokens`);
  return { id: user.id, token: tok.token };
}

// ---------------------------------------------------------------- raw HTTP/1.1 clients

const BOUNDARY = "----abuse-client";

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
    `POST /api/v1/upload HTTP/1.1\r\nHost: 127.0.0.1:${options.port}\r\nUser-Agent: abuse-client\r\n` +
      `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nTransfer-Encoding: chunked\r\n\r\n`,
  );
  const partHead = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`);
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
// ---------------------------------------------------------------- memory under unauthenticated bodies

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

/** For each of B's uploads: A's uploads that were sent before it and unanswered when it started, and how many it overtook. */
export function countOvertaken(victims: VictimRecord[], abuse: AbuseRecord[], marginMs = 200) {
  for (const v of victims) {
    const queued = abuse.filter((a) => a.sentAt <= v.startedAt - marginMs && a.doneAt > v.startedAt);
    v.abusiveQueuedBefore = queued.length;
    v.overtaken = queued.filter((a) => a.doneAt > v.doneAt).length;
  }
}

/** The server's VmRSS and its tree's summed PSS (bytes), every 50 ms until stopped. */
function sampleMemory(pid: number) {
  const sampler = new MemorySampler(50).watch(pid);
  return {
    stop() {
      sampler.stop();
      const xs = sampler.between(pid);
      return { rss: xs.map((x) => x.rss * 1024), tree: xs.map((x) => x.pss.total * 1024), processes: Math.max(0, ...xs.map((x) => x.processes)) };
    },
  };
}
