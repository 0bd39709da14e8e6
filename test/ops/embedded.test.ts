import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openEmbedded } from "../../src/db/client.ts";
import { processStartTime, processState, startEmbeddedPostgres } from "../../src/db/embedded/index.ts";
import { seedDatabase } from "../../src/db/seed.ts";
import { spawnServer } from "../support/processes.ts";

/** The embedded PostgreSQL (src/db/embedded/): lifecycle, leftovers. */
setDefaultTimeout(60_000); // clusters are initialised here, seconds each on a busy machine
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir() {
  const d = mkdtempSync(join(tmpdir(), "imghost-embedded-"));
  dirs.push(d);
  return d;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const postmasterPid = (cluster: string) => Number(readFileSync(join(cluster, "postmaster.pid"), "utf8").split("\n")[0]);

async function gone(pid: number, ms = 15_000) {
  for (const deadline = Date.now() + ms; Date.now() < deadline; ) {
    if (!alive(pid)) return true;
    await Bun.sleep(50);
  }
  return false;
}

describe("embedded PostgreSQL", () => {
  test("one server per DATA_DIR; close() stops the server and releases the directory", async () => {
    const dataDir = tempDir();
    const first = await openEmbedded(dataDir);
    expect(first.driver).toBe("postgres");
    expect(first.embedded?.created).toBe(true);
    await first.migrate();
    await seedDatabase(first.db);
    const pid = postmasterPid(join(dataDir, "postgres"));
    expect(alive(pid)).toBe(true);

    await expect(openEmbedded(dataDir)).rejects.toThrow("is in use by process");

    // a real server: row locks and concurrent transactions on a pool of connections
    const rows = await first.db.execute(sql`select current_setting('server_version_num')::int as v, current_setting('shared_buffers') as sb`);
    expect((rows as unknown as { v: number }[])[0]!.v).toBeGreaterThanOrEqual(180000);
    await first.close();
    expect(await gone(pid)).toBe(true);
    expect(existsSync(join(dataDir, "server.lock"))).toBe(false);

    const again = await openEmbedded(dataDir);
    expect(again.embedded?.created).toBe(false);
    const groups = await again.db.execute(sql`select count(*)::int as n from groups`);
    expect((groups as unknown as { n: number }[])[0]!.n).toBe(2);
    await again.close();

    // the lock names its holder by pid and start time: a live holder is refused at once, a reused pid is not one
    const other = Bun.spawn(["sleep", "30"]);
    try {
      const start = processStartTime(other.pid);
      writeFileSync(join(dataDir, "server.lock"), `${other.pid} ${start ?? ""}\n`);
      const t0 = performance.now();
      await expect(openEmbedded(dataDir)).rejects.toThrow(`is in use by process ${other.pid}`);
      expect(performance.now() - t0).toBeLessThan(3000);
      if (start !== undefined) {
        writeFileSync(join(dataDir, "server.lock"), `${other.pid} ${Number(start) - 1}\n`); // the pid of a process long gone, reused
        const taken = await openEmbedded(dataDir);
        expect(readFileSync(join(dataDir, "server.lock"), "utf8").split(" ")[0]).toBe(String(process.pid));
        await taken.close();
      }
    } finally {
      other.kill();
    }
  });

  test.skipIf(process.platform !== "linux")("processState: a zombie is dead, a killed process is exiting or dead, a reused pid is dead", async () => {
    const child = Bun.spawn(["sleep", "30"]);
    const start = processStartTime(child.pid)!;
    expect(processState(child.pid)).toBe("running");
    expect(processState(child.pid, start)).toBe("running");
    expect(processState(child.pid, String(Number(start) + 1))).toBe("dead");
    // a zombie: its parent (sh, then exec'd into a sleep that never waits) does not reap it; kill(pid, 0) still succeeds on it
    const parent = Bun.spawn(["sh", "-c", "sleep 0.05 & exec sleep 30"]);
    try {
      let zombie = 0;
      for (const deadline = Date.now() + 5000; !zombie && Date.now() < deadline; await Bun.sleep(20)) {
        for (const name of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
          try {
            const stat = readFileSync(`/proc/${name}/stat`, "utf8");
            const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
            if (Number(ppid) === parent.pid && state === "Z") zombie = Number(name);
          } catch {}
        }
      }
      expect(zombie).toBeGreaterThan(0);
      expect(alive(zombie)).toBe(true);
      expect(processState(zombie)).toBe("dead");
    } finally {
      parent.kill();
    }
    child.kill("SIGKILL");
    expect(["exiting", "dead"]).toContain(processState(child.pid));
    await child.exited;
    expect(processState(child.pid)).toBe("dead");
  });

  test("a postmaster left running by a server that died is stopped at the next start", async () => {
    const dataDir = tempDir();
    // started by this process, as a killed server's would still run where there is no parent-death signal
    const leftover = await startEmbeddedPostgres(join(dataDir, "postgres"));
    writeFileSync(join(dataDir, "server.lock"), "999999999"); // the dead server's lock
    const database = await openEmbedded(dataDir);
    try {
      expect(await gone(leftover.pid, 1000)).toBe(true);
      expect(postmasterPid(join(dataDir, "postgres"))).not.toBe(leftover.pid);
      await database.db.execute(sql`select 1`);
    } finally {
      await database.close();
      await leftover.stop();
    }
  });

  test.skipIf(process.platform !== "linux")("SIGKILL of the server takes its PostgreSQL down with it (parent-death signal)", async () => {
    const dataDir = tempDir();
    const proc = spawnServer({
      env: { DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", ADMIN_TOKEN: "embedded-test-admin-token-0123456789ab" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const cluster = join(dataDir, "postgres");
    for (const deadline = Date.now() + 45_000; ; ) {
      if (existsSync(join(cluster, "postmaster.pid")) && readFileSync(join(cluster, "postmaster.pid"), "utf8").includes("ready")) break;
      if (proc.exitCode !== null) throw new Error(`server exited: ${await new Response(proc.stderr).text()}`);
      if (Date.now() > deadline) throw new Error("the embedded PostgreSQL did not start");
      await Bun.sleep(50);
    }
    const pid = postmasterPid(cluster);
    proc.kill("SIGKILL");
    await proc.exited;
    expect(await gone(pid)).toBe(true);
  });
});
