/**
 * The memory to plan for, per topology: what the whole process tree of the server (the server, its decode processes,
 * the embedded PostgreSQL's processes) holds idle, at the peak of an upload burst of large photos, and once idle again.
 */
import { join } from "node:path";
import { type MemorySample, MemorySampler } from "../../../test/support/proc.ts";
import { photo } from "../lib/images.ts";
import { render } from "../lib/report.ts";
import { freshDatabase, markdownTable, mb, postgresInfo, startFacts, tempDir } from "../lib/run.ts";
import { createAccount, serverCommand, startAppServer, uploadOnce } from "../lib/server.ts";
import type { PartOptions } from "./index.ts";

export async function runMemory(o: PartOptions): Promise<string> {
  const cfg = o.quick ? { seconds: 6, clients: 4 } : { seconds: 20, clients: 4 };
  const facts = await startFacts(o.command);
  const dir = tempDir("memory");
  const files = [
    await photo(2000, 1500, { seed: 1, quality: 80 }),
    await photo(4000, 3000, { seed: 2, quality: 80 }),
    await photo(2000, 1500, { seed: 3, quality: 80 }),
    await photo(4000, 3000, { seed: 4, quality: 80 }),
  ];
  const topologies = (await postgresInfo()).version ? (["embedded", "PostgreSQL"] as const) : (["embedded"] as const);
  const rows: string[][] = [];
  const lines: string[] = [];
  for (const topology of topologies) {
    const databaseUrl = topology === "PostgreSQL" ? await freshDatabase("imghost_memory") : undefined;
    const server = await startAppServer({ label: `memory (${topology})`, dataDir: join(dir, `data-${topology}`), databaseUrl });
    const { token } = await createAccount(server, "mem");
    await Bun.sleep(3000);
    const sampler = new MemorySampler(100).watch(server.pid);
    const idle = sampler.between(server.pid).at(-1)!;
    let uploads = 0;
    let refused = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: cfg.clients }, async (_, c) => {
        for (let i = c; performance.now() < t0 + cfg.seconds * 1000; i++)
          await uploadOnce(server, token, files[i % files.length]!).then(
            () => uploads++,
            () => refused++,
          );
      }),
    );
    const burst = sampler.between(server.pid, t0);
    await Bun.sleep(5000);
    sampler.stop();
    const after = sampler.between(server.pid).at(-1)!;
    await server.stop();
    const peak = burst.reduce((a, b) => (b.pss.total > a.pss.total ? b : a));
    const row = (moment: string, s: MemorySample) => [
      `${topology}: ${moment}`,
      mb(s.pss.total),
      mb(s.pss.server),
      mb(s.pss.decoder),
      mb(s.pss.database),
      String(s.processes),
      mb(s.rss),
    ];
    rows.push(row("idle", idle), row("peak of the burst", peak), row("5 s after the burst", after));
    lines.push(
      `${topology}: ${uploads} uploads accepted, ${refused} refused in ${cfg.seconds} s at c=${cfg.clients}; the server's own VmRSS peaked at ${mb(Math.max(...burst.map((s) => s.rss)))} MB`,
    );
    o.log(`memory, ${topology}: idle ${mb(idle.pss.total)} MB, peak ${mb(peak.pss.total)} MB, after ${mb(after.pss.total)} MB (tree PSS)`);
  }
  return render("memory", {
    facts: facts.facts([["server", `\`${serverCommand()}\`, fresh DATA_DIR per topology`]]),
    table: markdownTable(["moment", "tree PSS MB", "server", "decode processes", "database", "processes", "server VmRSS MB"], rows),
    uploads: lines.map((l) => `- ${l}`).join("\n"),
    clients: cfg.clients,
    seconds: cfg.seconds,
    sizes: files.map((f) => `${Math.round(f.byteLength / 1024)} KB`).join(", "),
  });
}
