/**
 * Hostile containers with the event-loop probe (test/support/hostile-probe.ts) against a real server, and what a
 * small upload's round trip to the decode process would add against stripping and decoding it in-process.
 */
import { join } from "node:path";
import sharp from "sharp";
import { cpuSecondsOf, DecoderPool } from "../../../src/images/decoder.ts";
import { decodeAndThumbnail } from "../../../src/images/inspect.ts";
import { applyMetadataPolicy } from "../../../src/images/metadata/policy.ts";
import { formatHostileFigures, runHostileProbe } from "../../../test/support/hostile-probe.ts";
import { phonePhoto } from "../../../test/support/metadata-fixtures.ts";
import { render } from "../lib/report.ts";
import { startFacts, tempDir } from "../lib/run.ts";
import { startAppServer } from "../lib/server.ts";
import type { PartOptions } from "./index.ts";

/** The policy (strip_location) and the decode of a small upload, in-process and as one decode-process job, `rounds` times each. */
async function workerHop(rounds: number): Promise<string> {
  const screenshot = new Uint8Array(
    await sharp({ create: { width: 256, height: 256, channels: 3, background: "#468", noise: { type: "gaussian", mean: 128, sigma: 10 } } })
      .png()
      .toBuffer(),
  );
  const cases = [
    { image: "PNG screenshot 256×256", bytes: screenshot, mimetype: "image/png", size: { width: 256, height: 256 } },
    { image: "phone JPEG 320×240 (EXIF, XMP, GPS)", bytes: await phonePhoto("jpeg", 320, 240), mimetype: "image/jpeg", size: { width: 240, height: 320 } },
  ];
  const pool = new DecoderPool(1);
  const lines = ["Small uploads: the policy + decode in-process, against one job in the decode process (per upload)", ""];
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  for (const c of cases) {
    const job = { size: c.size, mimetype: c.mimetype, maxPixels: 1e8, policy: "strip_location" as const };
    const here = async () => decodeAndThumbnail(applyMetadataPolicy(c.bytes, c.mimetype, "strip_location").bytes, c.size, c.mimetype, 1e8);
    for (let i = 0; i < 20; i++) await Promise.all([here(), pool.prepare(c.bytes, job)]);
    const pid = pool.pids()[0]!;
    let [c0, t0] = [cpu(), performance.now()];
    for (let i = 0; i < rounds; i++) await here();
    const [inCpu, inWall] = [(cpu() - c0) / rounds, (performance.now() - t0) / rounds];
    const w0 = cpuSecondsOf(pid)!;
    [c0, t0] = [cpu(), performance.now()];
    for (let i = 0; i < rounds; i++) await pool.prepare(c.bytes, job);
    const [parent, wall, child] = [(cpu() - c0) / rounds, (performance.now() - t0) / rounds, ((cpuSecondsOf(pid)! - w0) * 1000) / rounds];
    lines.push(
      `${c.image.padEnd(38)} ${(c.bytes.byteLength / 1024).toFixed(0).padStart(4)} KB  in-process ${inCpu.toFixed(2)} ms CPU (${inWall.toFixed(2)} ms wall)  ` +
        `worker ${(parent + child).toFixed(2)} ms CPU = ${parent.toFixed(2)} server + ${child.toFixed(2)} decode process (${wall.toFixed(2)} ms wall)  added ${(parent + child - inCpu).toFixed(2)} ms CPU`,
    );
  }
  for (const pid of pool.pids()) process.kill(pid, "SIGKILL"); // the pool has no stop: its process would idle for minutes
  return lines.join("\n");
}

export async function runHostile(o: PartOptions): Promise<string> {
  const facts = await startFacts(o.command);
  const server = await startAppServer({ label: "hostile", dataDir: join(tempDir("hostile"), "data") });
  const figures = await runHostileProbe({ server, repeat: o.quick ? 2 : 5 });
  await server.stop();
  o.log(`hostile: probe max wait ${figures.probe.maxMs.toFixed(1)} ms; measuring the decode-process hop…`);
  const hop = await workerHop(o.quick ? 50 : 200);
  return render("hostile", {
    facts: facts.facts(),
    count: figures.probe.count,
    max: figures.probe.maxMs.toFixed(1),
    p99: figures.probe.p99Ms.toFixed(1),
    figures: `${formatHostileFigures(figures)}\n\n${hop}`,
  });
}
