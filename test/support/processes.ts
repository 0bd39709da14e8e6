/** Helpers of the tests that run src/server.ts as a process of its own. */
import { join } from "node:path";

const root = join(import.meta.dir, "..", "..");

/** A TCP port free on `hostname` right now (taken and released at once). */
export async function freePort(hostname = "127.0.0.1"): Promise<number> {
  const probe = Bun.serve({ port: 0, hostname, fetch: () => new Response() });
  const port = probe.port!;
  await probe.stop(true);
  return port;
}

/**
 * Starts `bun run src/server.ts` with `env` over this process's environment (less DATABASE_URL, which a test names
 * itself when it wants one) and resolves once `${env.BASE_URL}/health` answers 200.
 */
export async function startServer(env: Record<string, string>, timeoutMs = 20_000) {
  const inherited = { ...process.env };
  delete inherited.DATABASE_URL;
  const proc = Bun.spawn(["bun", "run", "src/server.ts"], { cwd: root, env: { ...inherited, ...env }, stdout: "ignore", stderr: "pipe" });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`the server exited with ${proc.exitCode}: ${await new Response(proc.stderr).text()}`);
    const res = await fetch(`${env.BASE_URL}/health`).catch(() => null);
    if (res?.status === 200) return proc;
    await Bun.sleep(100);
  }
  proc.kill("SIGKILL");
  throw new Error(`the server did not become healthy within ${timeoutMs / 1000} s`);
}
