/**
 * Hostile containers against the real server: every file of the hostile corpus (hostile-corpus.ts) uploaded, one at a
 * time, under each metadata policy, while a probe on another connection asks GET /health back to back and times each
 * answer. Figures: the probe's max and p99 wait, and per file and per class the outcome (stored or refused) and the CPU
 * it cost per MB — the server process's and its decode processes' (by /proc, reaped children included; the embedded
 * database's processes not). test/security/hostile-containers.test.ts asserts on them; `bun run bench --only hostile` reports them.
 */
import { join } from "node:path";
import { admin, multipartFile, seedUser, startServer, upload } from "./abuse.ts";
import { type HostileFile, hostileCorpus } from "./hostile-corpus.ts";
import { makeNoisyJpeg } from "./images.ts";
import { treeCpu } from "./proc.ts";

const MB = 1024 * 1024;

export interface FileFigure {
  name: string;
  kind: HostileFile["kind"];
  format: HostileFile["format"];
  policy: string;
  mb: number;
  status: number;
  message: string;
  cpuMs: number;
  cpuMsPerMb: number;
}

export interface HostileFigures {
  files: FileFigure[];
  probe: { count: number; maxMs: number; p99Ms: number };
  /** Per policy: CPU per MB of an ordinary photo of about 1 MB (noise, no metadata), sent the same way: what an honest upload costs on this machine. */
  ordinary: Record<string, number>;
  /** Per class (kind): the worst CPU per MB, files stored and refused. */
  classes: Record<string, { files: number; stored: number; refused: number; worstCpuMsPerMb: number }>;
}

/** CPU ms of the server and its decode processes (live or reaped). */
const serverCpuMs = (pid: number) => {
  const c = treeCpu(pid);
  return c.total - c.database;
};

/** Runs the probe against `server` (a server of this checkout started here when not given). */
export async function runHostileProbe(
  options: { server?: { port: number; pid: number; adminToken: string }; policies?: string[]; target?: number; repeat?: number } = {},
): Promise<HostileFigures> {
  const repeat = options.repeat ?? 5;
  const started = options.server ? null : await startServer(join(import.meta.dir, "..", ".."));
  const server = options.server ?? started!;
  try {
    const corpus = await hostileCorpus(options.target ?? MB);
    await admin(server, "PATCH", "/api/admin/groups/1", { max_file_size_kb: 8 * 1024 });
    const user = await seedUser(server, `hostile_${Date.now().toString(36)}`);
    // warm: a decode process exists and has answered once, so its start is not charged to the first file
    const warm = corpus.find((f) => f.kind === "many-units" && f.format === "gif")!;
    await upload(server.port, user.token, multipartFile(warm.bytes, warm.filename, warm.mimetype), "127.0.0.1");

    const waits: number[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const t0 = performance.now();
        const res = await fetch(`http://127.0.0.1:${server.port}/health`).catch(() => null);
        await res?.arrayBuffer();
        waits.push(performance.now() - t0);
        await Bun.sleep(5);
      }
    })();

    // /proc counts CPU in ticks of 10 ms: a body is sent once to warm (not counted), then `repeat` times, the mean taken
    const sent = async (body: ReturnType<typeof multipartFile>) => {
      await upload(server.port, user.token, body, "127.0.0.1");
      await Bun.sleep(20);
      const before = serverCpuMs(server.pid);
      let res!: Awaited<ReturnType<typeof upload>>;
      for (let i = 0; i < repeat; i++) res = await upload(server.port, user.token, body, "127.0.0.1");
      await Bun.sleep(20); // the decode process's tick counters lag a little behind its answer
      return { res, cpu: (serverCpuMs(server.pid) - before) / repeat };
    };
    const files: FileFigure[] = [];
    const ordinary: Record<string, number> = {};
    const photo = await makeNoisyJpeg(880, 640, 92);
    for (const policy of options.policies ?? ["strip_location", "keep"]) {
      await admin(server, "PATCH", "/api/admin/groups/1", { metadata: policy });
      ordinary[policy] = (await sent(multipartFile(photo, "ordinary.jpg", "image/jpeg"))).cpu / Math.max(photo.byteLength / MB, 1);
      for (const f of corpus) {
        const { res, cpu } = await sent(multipartFile(f.bytes, f.filename, f.mimetype));
        const mb = f.bytes.byteLength / MB;
        let message = "";
        try {
          message = JSON.parse(res.body).message ?? "";
        } catch {}
        files.push({ name: f.name, kind: f.kind, format: f.format, policy, mb, status: res.status, message, cpuMs: cpu, cpuMsPerMb: cpu / Math.max(mb, 1) });
      }
    }
    probing = false;
    await probe;
    const classes: HostileFigures["classes"] = {};
    for (const f of files) {
      const c = (classes[f.kind] ??= { files: 0, stored: 0, refused: 0, worstCpuMsPerMb: 0 });
      c.files++;
      if (f.status === 200) c.stored++;
      else c.refused++;
      c.worstCpuMsPerMb = Math.max(c.worstCpuMsPerMb, f.cpuMsPerMb);
    }
    const sorted = [...waits].sort((a, b) => a - b);
    const p99Ms = sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)]! : 0;
    return { files, probe: { count: waits.length, maxMs: Math.max(...waits), p99Ms }, ordinary, classes };
  } finally {
    await started?.stop("SIGKILL");
  }
}

/** The figures as text: one line per file, one per class, the probe. */
export function formatHostileFigures(figures: HostileFigures): string {
  const lines = ["Hostile containers (one upload at a time; CPU = server + decode processes, per MB of the file)", ""];
  for (const f of figures.files) {
    lines.push(
      `${f.policy.padEnd(15)} ${f.name.padEnd(58)} ${f.mb.toFixed(2)} MB  ${String(f.status)}  ${f.cpuMsPerMb.toFixed(0).padStart(4)} ms/MB  ${f.message.slice(0, 70)}`,
    );
  }
  lines.push("", "class         files stored refused  worst CPU/MB");
  for (const [kind, c] of Object.entries(figures.classes)) {
    lines.push(
      `${kind.padEnd(14)}${String(c.files).padStart(5)}${String(c.stored).padStart(7)}${String(c.refused).padStart(8)}  ${c.worstCpuMsPerMb.toFixed(0).padStart(8)} ms`,
    );
  }
  lines.push("", `probe GET /health: ${figures.probe.count} answers, max wait ${figures.probe.maxMs.toFixed(1)} ms, p99 ${figures.probe.p99Ms.toFixed(1)} ms`);
  lines.push(
    `an ordinary photo: ${Object.entries(figures.ordinary)
      .map(([p, ms]) => `${p} ${ms.toFixed(0)} ms/MB`)
      .join(", ")}`,
  );
  return lines.join("\n");
}
