/**
 * One address opening thousands of connections that send headers and a partial body must not
 * take the service offline. The real server (src/server.ts) faces the attack directly, without a proxy: its
 * connection gate answers everything beyond the address's share at once and closes it, the bodies it admitted
 * end at the body deadline, and nothing is logged as a server error.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, type Output, type ServerProcess, startServer } from "../support/processes.ts";

setDefaultTimeout(120_000);

const PER_ADDRESS = 16;
const TOTAL = 120;
const DEADLINE_SECONDS = 3;
let dataDir: string;
let port: number;
let proc: ServerProcess<Output, Output>;
/** What the server printed so far: its standard output (JSON log lines) and error. */
const output = () => ["server.out", "server.err"].map((name) => readFileSync(join(dataDir, name), "utf8")).join("\n");

const openFiles = () => readdirSync(`/proc/${proc.pid}/fd`).length;

interface Held {
  socket: Socket;
  answer: string;
  closedAt: number | null;
}

/** A raw connection that sends a sign-in form's headers and the first bytes of its body, then goes quiet. */
function partialSignIn(address: string): Promise<Held> {
  return new Promise((resolve, reject) => {
    const held: Held = { socket: connect(port, "127.0.0.1"), answer: "", closedAt: null };
    held.socket.on("connect", () => {
      held.socket.write(
        `POST /user/login HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Forwarded-For: ${address}\r\nOrigin: http://127.0.0.1:${port}\r\n` +
          "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nlogin=al",
      );
      resolve(held);
    });
    held.socket.on("data", (d) => (held.answer += d.toString("latin1")));
    held.socket.on("close", () => (held.closedAt = Date.now()));
    held.socket.on("error", () => {});
    held.socket.setTimeout(30_000, () => reject(new Error("connect timeout")));
  });
}

const statusOf = (h: Held) => Number(/^HTTP\/1\.1 (\d{3})/.exec(h.answer)?.[1] ?? 0);

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "imghost-conn-"));
  port = await freePort();
  proc = await startServer({
    env: {
      HOST: "127.0.0.1",
      PORT: String(port),
      DATA_DIR: dataDir,
      TRUST_PROXY: "1",
      CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
      CONNECTIONS_TOTAL: String(TOTAL),
      BODY_READ_TIMEOUT_SECONDS: String(DEADLINE_SECONDS),
      LOG_FORMAT: "json",
      RECONCILE_INTERVAL_SECONDS: "3600",
    },
    stdout: { file: join(dataDir, "server.out") },
    stderr: { file: join(dataDir, "server.err") },
    timeoutMs: 60_000,
  });
});

afterAll(async () => {
  proc?.kill("SIGTERM");
  await proc?.exited;
  rmSync(dataDir, { recursive: true, force: true });
});

describe("one address cannot exhaust the server's connections", () => {
  test("beyond its share: 429 and closed at once; the admitted bodies end at the deadline; others are served throughout; no 500", async () => {
    const baseline = openFiles();
    const started = Date.now();
    const attack = await Promise.all(Array.from({ length: 400 }, () => partialSignIn("198.51.100.7")));
    await Bun.sleep(1000);

    const refused = attack.filter((h) => statusOf(h) === 429);
    expect(refused.length).toBeGreaterThanOrEqual(400 - PER_ADDRESS);
    for (const h of refused) {
      expect(h.closedAt).not.toBeNull(); // closed by the server, not left to the idle timeout
      expect(h.answer.toLowerCase()).toContain("connection: close");
      expect(h.answer).toContain(`"message":"Too many requests in progress from your address: at most ${PER_ADDRESS} at a time."`);
    }
    // the descriptors the attack holds: its admitted share, not its 400 connections
    expect(openFiles()).toBeLessThanOrEqual(baseline + PER_ADDRESS + 8);

    // another client is served while the attack holds its share
    const t = performance.now();
    const health = await fetch(`http://127.0.0.1:${port}/health`, { headers: { "x-forwarded-for": "203.0.113.9" } });
    expect(health.status).toBe(200);
    const login = await fetch(`http://127.0.0.1:${port}/user/login`, {
      method: "POST",
      headers: { "x-forwarded-for": "203.0.113.9", origin: `http://127.0.0.1:${port}`, "content-type": "application/x-www-form-urlencoded" },
      body: "login=nobody&password=wrong-password",
      redirect: "manual",
    });
    expect(login.status).toBe(401);
    expect(performance.now() - t).toBeLessThan(2000);

    // the admitted slow bodies: 408 at the body deadline, then closed
    for (let i = 0; i < 100 && attack.some((h) => h.closedAt === null); i++) await Bun.sleep(100);
    const admitted = attack.filter((h) => statusOf(h) !== 429);
    expect(admitted.length).toBeLessThanOrEqual(PER_ADDRESS);
    for (const h of admitted) {
      expect(statusOf(h)).toBe(408);
      expect(h.answer.toLowerCase()).toContain("connection: close");
      expect(h.closedAt! - started).toBeLessThan((DEADLINE_SECONDS + 3) * 1000);
    }
    await Bun.sleep(200);
    expect(openFiles()).toBeLessThanOrEqual(baseline + 4);
  });

  test("many addresses: beyond the process's total, 503 and closed; the slots come back", async () => {
    const baseline = openFiles();
    const attack = await Promise.all(Array.from({ length: TOTAL + 60 }, (_, i) => partialSignIn(`198.51.${100 + (i >> 8)}.${i & 255}`)));
    await Bun.sleep(1000);
    const full = attack.filter((h) => statusOf(h) === 503);
    expect(full.length).toBeGreaterThanOrEqual(60);
    for (const h of full) expect(h.closedAt).not.toBeNull();
    expect(openFiles()).toBeLessThanOrEqual(baseline + TOTAL + 8);
    for (let i = 0; i < 100 && attack.some((h) => h.closedAt === null); i++) await Bun.sleep(100);
    expect(attack.every((h) => h.closedAt !== null)).toBe(true);
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
  });

  test("a client that goes away mid-body is no server error: nothing logged at error level, no 500", async () => {
    const gone = await Promise.all(Array.from({ length: 10 }, () => partialSignIn("192.0.2.44")));
    await Bun.sleep(200);
    for (const h of gone) h.socket.destroy();
    const json = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const s = connect(port, "127.0.0.1");
        await new Promise((r) => s.on("connect", r));
        s.write(
          `POST /api/v1/images/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer 1|x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"num":`,
        );
        return s;
      }),
    );
    await Bun.sleep(200);
    for (const s of json) s.destroy();
    await Bun.sleep(1500);
    const lines = output()
      .split("\n")
      .filter((l) => l.startsWith("{"));
    const records = lines.map((l) => JSON.parse(l) as { level: number; status?: number; msg?: string });
    expect(records.filter((r) => r.level >= 50 || r.status === 500).map((r) => r.msg)).toEqual([]);
  });
});
